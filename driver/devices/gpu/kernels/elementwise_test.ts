/**
 * The WGSL element-wise kernels against the reference kernels on seeded data: the RELU
 * family, LOGISTIC and TANH over values well past their saturation (and the special values
 * the reference passes through), and ADD/MUL with equal shapes, NNAPI broadcasting from the
 * trailing dimensions (ranks 1 to 4 against each other) and every fused activation.
 */
import type { OperationType } from "../../../../nnapi/types.ts";
import { checkAgainstReference, constant, ints, runtime, type TestInput } from "../test_helpers.ts";

const UNARY: OperationType[] = ["RELU", "RELU1", "RELU6", "LOGISTIC", "TANH"];

Deno.test("RELU, RELU1, RELU6, LOGISTIC and TANH on the gpu equal the reference", async () => {
  for (const [k, type] of UNARY.entries()) {
    for (const shape of [[7], [3, 5], [2, 3, 67], [1, 13, 17, 5]]) {
      await checkAgainstReference(type, [runtime(shape, 10 * k + shape.length, 40)], `${shape}`);
    }
    const special = runtime([8], 1);
    special.data.set([0, -0, 1e-7, -1e-7, 100, -100, 3e38, -3e38]);
    await checkAgainstReference(type, [special], "small, large and extreme values");
  }
});

Deno.test("RELU on the gpu clamps +Infinity to the largest float and keeps -Infinity at 0", async () => {
  const input = runtime([4], 2);
  input.data.set([Infinity, -Infinity, 2, -2]);
  await checkAgainstReference("RELU", [input], "infinities");
});

/** Shape pairs: equal, scalar-like, trailing-dimension broadcasts, both sides broadcast. */
const BROADCASTS: [number[], number[]][] = [
  [[2, 3, 5, 7], [2, 3, 5, 7]],
  [[67], [67]],
  [[2, 3, 5, 7], [7]],
  [[2, 3, 5, 7], [1]],
  [[5, 1], [2, 3, 1, 4]],
  [[3, 1, 6], [1, 4, 1]],
  [[1, 4, 1, 5], [3, 1, 2, 1]],
  [[9], [2, 9]],
];

Deno.test("ADD and MUL on the gpu equal the reference with broadcasting and every activation", async () => {
  let seed = 1000;
  for (const type of ["ADD", "MUL"] as const) {
    for (const [a, b] of BROADCASTS) {
      for (const activation of [0, 1, 2, 3]) {
        const inputs: TestInput[] = [runtime(a, seed++, 6), runtime(b, seed++, 6)];
        inputs.push(...ints(activation));
        await checkAgainstReference(type, inputs, `[${a}] with [${b}], activation ${activation}`);
        const swapped = [inputs[1], inputs[0], inputs[2]];
        await checkAgainstReference(type, swapped, `[${b}] with [${a}]`);
      }
    }
  }
});

Deno.test("ADD on the gpu takes a constant operand (a bias) uploaded at preparation", async () => {
  const inputs = [runtime([1, 4, 4, 6], 77), constant([6], 78), ...ints(1)];
  await checkAgainstReference("ADD", inputs, "constant bias");
});
