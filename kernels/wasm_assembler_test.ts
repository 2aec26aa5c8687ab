import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { FunctionBuilder, ModuleBuilder, signedLeb128, unsignedLeb128 } from "./wasm_assembler.ts";

Deno.test("unsignedLeb128() and signedLeb128() encode the spec's examples", () => {
  deepStrictEqual(unsignedLeb128(0), [0]);
  deepStrictEqual(unsignedLeb128(127), [0x7f]);
  deepStrictEqual(unsignedLeb128(128), [0x80, 0x01]);
  deepStrictEqual(unsignedLeb128(624485), [0xe5, 0x8e, 0x26]);
  deepStrictEqual(signedLeb128(0), [0]);
  deepStrictEqual(signedLeb128(-1), [0x7f]);
  deepStrictEqual(signedLeb128(63), [0x3f]);
  deepStrictEqual(signedLeb128(64), [0xc0, 0x00]);
  deepStrictEqual(signedLeb128(-123456), [0xc0, 0xbb, 0x78]);
});

/** Instantiates one exported function over a fresh one-page memory. */
function instantiate(name: string, f: FunctionBuilder) {
  const bytes = new ModuleBuilder().export(name, f).encode();
  ok(WebAssembly.validate(bytes), `${name} validates`);
  const memory = new WebAssembly.Memory({ initial: 1 });
  const instance = new WebAssembly.Instance(new WebAssembly.Module(bytes), { env: { memory } });
  const fn = instance.exports[name];
  if (typeof fn !== "function") throw new Error(`${name} is not exported`);
  return { floats: new Float32Array(memory.buffer), fn };
}

Deno.test("a generated do-while loop squares-and-adds vectors in the imported memory", () => {
  // axpy(pointer, count): for `count` vectors at pointer, v = v * v + v; then stores the
  // square of the first float, splatted, after the last vector, and copies its first lane.
  const f = new FunctionBuilder(["i32", "i32"]);
  const [pointer, count] = [0, 1];
  const v = f.local("v128");
  const first = f.local("v128");
  f.localGet(pointer).v128Load32Splat(0).localSet(first);
  f.loop(() => {
    f.localGet(pointer).v128Load(0).localSet(v);
    f.localGet(pointer).localGet(v).localGet(v).f32x4Mul().localGet(v).f32x4Add().v128Store(0);
    f.localGet(pointer).i32Const(16).i32Add().localSet(pointer);
    f.localGet(count).i32Const(1).i32Sub().localTee(count).brIf(0);
  });
  f.localGet(pointer).localGet(first).localGet(first).f32x4Mul().v128Store(0);
  f.localGet(pointer).localGet(pointer).f32Load(0).f32Store(16);
  const { floats, fn } = instantiate("axpy", f);
  floats.set([3, 2, 1, 4, -1, 0.5, 0, 10]);
  fn(0, 2);
  deepStrictEqual([...floats.subarray(0, 8)], [12, 6, 2, 20, 0, 0.75, 0, 110]);
  deepStrictEqual([...floats.subarray(8, 13)], [9, 9, 9, 9, 9]);
});

Deno.test("pmin/pmax clamping keeps NaN like the reference kernels' comparisons", () => {
  const f = new FunctionBuilder(["i32", "f32", "f32"]);
  const [pointer, lo, hi] = [0, 1, 2];
  f.localGet(pointer);
  f.localGet(pointer).v128Load(0).localGet(lo).f32x4Splat().f32x4Pmax();
  f.localGet(hi).f32x4Splat().f32x4Pmin().v128Store(0);
  const { floats, fn } = instantiate("clamp", f);
  floats.set([-3, NaN, 2, 9]);
  fn(0, 0, 6);
  deepStrictEqual([...floats.subarray(0, 4)], [0, NaN, 2, 6]);
  strictEqual(Number.isNaN(floats[1]), true);
});

Deno.test("relaxed madd computes a * b + c where relaxed SIMD is available", () => {
  const f = new FunctionBuilder(["i32"]);
  f.localGet(0);
  f.localGet(0).v128Load(0).localGet(0).v128Load(16).localGet(0).v128Load(32);
  f.f32x4RelaxedMadd().v128Store(48);
  const bytes = new ModuleBuilder().export("madd", f).encode();
  if (!WebAssembly.validate(bytes)) return; // an engine without relaxed SIMD
  const { floats, fn } = instantiate("madd", f);
  floats.set([1, 2, 3, 4, 5, 6, 7, 8, 0.5, 0.25, -1, 0]);
  fn(0);
  deepStrictEqual([...floats.subarray(12, 16)], [5.5, 12.25, 20, 32]);
});
