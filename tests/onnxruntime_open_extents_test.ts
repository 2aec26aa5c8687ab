/**
 * The onnxruntime device and extents that come at execution (a model imported as
 * published): a unit is prepared per signature of input shapes, and where its export is the
 * same for two signatures (its model names the open extents symbolically, and nothing the
 * rules write depends on them) the second takes the first one's sessions instead of opening
 * its own. Where the export does depend on them (SAME padding at stride 2 at an odd and an
 * even width), each signature gets its own. Either way the results are those of a unit
 * prepared for that signature alone, with every extent fixed.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { onnxruntimeRuntime, sharedSessionCount } from "../driver/devices/onnxruntime/device.ts";
import {
  float32Operand,
  int32Operand,
  type RunnableSubgraph,
  type SubgraphOperand,
  type SubgraphStep,
} from "../driver/devices/device.ts";
import type { TensorData } from "../nnapi/tensor.ts";
import { seededFloats } from "../kernels/seeded_random.ts";
import { importOnnx, withTestServer } from "./server_fixture.ts";
import { convertOnnx } from "../converter/onnx/convert.ts";
import { prepareModel } from "../driver/compilation/prepare.ts";
import { discoverDevices } from "../driver/devices/device_list.ts";
import { Executable } from "../driver/execution/executable.ts";
import { buildModel } from "../driver/model/model.ts";
import { representativeInputs, shapedGraph } from "../driver/model/shape_inference.ts";
import { ONNXRUNTIME_FOR_EVERY_STEP } from "./onnxruntime_fixture.ts";
import { onnxBytes } from "../tools/onnx_graphs.ts";
import { weights } from "./onnx/compare.ts";

const CHANNELS = 4;
const FILTERS = 8;
// The constants of every signature, as an executable holds them (exports of a constant are
// named by the constant: one of another signature with the same values is another constant).
const FILTER = float32Operand(
  [FILTERS, 3, 3, CHANNELS],
  seededFloats(FILTERS * 9 * CHANNELS, 1, 1),
);
const BIAS = float32Operand([FILTERS], seededFloats(FILTERS, 2, 1));
const SLICE_BEGIN = int32Vector([0, 0, 1, 0]);
const SLICE_SIZE = int32Vector([-1, -1, -1, -1]);
const MEAN_AXES = int32Vector([1, 2]);
const SCALARS = [0, 1, 2].map(int32Operand);

function int32Vector(values: number[]): SubgraphOperand {
  return {
    type: "TENSOR_INT32",
    shape: [values.length],
    scale: 0,
    zeroPoint: 0,
    value: Int32Array.from(values),
  };
}

/**
 * A float32 NHWC tensor operand at `shape`; with `open`, the plan declares its height and
 * width known only at execution (0).
 */
function nhwc(shape: number[], open: boolean): SubgraphOperand {
  const declaredShape = shape.map((d, k) => k === 1 || k === 2 ? 0 : d);
  return { ...float32Operand(shape), ...(open ? { declaredShape } : {}) };
}

/**
 * CONV_2D (SAME, 3x3, ReLU) -> SLICE (from column 1 to the end) -> MEAN over height and
 * width, on an NHWC image of `height` x `width`; `open` declares both extents open.
 */
function convSliceMean(height: number, width: number, open: boolean, filter = FILTER) {
  const operands: SubgraphOperand[] = [
    nhwc([1, height, width, CHANNELS], open),
    filter,
    BIAS,
    SCALARS[1], // SAME
    SCALARS[1], // stride
    SCALARS[1], // ReLU
    nhwc([1, height, width, FILTERS], open),
    SLICE_BEGIN,
    SLICE_SIZE,
    nhwc([1, height, width - 1, FILTERS], open),
    MEAN_AXES,
    SCALARS[0],
    { ...float32Operand([1, FILTERS]), ...(open ? { declaredShape: [1, FILTERS] } : {}) },
  ];
  const steps: SubgraphStep[] = [
    { type: "CONV_2D", inputs: [0, 1, 2, 3, 4, 4, 5], outputs: [6] },
    { type: "SLICE", inputs: [6, 7, 8], outputs: [9] },
    { type: "MEAN", inputs: [9, 10, 11], outputs: [12] },
  ];
  return { operands, steps, output: 12, input: height * width * CHANNELS };
}

/** CONV_2D (SAME, 3x3, stride 2) on an NHWC image of `height` x `width`. */
function stridedConv(height: number, width: number, open: boolean) {
  const operands: SubgraphOperand[] = [
    nhwc([1, height, width, CHANNELS], open),
    FILTER,
    BIAS,
    SCALARS[1], // SAME
    SCALARS[2], // stride
    SCALARS[0],
    nhwc([1, Math.ceil(height / 2), Math.ceil(width / 2), FILTERS], open),
  ];
  const steps: SubgraphStep[] = [
    { type: "CONV_2D", inputs: [0, 1, 2, 3, 4, 4, 5], outputs: [6] },
  ];
  return { operands, steps, output: 6, input: height * width * CHANNELS };
}

type Unit = ReturnType<typeof convSliceMean>;

async function prepare(unit: Unit): Promise<RunnableSubgraph> {
  return await onnxruntimeRuntime.prepare(unit.steps, {
    operands: unit.operands,
    needed: new Set([unit.output]),
  });
}

async function run(prepared: RunnableSubgraph, unit: Unit, seed: number): Promise<Float32Array> {
  const input = seededFloats(unit.input, seed, 2) as TensorData;
  const outputs = await prepared.run(new Map([[0, input]]));
  return outputs.get(unit.output) as Float32Array;
}

function closeTo(actual: Float32Array, expected: Float32Array, what: string): void {
  strictEqual(actual.length, expected.length, what);
  actual.forEach((v, i) =>
    ok(Math.abs(v - expected[i]) <= 1e-5, `${what} [${i}]: ${v} vs ${expected[i]}`)
  );
}

Deno.test("signatures whose export is the same share one onnxruntime session, with each signature's own results", async () => {
  // Opened by a test before: none left.
  strictEqual(sharedSessionCount(), 0);
  const shapes = [[6, 10], [7, 5], [3, 12]];
  const shared = [];
  for (const [h, w] of shapes) shared.push(await prepare(convSliceMean(h, w, true)));
  strictEqual(sharedSessionCount(), 1, "one set of sessions for three signatures");
  for (const [k, [h, w]] of shapes.entries()) {
    const alone = await prepare(convSliceMean(h, w, false));
    closeTo(
      await run(shared[k], convSliceMean(h, w, true), k),
      await run(alone, convSliceMean(h, w, false), k),
      `${h}x${w}`,
    );
    alone.destroy();
  }
  // Other weights in the same steps: sessions of their own.
  const otherFilter = { ...FILTER, value: seededFloats(FILTERS * 9 * CHANNELS, 5, 1) };
  const other = await prepare(convSliceMean(6, 10, true, otherFilter));
  strictEqual(sharedSessionCount(), 2, "other weights");
  const otherAlone = await prepare(convSliceMean(6, 10, false, otherFilter));
  closeTo(
    await run(other, convSliceMean(6, 10, true, otherFilter), 7),
    await run(otherAlone, convSliceMean(6, 10, false, otherFilter), 7),
    "other weights",
  );
  other.destroy();
  otherAlone.destroy();
  strictEqual(sharedSessionCount(), 1);
  // The last unit to let go closes them.
  shared[0].destroy();
  shared[1].destroy();
  strictEqual(sharedSessionCount(), 1);
  shared[2].destroy();
  strictEqual(sharedSessionCount(), 0);
});

Deno.test("signatures whose export differs (SAME padding at stride 2, odd and even widths) get sessions of their own", async () => {
  strictEqual(sharedSessionCount(), 0);
  const even = await prepare(stridedConv(6, 10, true));
  const odd = await prepare(stridedConv(6, 9, true));
  const evenAgain = await prepare(stridedConv(8, 12, true));
  // 6x10 and 8x12 pad alike (one extra row and column at the end); 6x9 pads its width on both sides.
  strictEqual(sharedSessionCount(), 2);
  for (
    const [k, [prepared, h, w]] of ([[even, 6, 10], [odd, 6, 9], [evenAgain, 8, 12]] as const)
      .entries()
  ) {
    const alone = await prepare(stridedConv(h, w, false));
    closeTo(
      await run(prepared, stridedConv(h, w, true), k),
      await run(alone, stridedConv(h, w, false), k),
      `${h}x${w}`,
    );
    alone.destroy();
  }
  for (const prepared of [even, odd, evenAgain]) prepared.destroy();
  strictEqual(sharedSessionCount(), 0);
});

/** A published-style model: batch and spatial extents symbolic. */
const OPEN_MODEL = onnxBytes({
  inputs: [{ name: "x", dims: ["N", 3, "H", "W"] }],
  outputs: [{ name: "y", dims: ["N", 6, "H2", "W2"] }],
  nodes: [
    { op: "Conv", inputs: ["x", "w1", "b1"], outputs: ["c1"], attributes: { pads: [1, 1, 1, 1] } },
    { op: "Relu", inputs: ["c1"], outputs: ["r1"] },
    {
      op: "Conv",
      inputs: ["r1", "w2", "b2"],
      outputs: ["y"],
      attributes: { pads: [1, 1, 1, 1], strides: [2, 2] },
    },
  ],
  initializers: [
    weights("w1", [8, 3, 3, 3], 1),
    weights("b1", [8], 2),
    weights("w2", [6, 8, 3, 3], 3),
    weights("b2", [6], 4),
  ],
  opset: 13,
});

Deno.test("a model imported as published runs on onnxruntime at every width it is sent, with the reference's results", async () => {
  await withTestServer({ deviceCosts: ONNXRUNTIME_FOR_EVERY_STEP }, async (server) => {
    const model = await importOnnx(server, OPEN_MODEL);
    const compile = async (devices: string[]) => {
      const compiled = await server.request("POST", "/v1/compilations", {
        model: model.id,
        devices,
      });
      strictEqual(compiled.status, 201, JSON.stringify(compiled.body));
      return compiled.body as { id: string; plan: { steps: { device: string }[] } };
    };
    const onOrt = await compile(["onnxruntime", "cpu-reference"]);
    deepStrictEqual(onOrt.plan.steps.map((s) => s.device), ["onnxruntime"]);
    const reference = await compile(["cpu-reference"]);
    const execute = async (id: string, height: number, width: number, seed: number) => {
      const executed = await server.request("POST", `/v1/compilations/${id}/executions`, {
        inputs: [{
          dimensions: [1, 3, height, width],
          data: Array.from(seededFloats(3 * height * width, seed, 2)),
        }],
        measureTiming: true,
      });
      strictEqual(executed.status, 200, JSON.stringify(executed.body));
      const timing = executed.body.timing as { steps: { device: string; fallback?: string }[] };
      return {
        steps: timing.steps,
        output: (executed.body.outputs as { dimensions: number[]; data: number[] }[])[0],
      };
    };
    for (const [k, [h, w]] of [[8, 20], [8, 13], [5, 32], [8, 20]].entries()) {
      const got = await execute(onOrt.id, h, w, k);
      deepStrictEqual(got.steps.filter((s) => s.fallback), [], JSON.stringify(got.steps));
      const expected = await execute(reference.id, h, w, k);
      deepStrictEqual(got.output.dimensions, expected.output.dimensions);
      got.output.data.forEach((v, i) =>
        ok(
          Math.abs(v - expected.output.data[i]) < 1e-4,
          `${h}x${w} [${i}]: ${v} vs ${expected.output.data[i]}`,
        )
      );
    }
  });
});

/** An imported ONNX model prepared with every step on `device`, as an executor holds it. */
async function executableOn(onnx: Uint8Array, device: string): Promise<Executable> {
  await discoverDevices({ gpu: false });
  const model = buildModel(convertOnnx(onnx).model);
  const options = { preference: "FAST_SINGLE_ANSWER", priority: "MEDIUM" } as const;
  return new Executable(prepareModel(model, options, model.runOrder.map(() => device)));
}

/**
 * Checks that preparing `onnx` on onnxruntime opens one set of sessions ahead (at
 * representative extents), that a run at `input` takes them, and that releasing the
 * executable closes them.
 */
async function opensSessionsAhead(
  onnx: Uint8Array,
  input: { shape: number[]; outputShape: number[] },
): Promise<void> {
  const executable = await executableOn(onnx, "onnxruntime");
  strictEqual(sharedSessionCount(), 0);
  deepStrictEqual(await executable.prepareUnits(), { failed: [], artifacts: [] });
  strictEqual(sharedSessionCount(), 1, "opened ahead");
  const count = input.shape.reduce((a, b) => a * b, 1);
  const [output] = await executable.runAsync([{ data: seededFloats(count, 1, 2), ...input }]);
  deepStrictEqual(output.shape, input.outputShape);
  strictEqual(sharedSessionCount(), 1, `the run at [${input.shape}] took them`);
  executable.release();
  await new Promise((resolve) => setTimeout(resolve, 0)); // a binding lets go of its units once they settle
  strictEqual(sharedSessionCount(), 0, "released with the executable");
}

Deno.test("a plan whose extents come at execution has its onnxruntime sessions opened at preparation (representative extents), and its first run takes them", async () => {
  const model = buildModel(convertOnnx(OPEN_MODEL).model);
  deepStrictEqual(representativeInputs(shapedGraph(model)), [[1, 3, 64, 64]]);
  await opensSessionsAhead(OPEN_MODEL, { shape: [1, 3, 8, 20], outputShape: [1, 6, 4, 10] });
});

/** Published-style too, but its filter is wider than 64: the model takes no width under 100. */
const WIDE_FILTER_MODEL = onnxBytes({
  inputs: [{ name: "x", dims: ["N", 3, "H", "W"] }],
  outputs: [{ name: "y", dims: ["N", 4, "H2", "W2"] }],
  nodes: [{
    op: "Conv",
    inputs: ["x", "w", "b"],
    outputs: ["y"],
    attributes: { kernel_shape: [3, 100], strides: [1, 50] },
  }],
  initializers: [weights("w", [4, 3, 3, 100], 1), weights("b", [4], 2)],
  opset: 13,
});

Deno.test("a model that takes no extent of 64 has its onnxruntime sessions opened at the first representative extent it takes", async () => {
  const model = buildModel(convertOnnx(WIDE_FILTER_MODEL).model);
  deepStrictEqual(representativeInputs(shapedGraph(model)), [[1, 3, 256, 256]]);
  await opensSessionsAhead(WIDE_FILTER_MODEL, { shape: [1, 3, 5, 150], outputShape: [1, 4, 3, 2] });
});

Deno.test("a unit's own operands take no arena bytes at extents bound per execution, and get memory of their own when its steps run on the host", async () => {
  const onOrt = await executableOn(OPEN_MODEL, "onnxruntime");
  const reference = await executableOn(OPEN_MODEL, "cpu-reference");
  const input = { data: seededFloats(3 * 8 * 20, 1, 2), shape: [1, 3, 8, 20] };
  // `run` runs a unit's steps on their reference kernels: its intermediate tensors (the
  // first convolution's and its ReLU's), left out of the arena, get memory of their own.
  const [host] = onOrt.run([input]);
  const [expected] = reference.run([input]);
  deepStrictEqual(host.shape, [1, 6, 4, 10]);
  deepStrictEqual(host.data, expected.data);
  ok(
    onOrt.shapeBindingBytes < reference.shapeBindingBytes,
    `${onOrt.shapeBindingBytes} arena bytes on onnxruntime, ${reference.shapeBindingBytes} on the host`,
  );
  const [unit] = await onOrt.runAsync([input]);
  unit.data.forEach((v, i) => ok(Math.abs(v - expected.data[i] as number) < 1e-4, `[${i}]`));
  onOrt.release();
  reference.release();
  await new Promise((resolve) => setTimeout(resolve, 0));
});
