import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { Tensor } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
import { hashtableLookup } from "./hashtable_lookup.ts";
import { type DeclaredOperand, OperationError, type PrepareInput } from "./operation.ts";

function declared(
  type: OperandType,
  dimensions: number[],
  index: number,
  scale = 0,
): DeclaredOperand {
  return { index, type, dimensions, scale, zeroPoint: 0, lifetime: "MODEL_INPUT" };
}

function signature(hitsScale: number) {
  return {
    type: "HASHTABLE_LOOKUP" as const,
    inputs: [
      declared("TENSOR_INT32", [4], 0),
      declared("TENSOR_INT32", [3], 1),
      declared("TENSOR_QUANT8_ASYMM", [3, 2], 2, 0.5),
    ],
    outputs: [
      declared("TENSOR_QUANT8_ASYMM", [4, 2], 3, 0.5),
      declared("TENSOR_QUANT8_ASYMM", [4], 4, hitsScale),
    ],
  };
}

function info(shape: number[]): PrepareInput {
  return { type: "TENSOR_INT32", shape, scale: 0, zeroPoint: 0, value: undefined };
}

Deno.test("hashtableLookup.validate() accepts a quant8 table with scale-1 hits as V1_0", () => {
  strictEqual(hashtableLookup.validate(signature(1)), "V1_0");
  throws(() => hashtableLookup.validate(signature(0.5)), OperationError);
});

Deno.test("hashtableLookup.prepare() shapes values [lookups, ...] and hits [lookups]", () => {
  deepStrictEqual(hashtableLookup.prepare([info([4]), info([3]), info([3, 2, 5])], []), [
    [4, 2, 5],
    [4],
  ]);
  deepStrictEqual(hashtableLookup.prepare([info([2]), info([3]), info([3])], []), [[2], [2]]);
});

Deno.test("hashtableLookup.prepare() rejects a key count unlike the value rows", () => {
  throws(() => hashtableLookup.prepare([info([4]), info([2]), info([3, 2])], []), OperationError);
});

Deno.test("hashtableLookup.execute() gives the CTS hashtable_lookup_quant8 rows and hits", () => {
  const t = (type: OperandType, shape: number[], data: Tensor["data"], scale = 0): Tensor => ({
    type,
    shape,
    scale,
    zeroPoint: 0,
    data,
  });
  const out = t("TENSOR_QUANT8_ASYMM", [4, 2], new Uint8Array(8), 0.5);
  const hits = t("TENSOR_QUANT8_ASYMM", [4], new Uint8Array(4), 1);
  hashtableLookup.execute([
    t("TENSOR_INT32", [4], new Int32Array([123, 250, 255, 0])),
    t("TENSOR_INT32", [3], new Int32Array([0, 123, 255])),
    t("TENSOR_QUANT8_ASYMM", [3, 2], new Uint8Array([0, 1, 10, 11, 20, 21]), 0.5),
  ], [out, hits]);
  deepStrictEqual(Array.from(out.data!), [10, 11, 0, 0, 20, 21, 0, 1]);
  deepStrictEqual(Array.from(hits.data!), [1, 0, 1, 1]);
});
