/**
 * The worker that converts an ONNX file, so decoding and converting a large model never
 * holds the server's event loop. Receives `{ bytes, options }`, answers with the conversion
 * or the fault's status and message.
 */
/// <reference lib="deno.worker" />
import { DriverError } from "../../nnapi/errors.ts";
import { convertOnnx, type OnnxConversionOptions } from "./convert.ts";

self.onmessage = (event: MessageEvent<{ bytes: Uint8Array; options: OnnxConversionOptions }>) => {
  try {
    const conversion = convertOnnx(event.data.bytes, event.data.options);
    self.postMessage({ ok: true, conversion });
  } catch (error) {
    const fault = error instanceof DriverError
      ? { status: error.status, message: error.message }
      : { status: "GENERAL_FAILURE", message: `ONNX conversion failed: ${String(error)}` };
    self.postMessage({ ok: false, fault });
  }
  self.close();
};
