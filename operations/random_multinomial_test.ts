import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { OperandType } from "../nnapi/types.ts";
import { operand, signatureOf } from "./common/shape_ops_fixture.ts";
import { randomMultinomial } from "./random_multinomial.ts";

function signature(type: OperandType, logitDims = [1, 4], seedType: OperandType = "TENSOR_INT32") {
  return signatureOf("RANDOM_MULTINOMIAL", [
    operand(type, logitDims),
    operand("INT32", [], { value: [8] }),
    operand(seedType, [2], { value: [37, 42] }),
  ], [operand("TENSOR_INT32", [1, 8])]);
}

Deno.test("randomMultinomial() needs V1_2 and names bad counts, types and ranks", () => {
  strictEqual(randomMultinomial.validate(signature("TENSOR_FLOAT16")), "V1_2");
  const good = signature("TENSOR_FLOAT32");
  throws(
    () => randomMultinomial.validate({ ...good, inputs: good.inputs.slice(0, 2) }),
    /expected 3 inputs, got 2/,
  );
  throws(
    () => randomMultinomial.validate(signature("TENSOR_QUANT8_ASYMM")),
    /input 0 \(operand 0\) has unsupported type TENSOR_QUANT8_ASYMM/,
  );
  throws(
    () => randomMultinomial.validate(signature("TENSOR_FLOAT32", [1, 4], "TENSOR_FLOAT32")),
    /input 2 \(operand 2\) has type TENSOR_FLOAT32, expected TENSOR_INT32/,
  );
  throws(
    () => randomMultinomial.validate(signature("TENSOR_FLOAT32", [4])),
    /input 0 \(operand 0\) has rank 1, expected 2/,
  );
});

Deno.test("randomMultinomial() repeats its samples for equal seeds and never draws -inf", () => {
  const info = { scale: 0, zeroPoint: 0 };
  const run = () => {
    const out = new Int32Array(64);
    randomMultinomial.execute([
      { ...info, type: "TENSOR_FLOAT32", shape: [1, 3], data: Float32Array.of(0, -Infinity, 1) },
      { ...info, type: "INT32", shape: [], data: Int32Array.of(64) },
      { ...info, type: "TENSOR_INT32", shape: [2], data: Int32Array.of(1, 2) },
    ], [{ ...info, type: "TENSOR_INT32", shape: [1, 64], data: out }]);
    return [...out];
  };
  const first = run();
  deepStrictEqual(run(), first);
  strictEqual(first.includes(1), false);
  strictEqual(first.includes(0) && first.includes(2), true);
});
