/**
 * The TENSOR_QUANT8_ASYMM_SIGNED forms at validation: which operations have one (NNAPI's
 * HAL 1.3 list), the version they need, and faults named in the signed operands' terms.
 */
import { strictEqual, throws } from "node:assert/strict";
import type { OperandType } from "../../nnapi/types.ts";
import { operationDefinition } from "../table.ts";
import type { DeclaredOperand, OperationSignature } from "../operation.ts";

function operand(
  index: number,
  type: OperandType,
  dimensions: number[],
  quant: { scale?: number; zeroPoint?: number; value?: Int32Array } = {},
): DeclaredOperand {
  return {
    index,
    type,
    dimensions,
    scale: quant.scale ?? (type.startsWith("TENSOR_QUANT") ? 0.5 : 0),
    zeroPoint: quant.zeroPoint ?? 0,
    lifetime: quant.value ? "CONSTANT_COPY" : "MODEL_INPUT",
    ...(quant.value ? { value: quant.value } : {}),
  };
}

function validate(signature: OperationSignature) {
  return operationDefinition(signature.type)!.validate(signature);
}

const S8 = "TENSOR_QUANT8_ASYMM_SIGNED";
const U8 = "TENSOR_QUANT8_ASYMM";
const int32 = (index: number, v: number) =>
  operand(index, "INT32", [], { value: new Int32Array([v]) });

Deno.test("signed forms need HAL 1.3: arithmetic through the shift, moves natively", () => {
  strictEqual(
    validate({
      type: "MAX_POOL_2D",
      inputs: [
        operand(0, S8, [1, 4, 4, 1]),
        ...[0, 0, 0, 0, 1, 1, 2, 2, 0].map((v, i) => int32(i + 1, v)),
      ],
      outputs: [operand(10, S8, [1, 3, 3, 1])],
    }),
    "V1_3",
  );
  strictEqual(
    validate({
      type: "TRANSPOSE",
      inputs: [operand(0, S8, [2, 3]), operand(1, "TENSOR_INT32", [2])],
      outputs: [operand(2, S8, [3, 2])],
    }),
    "V1_1", // the operand type's own HAL 1.3 is added by the model for every operation
  );
});

Deno.test("a signed operation may not mix in an unsigned quant8 operand", () => {
  throws(
    () =>
      validate({
        type: "ADD",
        inputs: [operand(0, S8, [2]), operand(1, U8, [2]), int32(2, 0)],
        outputs: [operand(3, S8, [2])],
      }),
    /input 1 \(operand 1\) is TENSOR_QUANT8_ASYMM but the operation has TENSOR_QUANT8_ASYMM_SIGNED operands/,
  );
  throws(
    () =>
      validate({
        type: "DEQUANTIZE",
        inputs: [operand(0, S8, [2])],
        outputs: [operand(1, U8, [2])],
      }),
    /output 0 \(operand 1\) is TENSOR_QUANT8_ASYMM but/,
  );
});

Deno.test("a fault in a signed form names the signed type and marks shifted zero points", () => {
  throws(
    () =>
      validate({
        type: "LOGISTIC",
        inputs: [operand(0, S8, [2])],
        outputs: [operand(1, S8, [2], { scale: 1 / 256, zeroPoint: 0 })],
      }),
    /output 0 \(operand 1\) must have scale 1\/256 and zero point 0, has 0.00390625 and 128 \(zero points here are those of the TENSOR_QUANT8_ASYMM equivalent, shifted by \+128\)/,
  );
  throws(
    () =>
      validate({
        type: "L2_POOL_2D",
        inputs: [
          operand(0, S8, [1, 2, 2, 1]),
          ...[0, 0, 0, 0, 1, 1, 2, 2, 0].map((v, i) => int32(i + 1, v)),
        ],
        outputs: [operand(10, S8, [1, 1, 1, 1])],
      }),
    /unsupported type TENSOR_QUANT8_ASYMM_SIGNED/,
  );
});

Deno.test("operations NNAPI gives no signed form refuse the signed type", () => {
  throws(
    () =>
      validate({
        type: "HASHTABLE_LOOKUP",
        inputs: [
          operand(0, "TENSOR_INT32", [1]),
          operand(1, "TENSOR_INT32", [2]),
          operand(2, S8, [2, 1]),
        ],
        outputs: [operand(3, S8, [1, 1]), operand(4, U8, [1], { scale: 1 })],
      }),
    /TENSOR_QUANT8_ASYMM_SIGNED/,
  );
});

Deno.test("CAST takes signed quant8 only to signed quant8 (an identity cast, HAL 1.3)", () => {
  strictEqual(
    validate({ type: "CAST", inputs: [operand(0, S8, [3])], outputs: [operand(1, S8, [3])] }),
    "V1_3",
  );
  strictEqual(
    validate({
      type: "CAST",
      inputs: [operand(0, "TENSOR_BOOL8", [3])],
      outputs: [operand(1, "TENSOR_BOOL8", [3])],
    }),
    "V1_3",
  );
  throws(
    () =>
      validate({
        type: "CAST",
        inputs: [operand(0, S8, [3])],
        outputs: [operand(1, "TENSOR_FLOAT32", [3])],
      }),
    /output 0 \(operand 1\) has type TENSOR_FLOAT32; a TENSOR_QUANT8_ASYMM_SIGNED input casts only to TENSOR_QUANT8_ASYMM_SIGNED/,
  );
  throws(
    () =>
      validate({
        type: "CAST",
        inputs: [operand(0, "TENSOR_FLOAT32", [3])],
        outputs: [operand(1, S8, [3])],
      }),
    /output 0 \(operand 1\) has unsupported type TENSOR_QUANT8_ASYMM_SIGNED/,
  );
});

Deno.test("PAD_V2's signed pad value must lie in [-128, 127]", () => {
  const definition = operationDefinition("PAD_V2")!;
  const info = { type: S8, shape: [2], scale: 0.5, zeroPoint: 0 } as const;
  const paddings = {
    type: "TENSOR_INT32" as const,
    shape: [1, 2],
    scale: 0,
    zeroPoint: 0,
    value: new Int32Array([1, 1]),
  };
  const scalar = (v: number) => ({
    type: "INT32" as const,
    shape: [],
    scale: 0,
    zeroPoint: 0,
    value: new Int32Array([v]),
  });
  strictEqual(
    definition.prepare([{ ...info, value: undefined }, paddings, scalar(-128)], [info])[0][0],
    4,
  );
  throws(
    () => definition.prepare([{ ...info, value: undefined }, paddings, scalar(128)], [info]),
    /pad value \(input 2\) is 128, outside the TENSOR_QUANT8_ASYMM_SIGNED range \[-128, 127\]/,
  );
});
