/**
 * The WGSL FULLY_CONNECTED, SOFTMAX, CONCATENATION and RESHAPE kernels against the
 * reference kernels on seeded data: inputs of rank 2 to 4 flattened into batches, weights
 * both constant and computed, softmax betas and axes (HAL 1.2's axis input too), and
 * concatenation along every axis of 1 to 4 inputs.
 */
import { elementCount } from "../../../../nnapi/tensor.ts";
import {
  checkAgainstReference,
  constant,
  int32Tensor,
  ints,
  runtime,
  scalar,
  type TestInput,
  weights,
} from "../test_helpers.ts";

Deno.test("FULLY_CONNECTED on the gpu equals the reference, inputs flattened to [batch, size]", async () => {
  const cases: [number[], number][] = [
    [[1, 7], 3],
    [[5, 16], 9],
    [[2, 3, 4, 10], 12],
    [[4, 1, 1, 64], 1001],
    [[3, 2, 33], 17],
  ];
  let seed = 3000;
  for (const [input, units] of cases) {
    const depth = input[input.length - 1];
    for (const activation of [0, 1, 2, 3]) {
      const inputs: TestInput[] = [
        runtime(input, seed++),
        weights([units, depth], depth, seed++),
        constant([units], seed++, 0.5),
        ...ints(activation),
      ];
      await checkAgainstReference("FULLY_CONNECTED", inputs, `[${input}] x ${units}`);
    }
  }
  const computed = [runtime([3, 8], 1), runtime([5, 8], 2, 0.5), runtime([5], 3), ...ints(1)];
  await checkAgainstReference("FULLY_CONNECTED", computed, "weights computed at execution");
});

Deno.test("SOFTMAX on the gpu equals the reference for betas, ranks and axes", async () => {
  const cases: [number[], number, number | undefined][] = [
    [[1, 1001], 1, undefined],
    [[7, 10], 0.5, undefined],
    [[2, 3, 4, 5], 2.5, undefined],
    [[2, 3, 4, 5], 1, 1],
    [[6, 9], 1, 0],
    [[4, 7], 1, -2],
  ];
  let seed = 4000;
  for (const [shape, beta, axis] of cases) {
    const inputs = [runtime(shape, seed++, 20), scalar("FLOAT32", beta)];
    if (axis !== undefined) inputs.push(...ints(axis));
    await checkAgainstReference("SOFTMAX", inputs, `[${shape}] beta ${beta} axis ${axis}`);
  }
});

Deno.test("CONCATENATION on the gpu equals the reference along every axis", async () => {
  const base = [2, 3, 4, 5];
  let seed = 5000;
  for (let rank = 1; rank <= 4; rank++) {
    for (let axis = 0; axis < rank; axis++) {
      for (const parts of [1, 2, 4]) {
        const inputs: TestInput[] = [];
        for (let k = 0; k < parts; k++) {
          const shape = base.slice(0, rank);
          shape[axis] = 1 + ((k * 3 + axis) % 4);
          inputs.push(k === 1 ? constant(shape, seed++) : runtime(shape, seed++));
        }
        inputs.push(...ints(axis));
        await checkAgainstReference("CONCATENATION", inputs, `rank ${rank} axis ${axis}`);
      }
    }
  }
});

Deno.test("RESHAPE on the gpu copies the elements under the new shape", async () => {
  const shapes: [number[], number[]][] = [[[2, 3, 4], [4, -1]], [[1, 7, 7, 3], [147]]];
  for (const [from, to] of shapes) {
    const input = runtime(from, elementCount(from));
    await checkAgainstReference("RESHAPE", [input, int32Tensor(to)], `[${from}] -> [${to}]`);
  }
});
