import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import { known, operand, signatureOf } from "./common/shape_ops_fixture.ts";
import { ValueNotYetKnown } from "./operation.ts";
import { pad } from "./pad.ts";
import { padV2 } from "./pad_v2.ts";

const paddings = operand("TENSOR_INT32", [4, 2], { value: [0, 0, 1, 1, 2, 2, 0, 0] });

Deno.test("pad.validate() gives V1_1, V1_2 for float16 or a nonzero quant8 zero point", () => {
  const f32 = operand("TENSOR_FLOAT32", [1, 2, 2, 1]);
  strictEqual(pad.validate(signatureOf("PAD", [f32, paddings], [f32])), "V1_1");
  const q0 = operand("TENSOR_QUANT8_ASYMM", [1, 2, 2, 1]);
  strictEqual(pad.validate(signatureOf("PAD", [q0, paddings], [q0])), "V1_1");
  const q3 = operand("TENSOR_QUANT8_ASYMM", [1, 2, 2, 1], { zeroPoint: 3 });
  strictEqual(pad.validate(signatureOf("PAD", [q3, paddings], [q3])), "V1_2");
  const f16 = operand("TENSOR_FLOAT16", [1, 2, 2, 1]);
  strictEqual(pad.validate(signatureOf("PAD", [f16, paddings], [f16])), "V1_2");
});

Deno.test("pad.validate() names wrong arity, types, ranks and quantization", () => {
  const f32 = operand("TENSOR_FLOAT32", [1, 2, 2, 1]);
  throws(() => pad.validate(signatureOf("PAD", [f32], [f32])), /expected 2 inputs, got 1/);
  const i32 = operand("TENSOR_INT32", [1, 2, 2, 1]);
  throws(() => pad.validate(signatureOf("PAD", [i32, paddings], [i32])), /unsupported type/);
  const wrongPad = operand("TENSOR_FLOAT32", [4, 2]);
  throws(
    () => pad.validate(signatureOf("PAD", [f32, wrongPad], [f32])),
    /input 1 .* has type TENSOR_FLOAT32, expected TENSOR_INT32/,
  );
  const rank5 = operand("TENSOR_FLOAT32", [1, 1, 1, 1, 1]);
  throws(() => pad.validate(signatureOf("PAD", [rank5, paddings], [rank5])), /rank 5/);
  const q = operand("TENSOR_QUANT8_ASYMM", [1, 2, 2, 1]);
  const other = operand("TENSOR_QUANT8_ASYMM", [1, 2, 2, 1], { scale: 1 });
  throws(() => pad.validate(signatureOf("PAD", [q, paddings], [other])), /scale 1/);
  const value = operand("FLOAT32", []);
  throws(
    () => padV2.validate(signatureOf("PAD_V2", [q, paddings, value], [q])),
    /input 2 .* has type FLOAT32, expected INT32/,
  );
});

Deno.test("pad.prepare() adds the paddings, waits for runtime paddings, rejects negatives", () => {
  const input = known("TENSOR_FLOAT32", [1, 2, 3, 1]);
  const pads = known("TENSOR_INT32", [4, 2], [0, 0, 1, 1, 2, 0, 0, 3]);
  deepStrictEqual(pad.prepare([input, pads], []), [[1, 4, 5, 4]]);
  throws(() => pad.prepare([input, known("TENSOR_INT32", [4, 2])], []), ValueNotYetKnown);
  const negative = known("TENSOR_INT32", [4, 2], [0, 0, -1, 0, 0, 0, 0, 0]);
  throws(() => pad.prepare([input, negative], []), /expected >= 0/);
  throws(() => pad.prepare([input, known("TENSOR_INT32", [3, 2], [])], []), /expected \[4,2\]/);
});
