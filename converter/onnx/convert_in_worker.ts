/** Runs {@link convertOnnx} in a worker of its own (one per import: imports are rare). */
import { DriverError, type ErrorStatus } from "../../nnapi/errors.ts";
import type { OnnxConversion, OnnxConversionOptions } from "./convert.ts";

type Answer =
  | { ok: true; conversion: OnnxConversion }
  | { ok: false; fault: { status: ErrorStatus; message: string } };

/** Converts an ONNX file off the calling thread; faults arrive as the same DriverErrors. */
export function convertOnnxInWorker(
  bytes: Uint8Array,
  options: OnnxConversionOptions = {},
): Promise<OnnxConversion> {
  const worker = new Worker(new URL("./worker.ts", import.meta.url), { type: "module" });
  return new Promise<OnnxConversion>((resolve, reject) => {
    worker.onmessage = (event: MessageEvent<Answer>) => {
      const answer = event.data;
      if (answer.ok) resolve(answer.conversion);
      else reject(new DriverError(answer.fault.status, answer.fault.message));
    };
    worker.onerror = (event) => {
      event.preventDefault();
      reject(new DriverError("GENERAL_FAILURE", `ONNX conversion failed: ${event.message}`));
    };
    worker.postMessage({ bytes, options });
  }).finally(() => worker.terminate());
}
