/**
 * ONNX conversions as the service runs them: a few at a time (past the limit a client's
 * import is refused with 429 and Retry-After, as a full execution queue refuses), each in a
 * worker of its own that is terminated when its time limit passes (504) or its client leaves,
 * under the converter's limits (the model limits for the graph's size and each tensor's
 * elements, a byte budget for what folding computes). Terminating a busy worker does not stop
 * it in Deno 2.9, so the converter also checks a stop flag between nodes (and MatMul rows).
 */
import type { OnnxConversion, OnnxConversionOptions } from "../converter/onnx/convert.ts";
import { convertOnnxInWorker } from "../converter/onnx/convert_in_worker.ts";
import { DEFAULT_MAX_FOLDED_BYTES, type OnnxImportLimits } from "../converter/onnx/limits.ts";
import { DriverError } from "../nnapi/errors.ts";

/** What the service allows ONNX imports. */
export interface ImportLimits {
  /** Conversions running at once (NNSERVE_MAX_CONCURRENT_IMPORTS); past it 429. */
  maxConcurrent: number;
  /** Seconds one conversion may run (NNSERVE_IMPORT_TIMEOUT); past it 504, and it stops. */
  timeoutSeconds: number;
  /** Bytes one conversion may fold into constants (NNSERVE_MAX_IMPORT_FOLDED_BYTES). */
  maxFoldedBytes: number;
}

/**
 * Defaults of {@link ImportLimits}: two conversions at once (each takes a core while the
 * executors need theirs), two minutes each (a model of a gigabyte converts in seconds), 1 GiB
 * folded.
 */
export const DEFAULT_IMPORT_LIMITS: ImportLimits = {
  maxConcurrent: 2,
  timeoutSeconds: 120,
  maxFoldedBytes: DEFAULT_MAX_FOLDED_BYTES,
};

/** When a client's import is refused for running conversions, when to try again. */
const RETRY_AFTER_SECONDS = 1;

/** How one import request is bounded. */
export interface ImportRequest {
  /** Aborted when the client leaves: the conversion stops (its worker is terminated). */
  signal?: AbortSignal;
  /**
   * With every conversion slot taken: `refuse` at once with 429 (a client's request), or
   * `wait` for a slot (the service's own imports, the model repository's; the default).
   */
  whenBusy?: "refuse" | "wait";
}

/** The ONNX conversions of one service. */
export class OnnxImports {
  readonly #limits: ImportLimits;
  readonly #conversionLimits: OnnxImportLimits;
  #running = 0;
  /** Imports waiting for a slot, first come first served. */
  readonly #waiting: (() => void)[] = [];
  /** Aborted when the service closes: every conversion stops. */
  readonly #closing = new AbortController();

  /** `graph`: the model limits a converted graph must fit (nodes, initializers, elements). */
  constructor(
    limits: ImportLimits,
    graph: Omit<OnnxImportLimits, "maxFoldedBytes">,
  ) {
    this.#limits = limits;
    this.#conversionLimits = { ...graph, maxFoldedBytes: limits.maxFoldedBytes };
  }

  /** Converts `bytes` in a worker, within the limits; refusals are DriverErrors. */
  async convert(
    bytes: Uint8Array,
    options: OnnxConversionOptions,
    request: ImportRequest = {},
  ): Promise<OnnxConversion> {
    const { signal } = request;
    await this.#enter(request);
    const stop = new AbortController();
    const { timeoutSeconds } = this.#limits;
    const timeLimit = {
      ms: timeoutSeconds * 1000,
      error: () =>
        new DriverError(
          "MISSED_DEADLINE_PERSISTENT",
          `the ONNX conversion ran past this service's time limit of ${timeoutSeconds} s ` +
            "(NNSERVE_IMPORT_TIMEOUT) and was stopped",
          { limit: "import_time" },
        ),
    };
    const leave = () => stop.abort(clientLeft());
    const close = () => stop.abort(shuttingDown());
    signal?.addEventListener("abort", leave, { once: true });
    this.#closing.signal.addEventListener("abort", close, { once: true });
    try {
      if (signal?.aborted) throw clientLeft();
      if (this.#closing.signal.aborted) throw shuttingDown();
      return await convertOnnxInWorker(bytes, options, {
        signal: stop.signal,
        limits: this.#conversionLimits,
        timeLimit,
      });
    } finally {
      signal?.removeEventListener("abort", leave);
      this.#closing.signal.removeEventListener("abort", close);
      this.#leave();
    }
  }

  /** Stops every conversion (their workers end) and refuses the imports waiting for a slot. */
  close(): void {
    this.#closing.abort();
  }

  /** Takes a slot: at once, after waiting, or not at all (429). */
  async #enter({ signal, whenBusy = "wait" }: ImportRequest): Promise<void> {
    if (signal?.aborted) throw clientLeft();
    if (this.#running < this.#limits.maxConcurrent) {
      this.#running++;
      return;
    }
    if (whenBusy === "refuse") {
      throw new DriverError(
        "RESOURCE_EXHAUSTED_TRANSIENT",
        `all ${this.#limits.maxConcurrent} ONNX conversion slots of this service are taken ` +
          `(NNSERVE_MAX_CONCURRENT_IMPORTS=${this.#limits.maxConcurrent}); retry later`,
        { retryAfterSeconds: RETRY_AFTER_SECONDS, limit: "imports" },
      );
    }
    // A slot handed over by #leave keeps #running as it is.
    await new Promise<void>((resolve, reject) => {
      const granted = () => {
        signal?.removeEventListener("abort", gone);
        this.#closing.signal.removeEventListener("abort", closed);
        resolve();
      };
      const quit = (why: DriverError) => {
        this.#waiting.splice(this.#waiting.indexOf(granted), 1);
        signal?.removeEventListener("abort", gone);
        this.#closing.signal.removeEventListener("abort", closed);
        reject(why);
      };
      const gone = () => quit(clientLeft());
      const closed = () => quit(shuttingDown());
      this.#waiting.push(granted);
      signal?.addEventListener("abort", gone, { once: true });
      this.#closing.signal.addEventListener("abort", closed, { once: true });
    });
  }

  /** Gives the slot to the first waiting import, or frees it. */
  #leave(): void {
    const next = this.#waiting.shift();
    if (next) next();
    else this.#running--;
  }
}

/** Why a conversion stopped when the service closed. */
function shuttingDown(): DriverError {
  return new DriverError(
    "DEVICE_UNAVAILABLE",
    "the service is shutting down; the ONNX conversion was stopped",
  );
}

/** Why a conversion stopped when its client went away (nobody is left to read it). */
function clientLeft(): DriverError {
  return new DriverError(
    "INVALID_ARGUMENT",
    "the client closed the connection mid-request; the ONNX conversion was stopped",
  );
}
