/**
 * The definition shared by the comparisons (EQUAL, NOT_EQUAL, LESS, LESS_EQUAL, GREATER,
 * GREATER_EQUAL; NNAPI `comparisons`, V1_2): bool8, float16, float32, int32 and quant8
 * inputs with broadcasting, a TENSOR_BOOL8 output. Quant8 inputs are compared as real
 * values (each dequantized with its own scale and zero point, in float).
 */
import {
  compareBroadcast,
  type Comparison,
  dequantizeFloat32,
} from "../../kernels/elementwise_broadcast.ts";
import type { ReadonlyNumbers } from "../../kernels/typed_arrays.ts";
import type { Tensor } from "../../nnapi/tensor.ts";
import type { OperationDefinition } from "../operation.ts";
import { prepareBroadcastPair, validateBroadcastPair } from "./broadcast_pair.ts";

/** The values a comparison reads: quant8 data dequantized, anything else as it is. */
function comparedValues(tensor: Tensor): ReadonlyNumbers {
  return tensor.type === "TENSOR_QUANT8_ASYMM"
    ? dequantizeFloat32(tensor.data as Uint8Array, tensor)
    : tensor.data as ReadonlyNumbers;
}

/** Builds the comparison operation `type`. */
export function comparisonOperation<
  T extends "EQUAL" | "NOT_EQUAL" | "LESS" | "LESS_EQUAL" | "GREATER" | "GREATER_EQUAL",
>(type: T, comparison: Comparison): OperationDefinition<T> {
  return {
    type,
    validate: (signature) =>
      validateBroadcastPair(signature, {
        types: {
          TENSOR_BOOL8: "V1_2",
          TENSOR_FLOAT16: "V1_2",
          TENSOR_FLOAT32: "V1_2",
          TENSOR_INT32: "V1_2",
          TENSOR_QUANT8_ASYMM: "V1_2",
        },
        outputType: "TENSOR_BOOL8",
      }),
    prepare: prepareBroadcastPair,
    execute(inputs, outputs) {
      const [a, b] = inputs;
      const output = outputs[0];
      if (output.data!.length === 0) return;
      compareBroadcast(
        comparedValues(a),
        a.shape,
        comparedValues(b),
        b.shape,
        output.data as Uint8Array,
        output.shape,
        comparison,
      );
    },
  };
}
