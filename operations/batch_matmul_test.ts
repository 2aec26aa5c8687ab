import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { Tensor } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
import { batchMatmul } from "./batch_matmul.ts";
import type { DeclaredOperand } from "./operation.ts";

function operand(index: number, type: OperandType, dimensions: number[]): DeclaredOperand {
  return { index, type, dimensions, scale: 0, zeroPoint: 0, lifetime: "MODEL_INPUT" };
}

const tensor = (shape: number[], data: number[] | Float32Array): Tensor => ({
  type: "TENSOR_FLOAT32",
  shape,
  scale: 0,
  zeroPoint: 0,
  data: Float32Array.from(data),
});
const flag = (v: boolean): Tensor => ({
  type: "BOOL",
  shape: [],
  scale: 0,
  zeroPoint: 0,
  data: Uint8Array.of(v ? 1 : 0),
});

/** The product of each [m, k] and [k, n] slice, by the definition. */
function expected(a: number[], b: number[], batches: number, m: number, k: number, n: number) {
  const out: number[] = [];
  for (let t = 0; t < batches; t++) {
    for (let i = 0; i < m; i++) {
      for (let j = 0; j < n; j++) {
        let sum = 0;
        for (let p = 0; p < k; p++) sum += a[t * m * k + i * k + p] * b[t * k * n + p * n + j];
        out.push(Math.fround(sum));
      }
    }
  }
  return out;
}

/** `data` of [batches, r, c] with each slice transposed to [c, r]. */
function transposed(data: number[], batches: number, r: number, c: number): number[] {
  const out: number[] = [];
  for (let t = 0; t < batches; t++) {
    for (let j = 0; j < c; j++) for (let i = 0; i < r; i++) out.push(data[t * r * c + i * c + j]);
  }
  return out;
}

Deno.test("batchMatmul() multiplies each pair of slices, with either side's last axes transposed first", () => {
  const [batches, m, k, n] = [2, 3, 4, 5];
  const a = Array.from({ length: batches * m * k }, (_, i) => Math.sin(i));
  const b = Array.from({ length: batches * k * n }, (_, i) => Math.cos(i));
  const want = expected(a, b, batches, m, k, n);
  for (const [adjX, adjY] of [[false, false], [true, false], [false, true], [true, true]]) {
    const lhs = adjX
      ? tensor([batches, k, m], transposed(a, batches, m, k))
      : tensor([batches, m, k], a);
    const rhs = adjY
      ? tensor([batches, n, k], transposed(b, batches, k, n))
      : tensor([batches, k, n], b);
    const inputs = [lhs, rhs, flag(adjX), flag(adjY)];
    const shape = batchMatmul.prepare(inputs.map((t) => ({ ...t, value: t.data })), []);
    deepStrictEqual(shape, [[batches, m, n]]);
    const out = tensor([batches, m, n], new Float32Array(batches * m * n));
    batchMatmul.execute(inputs, [out]);
    (out.data as Float32Array).forEach((v, i) =>
      strictEqual(Math.abs(v - want[i]) < 1e-5, true, `adj ${adjX},${adjY}: ${v} vs ${want[i]}`)
    );
  }
});

Deno.test("batchMatmul() refuses unequal ranks, leading or inner extents, and other types", () => {
  const validate = (inputs: DeclaredOperand[]) =>
    batchMatmul.validate({
      type: "BATCH_MATMUL",
      inputs,
      outputs: [operand(9, "TENSOR_FLOAT32", [2, 3, 5])],
    });
  strictEqual(
    validate([operand(0, "TENSOR_FLOAT32", [2, 3, 4]), operand(1, "TENSOR_FLOAT32", [2, 4, 5])]),
    "V1_3",
  );
  throws(
    () => validate([operand(0, "TENSOR_INT32", [2, 3, 4]), operand(1, "TENSOR_INT32", [2, 4, 5])]),
    /input 0 \(operand 0\) has unsupported type TENSOR_INT32/,
  );
  const prepare = (a: number[], b: number[]) =>
    batchMatmul.prepare(
      [tensor(a, new Float32Array()), tensor(b, new Float32Array())].map((t) => ({
        ...t,
        value: undefined,
      })),
      [],
    );
  throws(() => prepare([2, 3, 4], [3, 4, 5]), /leading extents \[2\] and \[3\] differ/);
  throws(() => prepare([2, 3, 4], [2, 5, 5]), /inner extents 4 and 5 differ/);
  throws(() => prepare([2, 3, 4], [4, 5]), /input 1 has rank 2, expected 3/);
});
