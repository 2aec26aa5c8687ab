/**
 * A tiny WebAssembly binary encoder: just enough of the module format (types, one imported
 * memory, functions, exports) and of the instruction set (integer arithmetic, structured
 * loops, 128-bit SIMD on f32x4 and i32x4, relaxed SIMD) to write the optimized kernels as
 * TypeScript that emits their bytes. Nothing is built outside this repository:
 * the kernels' wasm is generated when first needed.
 */

/** Value types of the kernels' function signatures and locals. */
export type ValType = "i32" | "f32" | "v128";

const VALTYPE_CODE: Record<ValType, number> = { i32: 0x7f, f32: 0x7d, v128: 0x7b };

/** Unsigned LEB128 bytes of a non-negative integer. */
export function unsignedLeb128(value: number): number[] {
  const out: number[] = [];
  let v = value >>> 0;
  do {
    let byte = v & 0x7f;
    v >>>= 7;
    if (v !== 0) byte |= 0x80;
    out.push(byte);
  } while (v !== 0);
  return out;
}

/** Signed LEB128 bytes of an int32. */
export function signedLeb128(value: number): number[] {
  const out: number[] = [];
  let v = value | 0;
  for (;;) {
    const byte = v & 0x7f;
    v >>= 7;
    const done = (v === 0 && (byte & 0x40) === 0) || (v === -1 && (byte & 0x40) !== 0);
    out.push(done ? byte : byte | 0x80);
    if (done) return out;
  }
}

function utf8Name(name: string): number[] {
  const bytes = [...new TextEncoder().encode(name)];
  return [...unsignedLeb128(bytes.length), ...bytes];
}

function vector(items: number[][]): number[] {
  return [...unsignedLeb128(items.length), ...items.flat()];
}

function section(id: number, content: number[]): number[] {
  return [id, ...unsignedLeb128(content.length), ...content];
}

const SIMD_PREFIX = 0xfd;

/**
 * The body of one function: instructions are appended in order by the methods below, each
 * named after the wasm instruction it emits. Locals are numbered after the parameters.
 */
export class FunctionBuilder {
  readonly params: readonly ValType[];
  readonly results: readonly ValType[];
  readonly #locals: ValType[] = [];
  readonly #code: number[] = [];

  constructor(params: readonly ValType[], results: readonly ValType[] = []) {
    this.params = params;
    this.results = results;
  }

  /** Declares a new local and returns its index. */
  local(type: ValType): number {
    this.#locals.push(type);
    return this.params.length + this.#locals.length - 1;
  }

  /** Declares `count` locals of one type. */
  locals(type: ValType, count: number): number[] {
    return Array.from({ length: count }, () => this.local(type));
  }

  #emit(...bytes: number[]): this {
    for (const b of bytes) this.#code.push(b);
    return this;
  }

  #simd(opcode: number, ...immediates: number[]): this {
    return this.#emit(SIMD_PREFIX, ...unsignedLeb128(opcode), ...immediates);
  }

  #memarg(alignLog2: number, offset: number): number[] {
    return [...unsignedLeb128(alignLog2), ...unsignedLeb128(offset)];
  }

  localGet(index: number): this {
    return this.#emit(0x20, ...unsignedLeb128(index));
  }

  localSet(index: number): this {
    return this.#emit(0x21, ...unsignedLeb128(index));
  }

  localTee(index: number): this {
    return this.#emit(0x22, ...unsignedLeb128(index));
  }

  i32Const(value: number): this {
    return this.#emit(0x41, ...signedLeb128(value));
  }

  f32Const(value: number): this {
    const bytes = new Uint8Array(Float32Array.of(value).buffer);
    return this.#emit(0x43, ...bytes);
  }

  i32Add(): this {
    return this.#emit(0x6a);
  }

  i32Sub(): this {
    return this.#emit(0x6b);
  }

  i32Mul(): this {
    return this.#emit(0x6c);
  }

  i32And(): this {
    return this.#emit(0x71);
  }

  i32ShrU(): this {
    return this.#emit(0x76);
  }

  i32Eqz(): this {
    return this.#emit(0x45);
  }

  i32Ne(): this {
    return this.#emit(0x47);
  }

  i32LtU(): this {
    return this.#emit(0x49);
  }

  i64Const(value: bigint): this {
    const out: number[] = [];
    let v = BigInt.asIntN(64, value);
    for (;;) {
      const byte = Number(v & 0x7fn);
      v >>= 7n;
      const done = (v === 0n && (byte & 0x40) === 0) || (v === -1n && (byte & 0x40) !== 0);
      out.push(done ? byte : byte | 0x80);
      if (done) return this.#emit(0x42, ...out);
    }
  }

  f32Load(offset = 0): this {
    return this.#emit(0x2a, ...this.#memarg(2, offset));
  }

  f32Store(offset = 0): this {
    return this.#emit(0x38, ...this.#memarg(2, offset));
  }

  /** `block ... end` with no result; `br 0` inside leaves it. */
  block(body: () => void): this {
    this.#emit(0x02, 0x40);
    body();
    return this.#emit(0x0b);
  }

  /** `loop ... end` with no result; `br 0` inside jumps back to its start. */
  loop(body: () => void): this {
    this.#emit(0x03, 0x40);
    body();
    return this.#emit(0x0b);
  }

  br(depth: number): this {
    return this.#emit(0x0c, ...unsignedLeb128(depth));
  }

  brIf(depth: number): this {
    return this.#emit(0x0d, ...unsignedLeb128(depth));
  }

  v128Load(offset = 0): this {
    return this.#simd(0x00, ...this.#memarg(4, offset));
  }

  v128Load32Splat(offset = 0): this {
    return this.#simd(0x09, ...this.#memarg(2, offset));
  }

  v128Store(offset = 0): this {
    return this.#simd(0x0b, ...this.#memarg(4, offset));
  }

  /** `v128.store64_lane`: stores lane `lane` of an i64x2 view. */
  v128Store64Lane(offset: number, lane: number): this {
    return this.#simd(0x5b, ...this.#memarg(3, offset), lane);
  }

  /** `i8x16.shuffle`: byte `i` of the result is byte `lanes[i]` of the pair (0-31). */
  i8x16Shuffle(lanes: readonly number[]): this {
    return this.#simd(0x0d, ...lanes);
  }

  i8x16Splat(): this {
    return this.#simd(0x0f);
  }

  i32x4Splat(): this {
    return this.#simd(0x11);
  }

  i64x2Splat(): this {
    return this.#simd(0x12);
  }

  v128And(): this {
    return this.#simd(0x4e);
  }

  v128Xor(): this {
    return this.#simd(0x51);
  }

  i8x16NarrowI16x8U(): this {
    return this.#simd(0x66);
  }

  i16x8NarrowI32x4S(): this {
    return this.#simd(0x85);
  }

  i32x4MinS(): this {
    return this.#simd(0xb6);
  }

  i32x4MaxS(): this {
    return this.#simd(0xb8);
  }

  i64x2ShrS(): this {
    return this.#simd(0xcc);
  }

  i64x2Add(): this {
    return this.#simd(0xce);
  }

  i64x2Mul(): this {
    return this.#simd(0xd5);
  }

  i64x2LtS(): this {
    return this.#simd(0xd8);
  }

  i64x2ExtmulLowI32x4S(): this {
    return this.#simd(0xdc);
  }

  i64x2ExtmulHighI32x4S(): this {
    return this.#simd(0xdd);
  }

  i32x4Add(): this {
    return this.#simd(0xae);
  }

  i32x4Mul(): this {
    return this.#simd(0xb5);
  }

  /** Products of the eight signed 16-bit lane pairs, adjacent pairs summed into four i32. */
  i32x4DotI16x8S(): this {
    return this.#simd(0xba);
  }

  f32x4Splat(): this {
    return this.#simd(0x13);
  }

  f32x4Add(): this {
    return this.#simd(0xe4);
  }

  f32x4Sub(): this {
    return this.#simd(0xe5);
  }

  f32x4Mul(): this {
    return this.#simd(0xe6);
  }

  f32x4Div(): this {
    return this.#simd(0xe7);
  }

  /** `pmin(a, b) = b < a ? b : a`: keeps `a` when it is NaN. */
  f32x4Pmin(): this {
    return this.#simd(0xea);
  }

  /** `pmax(a, b) = a < b ? b : a`: keeps `a` when it is NaN. */
  f32x4Pmax(): this {
    return this.#simd(0xeb);
  }

  /** Relaxed SIMD `a * b + c`, fused or not as the hardware prefers. */
  f32x4RelaxedMadd(): this {
    return this.#simd(0x105);
  }

  /** The code section entry: local declarations, instructions, `end`. */
  encode(): number[] {
    const groups: number[][] = [];
    for (let i = 0; i < this.#locals.length;) {
      let j = i;
      while (j < this.#locals.length && this.#locals[j] === this.#locals[i]) j++;
      groups.push([...unsignedLeb128(j - i), VALTYPE_CODE[this.#locals[i]]]);
      i = j;
    }
    const body = [...vector(groups), ...this.#code, 0x0b];
    return [...unsignedLeb128(body.length), ...body];
  }
}

/**
 * Pages a shared memory import declares as its maximum (2 GiB): a shared memory must have
 * one, and the memory given at instantiation must not allow more.
 */
export const SHARED_MEMORY_MAX_PAGES = 32768;

/**
 * A module importing one memory (`env.memory`) and exporting named functions. With `shared`,
 * the import is a shared memory (a SharedArrayBuffer that worker threads run the same code
 * on) of at most {@link SHARED_MEMORY_MAX_PAGES}.
 */
export class ModuleBuilder {
  readonly #functions: { name: string; code: FunctionBuilder }[] = [];

  constructor(readonly options: { shared?: boolean } = {}) {}

  /** Adds an exported function. */
  export(name: string, code: FunctionBuilder): this {
    this.#functions.push({ name, code });
    return this;
  }

  /** The module's bytes. */
  encode(): Uint8Array<ArrayBuffer> {
    const signatures: string[] = [];
    const typeIndex = this.#functions.map(({ code }) => {
      const key = `${code.params.join(",")}->${code.results.join(",")}`;
      const found = signatures.indexOf(key);
      if (found >= 0) return found;
      signatures.push(key);
      return signatures.length - 1;
    });
    const types = signatures.map((key) => {
      const [params, results] = key.split("->").map((list) =>
        list === "" ? [] : list.split(",").map((t) => VALTYPE_CODE[t as ValType])
      );
      return [0x60, ...vector(params.map((t) => [t])), ...vector(results.map((t) => [t]))];
    });
    // env.memory: memory import (kind 2) with limits {min 0, no max}, or shared with a max.
    const limits = this.options.shared
      ? [0x03, 0x00, ...unsignedLeb128(SHARED_MEMORY_MAX_PAGES)]
      : [0x00, 0x00];
    const imports = [[...utf8Name("env"), ...utf8Name("memory"), 0x02, ...limits]];
    const exports = this.#functions.map(({ name }, i) => [
      ...utf8Name(name),
      0x00,
      ...unsignedLeb128(i),
    ]);
    const bytes = [
      0x00,
      0x61,
      0x73,
      0x6d,
      0x01,
      0x00,
      0x00,
      0x00,
      ...section(1, vector(types)),
      ...section(2, vector(imports)),
      ...section(3, vector(typeIndex.map((i) => unsignedLeb128(i)))),
      ...section(7, vector(exports)),
      ...section(10, vector(this.#functions.map(({ code }) => code.encode()))),
    ];
    return new Uint8Array(bytes);
  }
}
