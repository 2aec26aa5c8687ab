/**
 * The worker that converts an ONNX file, so decoding and converting a large model never
 * holds the server's event loop. Receives `{ bytes, options, limits, stop }`, says at once
 * that it has the job (`{ started: true }`), then answers with the conversion or the fault's
 * status, message and details (the limit that refused it); a conversion stopped through `stop`
 * answers nothing (its caller has its own answer). The caller terminates the worker once it
 * has the answer; the worker does not close itself right after posting, which could race the
 * answer's delivery.
 */
/// <reference lib="deno.worker" />
import { DriverError } from "../../nnapi/errors.ts";
import { convertOnnx, type OnnxConversionOptions } from "./convert.ts";
import { ConversionStopped, type OnnxImportLimits } from "./limits.ts";
import type { WorkerAnswer } from "./convert_in_worker.ts";

/** What the worker is asked to convert. */
interface Job {
  bytes: Uint8Array;
  options: OnnxConversionOptions;
  limits: Partial<OnnxImportLimits>;
  /** Set to 1 by the caller to stop the conversion (shared memory). */
  stop: Int32Array;
}

/** Posts one answer to the caller. */
function answer(message: WorkerAnswer): void {
  self.postMessage(message);
}

self.onmessage = (event: MessageEvent<Job>) => {
  answer({ started: true });
  try {
    const { bytes, options, limits, stop } = event.data;
    const conversion = convertOnnx(bytes, options, { limits, stop });
    answer({ ok: true, conversion });
  } catch (error) {
    if (!(error instanceof ConversionStopped)) {
      const fault = error instanceof DriverError
        ? { status: error.status, message: error.message, details: error.details }
        : {
          status: "GENERAL_FAILURE" as const,
          message: `ONNX conversion failed: ${String(error)}`,
        };
      answer({ ok: false, fault });
    }
  }
};
