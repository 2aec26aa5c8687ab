import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import { channelShuffle } from "./channel_shuffle.ts";
import { known, operand, signatureOf } from "./common/shape_ops_fixture.ts";

Deno.test("channelShuffle.validate() gives V1_2, names wrong arity, types and ranks", () => {
  const input = operand("TENSOR_FLOAT32", [2, 6]);
  const scalar = operand("INT32", [], { value: [2] });
  const sig = (t: typeof input, ...params: typeof input[]) =>
    signatureOf("CHANNEL_SHUFFLE", [t, ...params], [t]);
  strictEqual(channelShuffle.validate(sig(input, scalar, scalar)), "V1_2");
  throws(() => channelShuffle.validate(sig(input, scalar)), /expected 3 inputs, got 2/);
  throws(
    () => channelShuffle.validate(sig(operand("TENSOR_INT32", [2, 6]), scalar, scalar)),
    /unsupported type TENSOR_INT32/,
  );
  throws(
    () => channelShuffle.validate(sig(operand("TENSOR_FLOAT32", [1, 1, 1, 1, 6]), scalar, scalar)),
    /rank 5, expected at most 4/,
  );
});

Deno.test("channelShuffle.prepare() keeps the shape, needs groups dividing the axis", () => {
  const input = known("TENSOR_FLOAT32", [2, 6]);
  const scalar = (v: number) => known("INT32", [], [v]);
  deepStrictEqual(channelShuffle.prepare([input, scalar(3), scalar(-1)], []), [[2, 6]]);
  throws(() => channelShuffle.prepare([input, scalar(4), scalar(1)], []), /positive divisor/);
  throws(() => channelShuffle.prepare([input, scalar(2), scalar(2)], []), /out of range/);
});
