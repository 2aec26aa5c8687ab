/**
 * The kernels operations select at compilation (quant8 parameters and tables computed once)
 * are bit-exact to the reference kernels, which compute them at every execution.
 */
import type { Tensor } from "../../nnapi/tensor.ts";
import { add } from "../add.ts";
import { logistic } from "../logistic.ts";
import { mul } from "../mul.ts";
import type { OperationDefinition } from "../operation.ts";
import { relu6 } from "../relu6.ts";
import { softmax } from "../softmax.ts";
import { tanh } from "../tanh.ts";
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";

/** Deterministic bytes (a linear congruential generator). */
function bytes(length: number, seed: number): Uint8Array {
  const out = new Uint8Array(length);
  let state = seed >>> 0;
  for (let i = 0; i < length; i++) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    out[i] = state >>> 24;
  }
  return out;
}

function q8(shape: number[], scale: number, zeroPoint: number, data: Uint8Array): Tensor {
  return { type: "TENSOR_QUANT8_ASYMM", shape, scale, zeroPoint, data };
}

const int32 = (value: number): Tensor => ({
  type: "INT32",
  shape: [],
  scale: 0,
  zeroPoint: 0,
  data: Int32Array.of(value),
});
const float32 = (value: number): Tensor => ({
  type: "FLOAT32",
  shape: [],
  scale: 0,
  zeroPoint: 0,
  data: Float32Array.of(value),
});

/** Runs the reference and the selected kernel on the same inputs; returns both outputs. */
function both(
  definition: OperationDefinition,
  inputs: Tensor[],
  output: Tensor,
): [number[], number[]] {
  const kernel = definition.bindReference?.(
    inputs.map((t) => ({ ...t, value: t.data })),
    [output],
  );
  ok(kernel, `${definition.type} selects a kernel for quant8`);
  const reference = { ...output, data: new Uint8Array(output.data!.length) };
  const selected = { ...output, data: new Uint8Array(output.data!.length) };
  definition.execute(inputs, [reference]);
  kernel(inputs, [selected]);
  // Twice: a selected kernel keeps no state that changes its results.
  kernel(inputs, [selected]);
  return [[...reference.data], [...selected.data]];
}

Deno.test("add() and mul() selected quant8 kernels match the reference bit for bit", () => {
  for (const [definition, outScale] of [[add, 0.9], [mul, 3.1]] as const) {
    for (const activation of [0, 1, 3]) {
      const a = q8([3, 1, 7], 0.25, 37, bytes(21, 1));
      const b = q8([1, 4, 7], 0.75, 140, bytes(28, 2));
      const output = q8([3, 4, 7], outScale, 101, new Uint8Array(84));
      const [reference, selected] = both(definition, [a, b, int32(activation)], output);
      deepStrictEqual(selected, reference);
    }
  }
});

Deno.test("logistic(), tanh() and relu6() selected quant8 kernels match the reference", () => {
  const input = q8([4, 64], 0.07, 120, bytes(256, 3));
  for (
    const [definition, scale, zeroPoint] of [
      [logistic, 1 / 256, 0],
      [tanh, 1 / 128, 128],
      [relu6, 0.07, 120],
    ] as const
  ) {
    const output = q8([4, 64], scale, zeroPoint, new Uint8Array(256));
    const [reference, selected] = both(definition, [input], output);
    deepStrictEqual(selected, reference);
  }
});

Deno.test("softmax() selected quant8 kernel matches the reference as beta changes", () => {
  const input = q8([3, 20], 0.05, 128, bytes(60, 4));
  const output = q8([3, 20], 1 / 256, 0, new Uint8Array(60));
  const kernel = softmax.bindReference!(
    [input, float32(1)].map((t) => ({ ...t, value: t.data })),
    [output],
  );
  ok(kernel);
  for (const beta of [1, 0.5, 0.5, 2]) {
    const reference = { ...output, data: new Uint8Array(60) };
    const selected = { ...output, data: new Uint8Array(60) };
    softmax.execute([input, float32(beta)], [reference]);
    kernel([input, float32(beta)], [selected]);
    deepStrictEqual([...selected.data], [...reference.data]);
  }
});

Deno.test("float operations keep the reference kernel", () => {
  const t = (shape: number[]): Tensor => ({
    type: "TENSOR_FLOAT32",
    shape,
    scale: 0,
    zeroPoint: 0,
    data: new Float32Array(shape[0]),
  });
  const known = (tensors: Tensor[]) => tensors.map((x) => ({ ...x, value: x.data }));
  strictEqual(add.bindReference!(known([t([2]), t([2]), int32(0)]), [t([2])]), undefined);
  strictEqual(logistic.bindReference!(known([t([2])]), [t([2])]), undefined);
  strictEqual(softmax.bindReference!(known([t([2]), float32(1)]), [t([2])]), undefined);
});
