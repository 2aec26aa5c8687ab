/**
 * Service counters, gauges and histograms in Prometheus text format (`GET /metrics`).
 * Components increment named counters and observe histograms; gauges are read when the
 * metrics are rendered. Counters whose label values are known up front are declared with
 * every series at zero, so a rate over them works before the first event.
 */

/** Label names and values of one series. */
export type Labels = Record<string, string>;

/** Characters a label value cannot carry in the text format (replaced by "_"). */
const UNSAFE = /["\\\n]/;
const UNSAFE_ALL = /["\\\n]/g;

/**
 * A series' name with its labels (`name{k="v",...}`), built by concatenation: it is made on
 * every count and observation, several per request.
 */
function key(name: string, labels: Labels): string {
  let text = name;
  let separator = "{";
  for (const k in labels) {
    const v = labels[k];
    text += `${separator}${k}="${UNSAFE.test(v) ? v.replace(UNSAFE_ALL, "_") : v}"`;
    separator = ",";
  }
  return separator === "{" ? name : `${text}}`;
}

/** Default histogram buckets for durations in seconds (1 ms to 30 s). */
export const DURATION_BUCKETS = [
  0.001,
  0.0025,
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  5,
  10,
  30,
];

interface Series {
  labels: Labels;
  /** The histogram's bucket bounds. */
  bounds: readonly number[];
  counts: number[];
  sum: number;
  count: number;
  /** When it was last observed (epoch ms; 0 when never), kept when `stamped`. */
  lastMs: number;
  /** Whether observations note their time (a clock read each: only where it is read). */
  stamped: boolean;
}

/** Counts `value` in its bucket of a series. */
function record(series: Series, value: number): void {
  const bounds = series.bounds;
  for (let at = 0; at < bounds.length; at++) {
    if (value <= bounds[at]) {
      series.counts[at]++;
      break;
    }
  }
  series.sum += value;
  series.count++;
  if (series.stamped) series.lastMs = Date.now();
}

/**
 * Series by their labels' names and values, one map level per name and per value: found
 * without building a key string per observation (several per request).
 */
class SeriesIndex {
  #root = new Map<string, unknown>();

  get(labels: Labels): Series | undefined {
    let node: unknown = this.#root;
    for (const k in labels) {
      node = (node as Map<string, unknown>).get(k);
      if (node === undefined) return undefined;
      node = (node as Map<string, unknown>).get(labels[k]);
      if (node === undefined) return undefined;
    }
    return (node as Map<string, unknown>).get("") as Series | undefined;
  }

  set(labels: Labels, series: Series): void {
    let node = this.#root;
    for (const k in labels) node = this.#child(this.#child(node, k), labels[k]);
    node.set("", series);
  }

  #child(node: Map<string, unknown>, key: string): Map<string, unknown> {
    let child = node.get(key) as Map<string, unknown> | undefined;
    if (!child) node.set(key, child = new Map());
    return child;
  }
}

interface Histogram {
  help: string;
  buckets: readonly number[];
  /** Per label set (by its key): its labels, cumulative-to-be bucket counts, sum and count. */
  series: Map<string, Series>;
  index: SeriesIndex;
}

/** A registry of counters, gauges and histograms. */
export class Metrics {
  readonly #histograms = new Map<string, Histogram>();
  readonly #counters = new Map<
    string,
    { name: string; help: string; values: Map<string, number> }
  >();
  readonly #gauges: {
    name: string;
    help: string;
    read: () => Promise<[Labels, number][]> | [Labels, number][];
  }[] = [];

  /** Adds `by` to a counter (created on first use). */
  count(name: string, help: string, labels: Labels = {}, by = 1): void {
    const values = this.#counterValues(name, help);
    const k = key(name, labels);
    values.set(k, (values.get(k) ?? 0) + by);
  }

  /**
   * A counter series found once, to add to many times (`count` builds the series' key on
   * every call; an execution counts once).
   */
  counter(name: string, help: string, labels: Labels = {}): (by?: number) => void {
    const values = this.#counterValues(name, help);
    const k = key(name, labels);
    return (by = 1) => values.set(k, (values.get(k) ?? 0) + by);
  }

  #counterValues(name: string, help: string): Map<string, number> {
    let counter = this.#counters.get(name);
    if (!counter) {
      counter = { name, help, values: new Map() };
      this.#counters.set(name, counter);
    }
    return counter.values;
  }

  /** Declares a counter with a series at zero for each of the label sets. */
  declare(name: string, help: string, labelSets: Labels[]): void {
    for (const labels of labelSets) this.count(name, help, labels, 0);
  }

  /** Registers a gauge read at render time. */
  gauge(name: string, help: string, read: () => number, labels: Labels = {}): void {
    this.#gauges.push({ name, help, read: () => [[labels, read()]] });
  }

  /** Registers a gauge of several series (e.g. one per client) read at render time. */
  gaugeSeries(
    name: string,
    help: string,
    read: () => Promise<[Labels, number][]> | [Labels, number][],
  ): void {
    this.#gauges.push({ name, help, read });
  }

  /**
   * Drops every histogram series whose labels include all of `match` (a deleted compilation's,
   * a removed model version's).
   */
  forget(match: Labels): void {
    const pairs = Object.entries(match);
    for (const histogram of this.#histograms.values()) {
      let forgot = false;
      for (const [k, series] of histogram.series) {
        if (!pairs.every(([label, value]) => series.labels[label] === value)) continue;
        histogram.series.delete(k);
        forgot = true;
      }
      if (!forgot) continue;
      histogram.index = new SeriesIndex();
      for (const series of histogram.series.values()) histogram.index.set(series.labels, series);
    }
  }

  /** Records `value` in a histogram series (the histogram created on first use). */
  observe(
    name: string,
    help: string,
    labels: Labels,
    value: number,
    buckets: readonly number[] = DURATION_BUCKETS,
  ): void {
    record(this.#series(name, help, labels, buckets), value);
  }

  /**
   * A histogram series found once (at its first value), to record into many times (an
   * execution's series, per compilation and client). A series `forget` dropped since is no
   * longer shown. A `stamped` series notes when it was last observed (`totals`' `lastMs`).
   */
  series(
    name: string,
    help: string,
    labels: Labels,
    buckets: readonly number[] = DURATION_BUCKETS,
    stamped = false,
  ): (value: number) => void {
    let series: Series | undefined;
    return (value) => record(series ??= this.#series(name, help, labels, buckets, stamped), value);
  }

  #series(
    name: string,
    help: string,
    labels: Labels,
    buckets: readonly number[],
    stamped = false,
  ): Series {
    let histogram = this.#histograms.get(name);
    if (!histogram) {
      histogram = { help, buckets, series: new Map(), index: new SeriesIndex() };
      this.#histograms.set(name, histogram);
    }
    let series = histogram.index.get(labels);
    if (!series) {
      const k = key(name, labels);
      series = histogram.series.get(k); // the same labels in another order
      if (!series) {
        series = {
          labels,
          bounds: histogram.buckets,
          counts: histogram.buckets.map(() => 0),
          sum: 0,
          count: 0,
          lastMs: 0,
          stamped,
        };
        histogram.series.set(k, series);
      }
      histogram.index.set(labels, series);
    }
    if (stamped) series.stamped = true;
    return series;
  }

  /**
   * Count and sum of a histogram's series whose labels include `match`, and when the last
   * of them was observed (epoch ms; 0 when never, or when none is `stamped`).
   */
  totals(name: string, match: Labels): { count: number; sum: number; lastMs: number } {
    const totals = { count: 0, sum: 0, lastMs: 0 };
    for (const series of this.#histograms.get(name)?.series.values() ?? []) {
      if (Object.entries(match).some(([k, v]) => series.labels[k] !== v)) continue;
      totals.count += series.count;
      totals.sum += series.sum;
      totals.lastMs = Math.max(totals.lastMs, series.lastMs);
    }
    return totals;
  }

  /** The current value of a counter series (0 if never counted). */
  value(name: string, labels: Labels = {}): number {
    return this.#counters.get(name)?.values.get(key(name, labels)) ?? 0;
  }

  /** Prometheus text exposition format. */
  async render(): Promise<string> {
    const lines: string[] = [];
    for (const c of this.#counters.values()) {
      lines.push(`# HELP ${c.name} ${c.help}`, `# TYPE ${c.name} counter`);
      for (const [k, v] of c.values) lines.push(`${k} ${v}`);
    }
    for (const g of this.#gauges) {
      lines.push(`# HELP ${g.name} ${g.help}`, `# TYPE ${g.name} gauge`);
      for (const [labels, value] of await g.read()) lines.push(`${key(g.name, labels)} ${value}`);
    }
    for (const [name, h] of this.#histograms) {
      lines.push(`# HELP ${name} ${h.help}`, `# TYPE ${name} histogram`);
      for (const series of h.series.values()) {
        let cumulative = 0;
        h.buckets.forEach((le, i) => {
          cumulative += series.counts[i];
          lines.push(
            `${key(`${name}_bucket`, { ...series.labels, le: String(le) })} ${cumulative}`,
          );
        });
        lines.push(`${key(`${name}_bucket`, { ...series.labels, le: "+Inf" })} ${series.count}`);
        lines.push(`${key(`${name}_sum`, series.labels)} ${series.sum}`);
        lines.push(`${key(`${name}_count`, series.labels)} ${series.count}`);
      }
    }
    return lines.join("\n") + "\n";
  }
}
