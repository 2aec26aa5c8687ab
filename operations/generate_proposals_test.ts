import { strictEqual, throws } from "node:assert/strict";
import type { OperandType } from "../nnapi/types.ts";
import { operand, signatureOf } from "./common/shape_ops_fixture.ts";
import { generateProposals } from "./generate_proposals.ts";

function signature(type: OperandType, scoreDims = [1, 2, 2, 2]) {
  const quant = type === "TENSOR_QUANT8_ASYMM";
  const scalar: OperandType = type === "TENSOR_FLOAT16" ? "FLOAT16" : "FLOAT32";
  const box = { scale: 0.125 };
  return signatureOf("GENERATE_PROPOSALS", [
    operand(type, scoreDims),
    operand(type, [1, 2, 2, 8]),
    operand(quant ? "TENSOR_QUANT16_SYMM" : type, [2, 4], box),
    operand(quant ? "TENSOR_QUANT16_ASYMM" : type, [1, 2], box),
    operand(scalar, [], { value: [4] }),
    operand(scalar, [], { value: [4] }),
    operand("INT32", [], { value: [-1] }),
    operand("INT32", [], { value: [-1] }),
    operand(scalar, [], { value: [0.3] }),
    operand(scalar, [], { value: [1] }),
    operand("BOOL", [], { value: [0] }),
  ], [
    operand(type, [4]),
    operand(quant ? "TENSOR_QUANT16_ASYMM" : type, [4, 4], box),
    operand("TENSOR_INT32", [4]),
  ]);
}

Deno.test("generateProposals() needs V1_2 and names bad counts, types and ranks", () => {
  strictEqual(generateProposals.validate(signature("TENSOR_FLOAT16")), "V1_2");
  strictEqual(generateProposals.validate(signature("TENSOR_QUANT8_ASYMM")), "V1_2");
  const good = signature("TENSOR_FLOAT32");
  throws(
    () => generateProposals.validate({ ...good, inputs: good.inputs.slice(0, 10) }),
    /expected 11 inputs, got 10/,
  );
  throws(
    () => generateProposals.validate(signature("TENSOR_INT32")),
    /input 0 \(operand 0\) has unsupported type TENSOR_INT32/,
  );
  const wrongScalar = signature("TENSOR_FLOAT16");
  throws(
    () =>
      generateProposals.validate({
        ...wrongScalar,
        inputs: wrongScalar.inputs.map((o, i) => i === 4 ? { ...o, type: "FLOAT32" } : o),
      }),
    /input 4 \(operand 4\) has type FLOAT32, expected FLOAT16/,
  );
  throws(
    () => generateProposals.validate(signature("TENSOR_FLOAT32", [1, 2, 2])),
    /input 0 \(operand 0\) has rank 3, expected 4/,
  );
});
