/**
 * The definition shared by MINIMUM and MAXIMUM (NNAPI `maximum_minimum`, V1_2): float32,
 * float16, int32 and quant8 inputs with broadcasting; quant8 inputs are requantized to the
 * output's quantization before they are compared, with tables bound once per compilation.
 */
import {
  minMaxBroadcast,
  minMaxQuant8,
  requantizeTable,
} from "../../kernels/elementwise_broadcast.ts";
import type { ReadonlyNumbers } from "../../kernels/typed_arrays.ts";
import type { Tensor, TensorInfo } from "../../nnapi/tensor.ts";
import type { OperationDefinition } from "../operation.ts";
import { prepareBroadcastPair, validateBroadcastPair } from "./broadcast_pair.ts";

type Tables = { a: Uint8Array; b: Uint8Array };

function requantizeTables(inputs: readonly TensorInfo[], output: TensorInfo): Tables {
  return { a: requantizeTable(inputs[0], output), b: requantizeTable(inputs[1], output) };
}

/** Builds MINIMUM (`isMinimum`) or MAXIMUM. */
export function minMaxOperation<T extends "MINIMUM" | "MAXIMUM">(
  type: T,
  isMinimum: boolean,
): OperationDefinition<T> {
  function run(inputs: readonly Tensor[], outputs: readonly Tensor[], tables: () => Tables) {
    const [a, b] = inputs;
    const output = outputs[0];
    if (output.data!.length === 0) return;
    if (a.type === "TENSOR_QUANT8_ASYMM") {
      minMaxQuant8(
        a.data as Uint8Array,
        a.shape,
        b.data as Uint8Array,
        b.shape,
        output.data as Uint8Array,
        output.shape,
        tables(),
        isMinimum,
      );
      return;
    }
    // The result is one of the inputs: float16 needs no float32 staging.
    minMaxBroadcast(
      a.data as ReadonlyNumbers,
      a.shape,
      b.data as ReadonlyNumbers,
      b.shape,
      output.data!,
      output.shape,
      isMinimum,
    );
  }

  return {
    type,
    validate: (signature) =>
      validateBroadcastPair(signature, {
        types: {
          TENSOR_FLOAT32: "V1_2",
          TENSOR_FLOAT16: "V1_2",
          TENSOR_INT32: "V1_2",
          TENSOR_QUANT8_ASYMM: "V1_2",
        },
      }),
    prepare: prepareBroadcastPair,
    execute(inputs, outputs) {
      run(inputs, outputs, () => requantizeTables(inputs, outputs[0]));
    },
    bindReference(inputs, outputs) {
      if (inputs[0].type !== "TENSOR_QUANT8_ASYMM") return undefined;
      const tables = requantizeTables(inputs, outputs[0]);
      return (inputs, outputs) => run(inputs, outputs, () => tables);
    },
  };
}
