/** Runs {@link convertOnnx} in a worker of its own (one per import: imports are rare). */
import { DriverError, type DriverErrorDetails, type ErrorStatus } from "../../nnapi/errors.ts";
import type { OnnxConversion, OnnxConversionOptions } from "./convert.ts";
import type { OnnxImportLimits } from "./limits.ts";
import { afterRunningTime } from "./running_time.ts";

/** What the worker posts: that it has the job, then the conversion or its fault. */
export type WorkerAnswer =
  | { started: true }
  | { ok: true; conversion: OnnxConversion }
  | { ok: false; fault: { status: ErrorStatus; message: string; details?: DriverErrorDetails } };

/**
 * How long a worker may take to start and say it has the job: loading the converter's modules
 * takes well under a second, tens of seconds on a machine with every core taken. A worker that
 * has not said so by then is replaced once, so a worker lost in start-up costs this much, not
 * the whole conversion time limit. Counted in running time ({@link afterRunningTime}), as the
 * time limit is.
 */
export const DEFAULT_START_LIMIT_MS = 20_000;

/** How many workers one conversion starts at most (the first and its replacement). */
const START_ATTEMPTS = 2;

/** How a conversion in a worker is bounded. */
export interface WorkerConversionControl {
  /** The conversion's limits (graph size, tensor elements, fold budget). */
  limits?: Partial<OnnxImportLimits>;
  /**
   * Stops the conversion: the promise rejects at once with the signal's reason, and the
   * worker stops at the conversion's next check (between nodes, within long folds) and is
   * terminated. Terminating alone does not stop a worker busy in JavaScript (Deno 2.9: it
   * goes on using a core), so the conversion is told through shared memory too.
   */
  signal?: AbortSignal;
  /** Milliseconds a worker may take to say it has the job ({@link DEFAULT_START_LIMIT_MS}). */
  startLimitMs?: number;
  /**
   * How long the conversion may take, every worker's try included, in running time
   * ({@link afterRunningTime}): past it the promise rejects with `error()` and the worker
   * stops, as for `signal`.
   */
  timeLimit?: { ms: number; error: () => Error };
}

/** Converts an ONNX file off the calling thread; faults arrive as the same DriverErrors. */
export async function convertOnnxInWorker(
  bytes: Uint8Array,
  options: OnnxConversionOptions = {},
  control: WorkerConversionControl = {},
): Promise<OnnxConversion> {
  const { timeLimit } = control;
  const expired = new AbortController();
  const cancelTimeLimit = timeLimit
    ? afterRunningTime(timeLimit.ms, () => expired.abort(timeLimit.error()))
    : undefined;
  const signal = control.signal
    ? AbortSignal.any([control.signal, expired.signal])
    : expired.signal;
  try {
    for (let attempt = 1;; attempt++) {
      const answer = await convertInOneWorker(bytes, options, { ...control, signal });
      if (answer !== "not started") return answer;
      const seconds = (control.startLimitMs ?? DEFAULT_START_LIMIT_MS) / 1000;
      if (attempt === START_ATTEMPTS) {
        throw new DriverError(
          "GENERAL_FAILURE",
          `ONNX conversion failed: ${START_ATTEMPTS} conversion workers in turn did not start ` +
            `within ${seconds} s`,
        );
      }
      console.error(
        `nnserve: an ONNX conversion worker did not start within ${seconds} s; starting another`,
      );
    }
  } finally {
    cancelTimeLimit?.();
  }
}

/** One worker's try: the conversion, or "not started" when it did not take the job in time. */
function convertInOneWorker(
  bytes: Uint8Array,
  options: OnnxConversionOptions,
  control: WorkerConversionControl,
): Promise<OnnxConversion | "not started"> {
  const { signal, limits = {}, startLimitMs = DEFAULT_START_LIMIT_MS } = control;
  if (signal?.aborted) return Promise.reject(signal.reason);
  const worker = new Worker(new URL("./worker.ts", import.meta.url), { type: "module" });
  const stopFlag = new Int32Array(new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT));
  let stop: (() => void) | undefined;
  let cancelStartLimit: (() => void) | undefined;
  return new Promise<OnnxConversion | "not started">((resolve, reject) => {
    stop = () => {
      Atomics.store(stopFlag, 0, 1);
      worker.terminate();
      reject(signal!.reason);
    };
    signal?.addEventListener("abort", stop, { once: true });
    cancelStartLimit = afterRunningTime(startLimitMs, () => {
      Atomics.store(stopFlag, 0, 1);
      resolve("not started");
    });
    worker.onmessage = (event: MessageEvent<WorkerAnswer>) => {
      const answer = event.data;
      if ("started" in answer) cancelStartLimit?.();
      else if (answer.ok) resolve(answer.conversion);
      else reject(new DriverError(answer.fault.status, answer.fault.message, answer.fault.details));
    };
    worker.onerror = (event) => {
      event.preventDefault();
      reject(new DriverError("GENERAL_FAILURE", `ONNX conversion failed: ${event.message}`));
    };
    worker.postMessage({ bytes, options, limits, stop: stopFlag });
  }).finally(() => {
    cancelStartLimit?.();
    if (stop) signal?.removeEventListener("abort", stop);
    worker.terminate();
  });
}
