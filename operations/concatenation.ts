/**
 * CONCATENATION: joins n >= 1 tensors along an axis (NNAPI Concatenation.cpp). Inputs:
 * 0..n-1 the tensors (TENSOR_FLOAT32, TENSOR_QUANT8_ASYMM, or TENSOR_FLOAT16 since HAL 1.2;
 * same type and rank, equal dims except the axis), n the axis (INT32, in [0, rank)). Output:
 * the axis dims summed. Before HAL 1.2 quant8 inputs must share the output's scale and zero
 * point; since HAL 1.2 differing ones are requantized.
 */
import { concatenate, requantizeUint8 } from "../kernels/shape_concatenation.ts";
import type { HalVersion, OperandType } from "../nnapi/types.ts";
import { checkInputType } from "./common/operand_types.ts";
import type { OperationDefinition } from "./operation.ts";
import { check, checkTypes, scalarOf, scalarValue } from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

/** CONCATENATION (HAL 1.0; float16 or quant8 with differing quantization need HAL 1.2). */
export const concatenation: OperationDefinition<"CONCATENATION"> = withSignedQuant8({
  type: "CONCATENATION",

  validate(signature) {
    const count = signature.inputs.length;
    check(count >= 2, `expected at least 2 inputs, got ${count}`);
    check(signature.outputs.length === 1, `expected 1 output, got ${signature.outputs.length}`);
    const type = signature.inputs[0].type;
    checkInputType(signature.inputs[0], 0, [
      "TENSOR_FLOAT32",
      "TENSOR_QUANT8_ASYMM",
      "TENSOR_FLOAT16",
    ]);
    const expected: OperandType[] = new Array<OperandType>(count - 1).fill(type);
    expected.push("INT32");
    checkTypes(signature, expected, [type]);
    const rank = signature.inputs[0].dimensions.length;
    signature.inputs.slice(0, -1).forEach((input, i) => {
      const r = input.dimensions.length;
      check(
        rank === 0 || r === 0 || r === rank,
        `input ${i} (operand ${input.index}) has rank ${r}, input 0 has rank ${rank}`,
      );
    });
    let version: HalVersion = type === "TENSOR_FLOAT16" ? "V1_2" : "V1_0";
    if (type === "TENSOR_QUANT8_ASYMM") {
      const output = signature.outputs[0];
      const shared = signature.inputs.slice(0, -1).every((input) =>
        input.scale === output.scale && input.zeroPoint === output.zeroPoint
      );
      // HAL 1.0/1.1 require every input to have the output's scale and zero point.
      if (!shared) version = "V1_2";
    }
    return version;
  },

  prepare(inputs) {
    const tensors = inputs.slice(0, -1);
    const first = tensors[0].shape;
    const rank = first.length;
    const axis = scalarValue(inputs[inputs.length - 1], `axis (input ${tensors.length})`);
    check(axis >= 0 && axis < rank, `axis ${axis} is outside [0, ${rank})`);
    const dims = [...first];
    tensors.forEach((tensor, i) => {
      if (i === 0) return;
      const shape = tensor.shape;
      check(shape.length === rank, `input ${i} has rank ${shape.length}, input 0 has rank ${rank}`);
      check(tensor.type === tensors[0].type, `input ${i} has type ${tensor.type}`);
      for (let d = 0; d < rank; d++) {
        if (d === axis) {
          dims[d] += shape[d];
        } else {
          check(
            shape[d] === first[d],
            `input ${i} dimension ${d} is ${shape[d]}, input 0 has ${first[d]}`,
          );
        }
      }
    });
    return [dims];
  },

  execute(inputs, outputs) {
    const tensors = inputs.slice(0, -1).filter((t) => t.data !== null);
    const axis = scalarOf(inputs[inputs.length - 1]);
    const output = outputs[0];
    const convert = output.type === "TENSOR_QUANT8_ASYMM"
      ? tensors.map((t) => requantizeUint8(t.scale, t.zeroPoint, output.scale, output.zeroPoint))
      : undefined;
    concatenate(
      tensors.map((t) => ({ data: t.data!, shape: t.shape })),
      axis,
      output.data!,
      convert,
    );
  },
});
