import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { float32Scratch, storeFloat32, toFloat32, withFloat32Outputs } from "./typed_arrays.ts";

Deno.test("float16 staging widens inputs and rounds results back to float16", () => {
  const half = Float16Array.of(1.5, -2);
  const wide = toFloat32(half);
  deepStrictEqual([...wide], [1.5, -2]);
  const out = new Float16Array(1);
  const scratch = float32Scratch(out);
  scratch[0] = 1.0001;
  storeFloat32(out, scratch);
  strictEqual(out[0], 1);
  const f32 = new Float32Array(1);
  strictEqual(float32Scratch(f32), f32);
});

Deno.test("withFloat32Outputs() stages float16 outputs and narrows them afterwards", () => {
  const half = new Float16Array(2);
  const single = new Float32Array(1);
  withFloat32Outputs([half, single], ([a, b]) => {
    ok(a instanceof Float32Array && a !== (half as unknown));
    strictEqual(b, single);
    a.set([1.5, 0.1]);
    b[0] = 2;
  });
  deepStrictEqual(Array.from(half), [1.5, Number(new Float16Array([0.1])[0])]);
  strictEqual(single[0], 2);
  ok(toFloat32(single) === single);
});
