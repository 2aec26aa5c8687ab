/**
 * A child process's output, read to its end in the background (a full pipe would block the
 * child) with its last lines kept: what a test waits for ("listening on", a balancer's
 * "is DOWN") and shows when it fails.
 */

/** One line of a child's output and when it arrived (`performance.now()`). */
export interface OutputLine {
  at: number;
  text: string;
}

/**
 * A child's output stream, read to its end in the background. Lines are numbered from 0 as
 * they arrive; the last `keep` are kept, with their arrival times (a balancer's log says
 * when it saw a server go down), for `waitFor` and failure messages.
 */
export class OutputTail {
  /** Settles once the stream has ended (the child closed it or exited). */
  readonly done: Promise<void>;
  readonly #lines: OutputLine[] = [];
  readonly #keep: number;
  /** Lines dropped from the front (past `keep`). */
  #dropped = 0;
  #ended = false;
  readonly #wake = new Set<() => void>();

  constructor(stream: ReadableStream<Uint8Array>, keep = 2000) {
    this.#keep = keep;
    this.done = this.#read(stream);
  }

  async #read(stream: ReadableStream<Uint8Array>): Promise<void> {
    let partial = "";
    try {
      for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
        const parts = (partial + chunk).split("\n");
        partial = parts.pop()!;
        for (const text of parts) this.#push(text);
      }
    } catch {
      // The pipe broke with the child: what was read is what there is.
    }
    if (partial) this.#push(partial);
    this.#ended = true;
    this.#notify();
  }

  #push(text: string): void {
    this.#lines.push({ at: performance.now(), text });
    if (this.#lines.length > this.#keep) {
      this.#lines.shift();
      this.#dropped++;
    }
    this.#notify();
  }

  #notify(): void {
    for (const wake of this.#wake) wake();
  }

  /** Lines seen so far: a mark to pass as `waitFor`'s `from`. */
  get count(): number {
    return this.#dropped + this.#lines.length;
  }

  /** The last `n` lines kept, for failure messages. */
  tail(n = 40): string {
    return this.#lines.slice(-n).map((l) => l.text).join("\n");
  }

  /**
   * The first line numbered `from` or later that matches; throws past `timeoutMs`, or when
   * the stream ends without one, with the tail.
   */
  async waitFor(
    pattern: RegExp,
    options: { from?: number; timeoutMs: number },
  ): Promise<OutputLine> {
    const deadline = performance.now() + options.timeoutMs;
    let next = options.from ?? 0;
    for (;;) {
      for (; next < this.count; next++) {
        const line = this.#lines[next - this.#dropped];
        if (line && pattern.test(line.text)) return line;
      }
      if (this.#ended) {
        throw new Error(`the output ended without ${pattern}; its last lines:\n${this.tail()}`);
      }
      const left = deadline - performance.now();
      if (left <= 0) {
        throw new Error(
          `no ${pattern} within ${options.timeoutMs} ms; last lines:\n${this.tail()}`,
        );
      }
      let wake!: () => void;
      const woken = new Promise<void>((resolve) => wake = resolve);
      this.#wake.add(wake);
      const timer = setTimeout(wake, left);
      await woken;
      clearTimeout(timer);
      this.#wake.delete(wake);
    }
  }
}
