/** Runs {@link convertOnnx} in a worker of its own (one per import: imports are rare). */
import { DriverError, type DriverErrorDetails, type ErrorStatus } from "../../nnapi/errors.ts";
import type { OnnxConversion, OnnxConversionOptions } from "./convert.ts";
import type { OnnxImportLimits } from "./limits.ts";

type Answer =
  | { ok: true; conversion: OnnxConversion }
  | { ok: false; fault: { status: ErrorStatus; message: string; details?: DriverErrorDetails } };

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
}

/** Converts an ONNX file off the calling thread; faults arrive as the same DriverErrors. */
export function convertOnnxInWorker(
  bytes: Uint8Array,
  options: OnnxConversionOptions = {},
  control: WorkerConversionControl = {},
): Promise<OnnxConversion> {
  const { signal, limits = {} } = control;
  if (signal?.aborted) return Promise.reject(signal.reason);
  const worker = new Worker(new URL("./worker.ts", import.meta.url), { type: "module" });
  const stopFlag = new Int32Array(new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT));
  let stop: (() => void) | undefined;
  return new Promise<OnnxConversion>((resolve, reject) => {
    stop = () => {
      Atomics.store(stopFlag, 0, 1);
      worker.terminate();
      reject(signal!.reason);
    };
    signal?.addEventListener("abort", stop, { once: true });
    worker.onmessage = (event: MessageEvent<Answer>) => {
      const answer = event.data;
      if (answer.ok) resolve(answer.conversion);
      else reject(new DriverError(answer.fault.status, answer.fault.message, answer.fault.details));
    };
    worker.onerror = (event) => {
      event.preventDefault();
      reject(new DriverError("GENERAL_FAILURE", `ONNX conversion failed: ${event.message}`));
    };
    worker.postMessage({ bytes, options, limits, stop: stopFlag });
  }).finally(() => {
    if (stop) signal?.removeEventListener("abort", stop);
    worker.terminate();
  });
}
