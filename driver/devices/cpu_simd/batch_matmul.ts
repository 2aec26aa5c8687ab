/**
 * BATCH_MATMUL on `cpu-simd`: each slice's product by the generated GEMM kernel, the right
 * slice (transposed to [n, k] unless adj_y already has it so) repacked into the kernel's
 * weight layout before each product, as FULLY_CONNECTED does with weights computed at
 * execution. Float32, adj_x false; other forms, and shapes other than the bound ones, run on
 * the reference kernel.
 */
import { packedGemmLength, packGemmWeights } from "../../../kernels/f32_packing.ts";
import { activationRangeFloat } from "../../../kernels/fixed_point.ts";
import { createF32FullyConnected } from "../../../kernels/manifest.ts";
import { elementCount, sameShape } from "../../../nnapi/tensor.ts";
import { FUSED_NONE } from "../../../nnapi/types.ts";
import { batchMatmul } from "../../../operations/batch_matmul.ts";
import type { Kernel } from "../../../operations/operation.ts";
import type { StepImplementation, StepOperands } from "../device.ts";

/** An adj flag's constant value: false when omitted, undefined when given at execution. */
function flag(step: StepOperands, index: number): boolean | undefined {
  const input = step.inputs[index];
  if (input === undefined) return false;
  return input.value == null ? undefined : Number(input.value[0]) !== 0;
}

function bind(step: StepOperands): Kernel | undefined {
  const [a, b] = step.inputs;
  const adjY = flag(step, 3);
  if (a.type !== "TENSOR_FLOAT32" || flag(step, 2) !== false || adjY === undefined) {
    return undefined;
  }
  const rank = a.shape.length;
  const [m, k] = a.shape.slice(-2);
  const n = adjY ? b.shape[rank - 2] : b.shape[rank - 1];
  const batches = elementCount(a.shape.slice(0, -2));
  if (batches * m * n * k === 0) return undefined; // nothing to multiply: the reference
  const packed = new Float32Array(packedGemmLength(n, k));
  const run = createF32FullyConnected({ rows: m, depth: k, channels: n }, packed, {
    activation: activationRangeFloat(FUSED_NONE),
    liveWeights: true,
  });
  const zeros = new Float32Array(n);
  const transposed = adjY ? undefined : new Float32Array(n * k);
  const [aShape, bShape] = [a.shape, b.shape];
  return (inputs, outputs) => {
    const [x, w, y] = [inputs[0].data, inputs[1].data, outputs[0].data];
    if (
      !sameShape(inputs[0].shape, aShape) || !sameShape(inputs[1].shape, bShape) ||
      !(x instanceof Float32Array) || !(w instanceof Float32Array) || !(y instanceof Float32Array)
    ) {
      return batchMatmul.execute(inputs, outputs);
    }
    for (let t = 0; t < batches; t++) {
      const slice = w.subarray(t * k * n, (t + 1) * k * n);
      if (transposed) {
        for (let p = 0; p < k; p++) {
          for (let j = 0; j < n; j++) transposed[j * k + p] = slice[p * n + j];
        }
      }
      packGemmWeights(transposed ?? slice, zeros, { channels: n, depth: k }, packed);
      run(x.subarray(t * m * k, (t + 1) * m * k), y.subarray(t * m * n, (t + 1) * m * n));
    }
  };
}

/** BATCH_MATMUL on the SIMD CPU. */
export const batchMatmulSimd: StepImplementation<"BATCH_MATMUL"> = {
  type: "BATCH_MATMUL",
  supports: ({ inputs }) => inputs[0].type === "TENSOR_FLOAT32",
  bind,
};
