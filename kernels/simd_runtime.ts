/**
 * The WebAssembly SIMD kernel module of a realm (`f32_simd_codegen.ts`: the float32, quant8
 * and element-wise kernels in one module, in a `simd128` and a `relaxedsimd` flavour),
 * instantiated on the realm's {@link WasmHeap}, and what every caller of it shares: calls
 * split across compute lanes (`compute_lanes.ts`), scratch space, and packed weights placed
 * in the heap for a bound kernel's lifetime.
 */
import { simdModuleBytes } from "./f32_simd_codegen.ts";
import { realmHeap, type WasmHeap } from "./wasm_heap.ts";
import { ComputeLanes } from "./compute_lanes.ts";
import { ELEMENTWISE_KERNELS, type ElementwiseKernel } from "./f32_elementwise_codegen.ts";

type WasmKernel = (...args: number[]) => void;

/** The convolution kernels, float32 and quant8 (`q8_conv_simd128.ts`). */
const CONVOLUTION_KERNELS = [
  "gemm",
  "conv",
  "dwconv",
  "q8gemm",
  "q8conv",
  "q8dwconv",
  "q8requantize",
] as const;

/**
 * A kernel of the module: a convolution one, or an element-wise one
 * (`f32_elementwise_simd.ts`).
 */
export type KernelName = typeof CONVOLUTION_KERNELS[number] | ElementwiseKernel;

/** The kernel module's exports, in the order compute lanes index them. */
const KERNEL_EXPORTS: readonly KernelName[] = [...CONVOLUTION_KERNELS, ...ELEMENTWISE_KERNELS];

/** The kernel module instantiated on this realm's heap. */
export interface SimdRuntime extends Record<KernelName, WasmKernel> {
  heap: WasmHeap;
  /** Index of this flavour's first kernel in the lanes' table (plain, then relaxed). */
  laneBase: number;
}

const runtimes = new Map<boolean, SimdRuntime | null>();
const modules = new Map<boolean, WebAssembly.Module | null>();

function exported(instance: WebAssembly.Instance, name: string): WasmKernel {
  const value = instance.exports[name];
  if (typeof value !== "function") throw new Error(`wasm kernels lack export ${name}`);
  return value as WasmKernel;
}

/** The compiled kernel module of one flavour, or null when this engine cannot run it. */
function simdModule(relaxed: boolean): WebAssembly.Module | null {
  let module = modules.get(relaxed);
  if (module !== undefined) return module;
  module = null;
  try {
    const bytes = simdModuleBytes(relaxed);
    if (typeof WebAssembly === "object" && WebAssembly.validate(bytes)) {
      module = new WebAssembly.Module(bytes);
    }
  } catch {
    module = null;
  }
  modules.set(relaxed, module);
  return module;
}

/** The compiled kernels of this realm, or null when this engine cannot run them. */
function simdRuntime(relaxed: boolean): SimdRuntime | null {
  let runtime = runtimes.get(relaxed);
  if (runtime !== undefined) return runtime;
  runtime = null;
  const module = simdModule(relaxed);
  try {
    if (module) {
      const heap = realmHeap();
      const instance = new WebAssembly.Instance(module, { env: { memory: heap.memory } });
      const kernels = Object.fromEntries(
        KERNEL_EXPORTS.map((name) => [name, exported(instance, name)]),
      ) as Record<KernelName, WasmKernel>;
      runtime = { heap, laneBase: relaxed ? KERNEL_EXPORTS.length : 0, ...kernels };
    }
  } catch {
    runtime = null;
  }
  runtimes.set(relaxed, runtime);
  return runtime;
}

/** Multiply-adds below which a call runs whole: a split costs microseconds to hand out. */
const SPLIT_MIN_WORK = 1 << 19;

/** Part `index` of `count` of [0, total), boundaries rounded to multiples of `step`. */
export function share(total: number, index: number, count: number, step: number): [number, number] {
  const at = (i: number) => i === count ? total : Math.round((total * i) / count / step) * step;
  return [at(index), at(index + 1)];
}

/**
 * Calls kernel `name`, split across compute lanes when it is `work` multiply-adds or more
 * and lanes are free: `part(i, n)` gives the arguments of part `i` of `n` (at most
 * `maxParts`, none of them empty).
 */
export function callSplit(
  runtime: SimdRuntime,
  name: KernelName,
  work: number,
  maxParts: number,
  part: (index: number, count: number) => number[],
): void {
  const kernel = runtime[name];
  if (work < SPLIT_MIN_WORK || maxParts < 2) {
    kernel(...part(0, 1));
    return;
  }
  lanesOf(runtime.heap).run(
    runtime.laneBase + KERNEL_EXPORTS.indexOf(name),
    maxParts,
    part,
    (args) => kernel(...args),
  );
}

/** The compute lanes of `heap`, running both flavours' kernels (created on first use). */
function lanesOf(heap: WasmHeap): ComputeLanes {
  const plain = simdModule(false), relaxed = simdModule(true);
  return ComputeLanes.of(heap, [plain ?? relaxed!, relaxed ?? plain!], KERNEL_EXPORTS);
}

/**
 * Starts this realm's compute lanes now (as many as the thread budget set with
 * `setThreadBudget` allows) rather than at the first split call: a lane's worker takes a
 * second or so to start, during which calls run on one thread. False without SIMD.
 */
export function startComputeLanes(): boolean {
  const runtime = simdRuntime(true) ?? simdRuntime(false);
  if (!runtime) return false;
  lanesOf(runtime.heap);
  return true;
}

/**
 * The kernels that do not depend on relaxed SIMD (quant8, element-wise; in both flavours'
 * modules) in whichever flavour this engine runs, or null without SIMD.
 */
export function anySimdRuntime(): SimdRuntime | null {
  return simdRuntime(false) ?? simdRuntime(true);
}

/** Whether this engine runs the SIMD kernels (relaxed SIMD or plain SIMD128). */
export function simdAvailable(relaxed: boolean): boolean {
  return simdRuntime(relaxed) !== null;
}

/** The kernels of this realm; throws where the engine lacks the SIMD they need. */
export function requireRuntime(relaxed: boolean): SimdRuntime {
  const runtime = simdRuntime(relaxed);
  if (!runtime) throw new Error(`this engine has no WebAssembly ${relaxed ? "relaxed " : ""}SIMD`);
  return runtime;
}

/** `bytes` rounded up to the heap's 64-byte alignment. */
export function align64(bytes: number): number {
  return Math.ceil(bytes / 64) * 64;
}

/**
 * The heap's scratch area for a call, or undefined when the memory cannot grow that far
 * (the caller then runs its scalar twin on the same packed weights).
 */
export function scratchOrUndefined(heap: WasmHeap, bytes: number): number | undefined {
  try {
    return heap.scratch(bytes);
  } catch (error) {
    if (error instanceof RangeError) return undefined;
    throw error;
  }
}

/** The packed arrays each kernel uses in the heap, kept alive as long as the kernel is. */
const placedBy = new WeakMap<object, object[]>();

/**
 * Copies packed weights into the heap for as long as the `packed` array lives, which `owner`
 * (the kernel) keeps alive; returns their offset. Kernels bound to the same array (one step
 * bound for several shapes) share one copy.
 */
export function placeWeights(
  heap: WasmHeap,
  owner: object,
  packed: Float32Array | Int32Array,
): number {
  const held = placedBy.get(owner);
  if (held) held.push(packed);
  else placedBy.set(owner, [packed]);
  const placed = heap.regionOf(packed);
  if (placed !== undefined) return placed;
  const offset = heap.allocateFor(packed, packed.byteLength);
  if (packed instanceof Float32Array) heap.f32.set(packed, offset / 4);
  else new Int32Array(heap.buffer()).set(packed, offset / 4);
  return offset;
}
