/**
 * Subgraphs of several steps: results equal the reference kernels run in sequence, only
 * the subgraph's inputs and needed outputs cross to the host, and what the gpu device
 * cannot run (other types, shapes known at execution, parameters computed at execution,
 * NCHW, a computed CONV_2D filter, steps out of order) is refused with a reason.
 */
import { deepStrictEqual, ok, rejects } from "node:assert/strict";
import { PADDING_SAME, PADDING_VALID } from "../../../nnapi/types.ts";
import {
  assertClose,
  constant,
  eachGpu,
  Graph,
  int32Tensor,
  ints,
  runtime,
  scalar,
  weights,
} from "./test_helpers.ts";
import {
  type GpuOperand,
  type GpuStep,
  gpuSupportReason,
  prepareGpuSubgraph,
  supportsOnGpu,
} from "./subgraph.ts";

/**
 * conv -> relu -> max pool -> fully connected -> softmax on a [1, 13, 11, 3] image of seed
 * `imageSeed` (the weights are the same for every seed).
 */
function classifier(
  imageSeed = 1,
): { graph: Graph; image: number; conv: number; probabilities: number } {
  const graph = new Graph();
  const image = graph.add(runtime([1, 13, 11, 3], imageSeed));
  const conv = graph.op("CONV_2D", [
    image,
    weights([8, 3, 3, 3], 27, 2),
    constant([8], 3, 0.2),
    ...ints(PADDING_SAME, 1, 1, 0),
  ]);
  const relu = graph.op("RELU", [conv]);
  const pool = graph.op("MAX_POOL_2D", [relu, ...ints(PADDING_VALID, 2, 2, 2, 2, 0)]);
  const fc = graph.op("FULLY_CONNECTED", [
    pool,
    weights([10, 6 * 5 * 8], 240, 4),
    constant([10], 5, 0.2),
    ...ints(0),
  ]);
  const probabilities = graph.op("SOFTMAX", [fc, scalar("FLOAT32", 1)]);
  return { graph, image, conv, probabilities };
}

eachGpu(
  "conv -> relu -> pool -> fully connected -> softmax on the gpu equals the reference",
  async (gpu) => {
    const { graph, image, probabilities } = classifier();
    const subgraph = await prepareGpuSubgraph(gpu, graph.steps, {
      operands: graph.operands,
      needed: new Set([probabilities]),
    });
    try {
      deepStrictEqual(subgraph.inputs, [image]);
      deepStrictEqual(subgraph.outputs, [probabilities]);
      deepStrictEqual(subgraph.shape(probabilities), [1, 10]);
      const result = await subgraph.run(new Map([[image, graph.values[image]]]));
      deepStrictEqual([...result.keys()], [probabilities]);
      assertClose(result.get(probabilities)!, graph.values[probabilities], "probabilities");
    } finally {
      subgraph.destroy();
    }
  },
);

eachGpu("run() downloads needed intermediates; concurrent runs keep their results", async (gpu) => {
  const { graph, image, conv, probabilities } = classifier();
  const subgraph = await prepareGpuSubgraph(gpu, graph.steps, {
    operands: graph.operands,
    needed: new Set([probabilities, conv, image]),
  });
  try {
    deepStrictEqual(subgraph.outputs, [conv, probabilities]);
    const other = classifier(99).graph;
    const [a, b] = await Promise.all([
      subgraph.run(new Map([[image, graph.values[image]]])),
      // A memory pool's SharedArrayBuffer is copied before the upload.
      subgraph.run(new Map([[image, shared(other.values[image] as Float32Array)]])),
    ]);
    assertClose(a.get(conv)!, graph.values[conv], "conv");
    assertClose(a.get(probabilities)!, graph.values[probabilities], "probabilities");
    assertClose(b.get(conv)!, other.values[conv], "conv of other data");
    assertClose(b.get(probabilities)!, other.values[probabilities], "other probabilities");
  } finally {
    subgraph.destroy();
  }
  await rejects(subgraph.run(new Map()), /destroyed/);
});

function shared(data: Float32Array): Float32Array {
  const copy = new Float32Array(new SharedArrayBuffer(data.byteLength));
  copy.set(data);
  return copy;
}

eachGpu(
  "depthwise -> residual ADD -> CONCATENATION -> RESHAPE -> TANH keeps shared intermediates",
  async (gpu) => {
    const graph = new Graph();
    const x = graph.add(runtime([1, 9, 7, 4], 7));
    const dw = graph.op("DEPTHWISE_CONV_2D", [
      x,
      weights([1, 3, 3, 4], 9, 8),
      constant([4], 9, 0.2),
      ...ints(PADDING_SAME, 1, 1, 1, 3),
    ]);
    const sum = graph.op("ADD", [dw, x, ...ints(0)]);
    const joined = graph.op("CONCATENATION", [sum, dw, x, ...ints(3)]);
    const flat = graph.op("RESHAPE", [joined, int32Tensor([9, -1])]);
    const out = graph.op("TANH", [flat]);
    const subgraph = await prepareGpuSubgraph(gpu, graph.steps, {
      operands: graph.operands,
      needed: new Set([out]),
    });
    try {
      deepStrictEqual(subgraph.inputs, [x]);
      const result = await subgraph.run(new Map([[x, graph.values[x]]]));
      assertClose(result.get(out)!, graph.values[out], "tanh");
    } finally {
      subgraph.destroy();
    }
  },
);

eachGpu(
  "a pooling step followed by an element-wise one on another tensor gives both right",
  async (gpu) => {
    // Within one compute pass on llvmpipe the element-wise step's output came out all zeros.
    const graph = new Graph();
    const image = graph.add(runtime([1, 6, 6, 4], 1));
    const other = graph.add(runtime([1, 6, 6, 8], 2));
    const pool = graph.op("AVERAGE_POOL_2D", [image, ...ints(PADDING_VALID, 2, 2, 2, 2, 0)]);
    const relu = graph.op("RELU", [other]);
    const subgraph = await prepareGpuSubgraph(gpu, graph.steps, {
      operands: graph.operands,
      needed: new Set([pool, relu]),
    });
    try {
      const result = await subgraph.run(
        new Map([[image, graph.values[image]], [other, graph.values[other]]]),
      );
      assertClose(result.get(pool)!, graph.values[pool], "pool");
      assertClose(result.get(relu)!, graph.values[relu], "relu");
    } finally {
      subgraph.destroy();
    }
  },
);

eachGpu(
  "a run records its dispatches in one compute pass on Dawn, one pass each on Deno's WebGPU",
  async (gpu) => {
    // Every pass encoder is a Node-API object on Dawn, and Deno 2.9 deregisters each one the
    // collector takes by scanning and shifting a list of all it tracks: a pass per dispatch
    // piled up enough of them for one major collection to hold the event loop for minutes.
    const { graph, image, probabilities } = classifier();
    const subgraph = await prepareGpuSubgraph(gpu, graph.steps, {
      operands: graph.operands,
      needed: new Set([probabilities]),
    });
    const { device } = gpu;
    const createCommandEncoder = device.createCommandEncoder;
    let passes = 0;
    device.createCommandEncoder = (descriptor?: GPUCommandEncoderDescriptor) => {
      const encoder = createCommandEncoder.call(device, descriptor);
      const beginComputePass = encoder.beginComputePass;
      encoder.beginComputePass = (pass?: GPUComputePassDescriptor) => {
        passes++;
        return beginComputePass.call(encoder, pass);
      };
      return encoder;
    };
    try {
      const result = await subgraph.run(new Map([[image, graph.values[image]]]));
      assertClose(result.get(probabilities)!, graph.values[probabilities], "probabilities");
      if (gpu.implementation === "dawn") deepStrictEqual(passes, 1);
      else ok(passes > 1, `${passes} pass for its dispatches`);
    } finally {
      device.createCommandEncoder = createCommandEncoder;
      subgraph.destroy();
    }
  },
);

eachGpu(
  "a prepared subgraph keeps every dispatch's parameters in one uniform buffer",
  async (gpu) => {
    // Fewer Node-API objects on Dawn (see above): a buffer per dispatch's parameters was one
    // more object per dispatch for the collector to deregister.
    const { graph, image, probabilities } = classifier();
    const { device } = gpu;
    const createBuffer = device.createBuffer;
    let uniformBuffers = 0;
    device.createBuffer = (descriptor: GPUBufferDescriptor) => {
      if (descriptor.usage & GPUBufferUsage.UNIFORM) uniformBuffers++;
      return createBuffer.call(device, descriptor);
    };
    let subgraph;
    try {
      subgraph = await prepareGpuSubgraph(gpu, graph.steps, {
        operands: graph.operands,
        needed: new Set([probabilities]),
      });
    } finally {
      device.createBuffer = createBuffer;
    }
    try {
      deepStrictEqual(uniformBuffers, 1);
      const result = await subgraph.run(new Map([[image, graph.values[image]]]));
      assertClose(result.get(probabilities)!, graph.values[probabilities], "probabilities");
    } finally {
      subgraph.destroy();
    }
  },
);

Deno.test("gpuSupportReason() refuses what the gpu device does not run, saying why", () => {
  const { graph, conv } = classifier();
  const convStep = graph.steps[0];
  ok(supportsOnGpu(convStep, graph.operands));
  const cases: [string, GpuOperand[], GpuStep, RegExp][] = [];
  const withOperand = (index: number, change: Partial<GpuOperand>) => {
    const operands = [...graph.operands];
    operands[index] = { ...operands[index], ...change };
    return operands;
  };
  const stripped = withOperand(1, {});
  delete stripped[1].value;
  cases.push(
    ["quant8", withOperand(0, { type: "TENSOR_QUANT8_ASYMM", scale: 1 }), convStep, /float32/],
    ["unknown extent", withOperand(0, { shape: [1, 0, 11, 3] }), convStep, /static/],
    ["runtime stride", withOperand(4, { value: undefined }), convStep, /only at execution/],
    ["computed filter", stripped, convStep, /must be a constant/],
    ["no kernel", graph.operands, { ...convStep, type: "LSTM" }, /no kernel for LSTM/],
    ["wrong output shape", withOperand(conv, { shape: [1, 13, 11, 9] }), convStep, /declared/],
  );
  const nchw = [...graph.operands, scalar("BOOL", 1).operand];
  const nchwStep = { ...convStep, inputs: [...convStep.inputs, nchw.length - 1] };
  cases.push(["NCHW", nchw, nchwStep, /NHWC/]);
  for (const [what, operands, step, reason] of cases) {
    const got = gpuSupportReason(step, operands);
    ok(got !== undefined && reason.test(got), `${what}: ${got}`);
  }
});

Deno.test("supportsOnGpu() plans with extents known only at execution, but not with a rank known only then nor a rank-0 tensor", () => {
  const { graph, conv } = classifier();
  const convStep = graph.steps[0];
  const withShapes = (changes: [number, number[]][]) => {
    const operands = [...graph.operands];
    for (const [index, shape] of changes) operands[index] = { ...operands[index], shape };
    return operands;
  };
  // The declared check still refuses what shapes are not known yet.
  ok(gpuSupportReason(convStep, withShapes([[0, [1, 0, 0, 3]], [conv, [1, 0, 0, 8]]])));
  ok(supportsOnGpu(convStep, withShapes([[0, [1, 0, 0, 3]], [conv, [1, 0, 0, 8]]])));
  ok(!supportsOnGpu(convStep, withShapes([[0, []], [conv, [1, 0, 0, 8]]])), "rank unknown");
  // An operand of known shape beside one that waits is checked as it is (here, rank 0).
  ok(!supportsOnGpu(convStep, withShapes([[0, [1, 0, 0, 3]], [conv, []]])), "rank-0 output");
});

eachGpu("prepareGpuSubgraph() refuses a step reading what a later step produces", async (gpu) => {
  const { graph } = classifier();
  const steps = [graph.steps[1], graph.steps[0], ...graph.steps.slice(2)];
  await rejects(
    prepareGpuSubgraph(gpu, steps, { operands: graph.operands, needed: new Set() }),
    /gpu step 0 \(RELU\): operand \d+ is produced by a later step/,
  );
});
