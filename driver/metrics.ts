/**
 * Service counters and gauges in Prometheus text format (`GET /metrics`). Components
 * increment named counters; gauges are read when the metrics are rendered.
 */

type Labels = Record<string, string>;

function key(name: string, labels: Labels): string {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${v.replace(/["\\\n]/g, "_")}"`);
  return parts.length > 0 ? `${name}{${parts.join(",")}}` : name;
}

/** A registry of counters and gauges. */
export class Metrics {
  readonly #counters = new Map<
    string,
    { name: string; help: string; values: Map<string, number> }
  >();
  readonly #gauges: { name: string; help: string; read: () => number }[] = [];

  /** Adds `by` to a counter (created on first use). */
  count(name: string, help: string, labels: Labels = {}, by = 1): void {
    let counter = this.#counters.get(name);
    if (!counter) {
      counter = { name, help, values: new Map() };
      this.#counters.set(name, counter);
    }
    const k = key(name, labels);
    counter.values.set(k, (counter.values.get(k) ?? 0) + by);
  }

  /** Registers a gauge read at render time. */
  gauge(name: string, help: string, read: () => number): void {
    this.#gauges.push({ name, help, read });
  }

  /** The current value of a counter series (0 if never counted). */
  value(name: string, labels: Labels = {}): number {
    return this.#counters.get(name)?.values.get(key(name, labels)) ?? 0;
  }

  /** Prometheus text exposition format. */
  render(): string {
    const lines: string[] = [];
    for (const c of this.#counters.values()) {
      lines.push(`# HELP ${c.name} ${c.help}`, `# TYPE ${c.name} counter`);
      for (const [k, v] of c.values) lines.push(`${k} ${v}`);
    }
    for (const g of this.#gauges) {
      lines.push(`# HELP ${g.name} ${g.help}`, `# TYPE ${g.name} gauge`, `${g.name} ${g.read()}`);
    }
    return lines.join("\n") + "\n";
  }
}
