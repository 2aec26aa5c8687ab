/**
 * What every WGSL kernel family shares: the commands a step becomes (compute dispatches and
 * buffer copies), the uniform parameter block, the flat invocation index, and the fused
 * activation clamp. A kernel family decodes an operation's parameters on the host (with the
 * helpers of operations/common) at preparation and returns commands; binding them
 * to buffers is the subgraph's business.
 */
import { activationRangeFloat } from "../../../../kernels/fixed_point.ts";
import type { TensorData, TensorInfo } from "../../../../nnapi/tensor.ts";
import type { PrepareInput } from "../../../../operations/operation.ts";

/** Invocations per workgroup of the one-dimensional kernels. */
export const WORKGROUP_SIZE = 64;

/** The most workgroups WebGPU guarantees along one dispatch dimension. */
const MAX_GROUPS_PER_DIMENSION = 65535;

/**
 * A buffer a dispatch reads: an input of the step by position (a tensor of the subgraph,
 * constant or not), or data derived from constants at preparation (re-laid-out weights,
 * float16 where the model allows it), uploaded once.
 */
export type KernelRead = { input: number } | { data: Float32Array | Float16Array };

/** One compute dispatch of a step. */
export interface GpuDispatch {
  kind: "dispatch";
  /** The WGSL module (entry point `main`); pipelines are cached by it. */
  code: string;
  /** The uniform block, binding 0. */
  params: ArrayBuffer;
  /** Read-only storage buffers, bindings 1.. in this order. */
  reads: readonly KernelRead[];
  /** Output positions of the step written, bindings after the reads. */
  writes: readonly number[];
  workgroups: readonly [number, number, number];
}

/** A byte copy from a step input to a step output (RESHAPE). */
export interface GpuCopy {
  kind: "copy";
  input: number;
  output: number;
  bytes: number;
}

/** What one step becomes on the GPU, in order. */
export type GpuCommand = GpuDispatch | GpuCopy;

/** What the subgraph decided about a step beyond its operands. */
export interface KernelOptions {
  /**
   * Store constant matrix weights as float16 (the model relaxes float32 to float16 and the
   * adapter has shader-f16): half the bytes to read, sums still in float32.
   */
  f16Weights: boolean;
  /**
   * The bounds of a RELU, RELU1 or RELU6 step folded into this one (whose own fused
   * activation is NONE): the output is clamped as that step clamps, NaN becoming `lo`.
   */
  foldedRelu?: readonly [number, number];
}

/** Options of a step nothing was decided about. */
export const PLAIN: KernelOptions = { f16Weights: false };

/**
 * Builds the commands of one step from its operands (fully shaped; scalar parameters and
 * weights carry their `value`). Throws `OperationError` for parameters the kernel cannot
 * take; `supportsOnGpu` asks first, so preparation only sees accepted steps.
 */
export type KernelBuilder = (
  inputs: readonly PrepareInput[],
  outputs: readonly TensorInfo[],
  options: KernelOptions,
) => GpuCommand[];

/** A uniform field: a plain number is an i32, `{ f32 }` a float. */
export type ParamField = number | { f32: number };

/**
 * Packs a WGSL uniform struct of 4-byte scalars (i32 and f32 fields, declared in the same
 * order), padded to the 16 bytes uniform buffers are sized in.
 */
export function paramBuffer(fields: readonly ParamField[]): ArrayBuffer {
  const bytes = Math.max(16, Math.ceil((fields.length * 4) / 16) * 16);
  const view = new DataView(new ArrayBuffer(bytes));
  fields.forEach((field, i) => {
    if (typeof field === "number") view.setInt32(i * 4, field, true);
    else view.setFloat32(i * 4, field.f32, true);
  });
  return view.buffer;
}

/**
 * Workgroups covering `invocations` one-dimensional invocations of `groupSize`, folded
 * into a second dimension past WebGPU's per-dimension limit ({@link FLAT_INDEX} unfolds).
 */
export function workgroupsFor(
  invocations: number,
  groupSize = WORKGROUP_SIZE,
): [number, number, number] {
  const groups = Math.max(1, Math.ceil(invocations / groupSize));
  if (groups <= MAX_GROUPS_PER_DIMENSION) return [groups, 1, 1];
  return [MAX_GROUPS_PER_DIMENSION, Math.ceil(groups / MAX_GROUPS_PER_DIMENSION), 1];
}

/**
 * WGSL entry point header of a one-dimensional kernel: `main` with `let i: u32` the flat
 * invocation index (over both dispatch dimensions).
 */
export const FLAT_INDEX = `@compute @workgroup_size(${WORKGROUP_SIZE})
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * ${WORKGROUP_SIZE}u;`;

/**
 * WGSL unfolding the flat index `i` of an NHWC output element into its batch `b`, row
 * `oy`, column `ox` and channel (the local `channel`, of the Params field `channels`).
 */
export function nhwcOutputIndex(channel: string, channels: string): string {
  return `  let ${channel} = i % p.${channels};
  var t = i / p.${channels};
  let ox = t % p.out_w;
  t = t / p.out_w;
  let oy = t % p.out_h;
  let b = t / p.out_h;`;
}

/**
 * WGSL of NNAPI's float clamp as the reference writes it (`v < min ? min : v > max ? max :
 * v`, so NaN passes through), for a fused activation range given as uniform fields.
 */
export const CLAMP = `fn clamp_activation(v: f32, lo: f32, hi: f32) -> f32 {
  return select(select(v, hi, v > hi), lo, v < lo);
}`;

/**
 * WGSL of NNAPI's RELU family (`min(max(lo, x), hi)` with std::max/min, so NaN becomes lo;
 * -0 becomes +0 at lo = 0).
 */
export const RELU_CLAMP = `fn relu_clamp(x: f32, lo: f32, hi: f32) -> f32 {
  let v = select(lo, x, lo < x);
  return select(v, hi, hi < v);
}`;

/**
 * WGSL of `activate(v)` and `activate4(v)`: a kernel's output clamp between the uniform
 * fields `p.lo` and `p.hi`. The fused activation ({@link CLAMP}) unless a RELU step was
 * folded in: then that step's own clamp ({@link RELU_CLAMP}), which differs for NaN, so the
 * fold gives the bits of the two steps run one after the other.
 */
export function outputClamp(options: KernelOptions): string {
  const [helper, call] = options.foldedRelu
    ? [RELU_CLAMP, "relu_clamp"]
    : [CLAMP, "clamp_activation"];
  return `${helper}
fn activate(v: f32) -> f32 { return ${call}(v, p.lo, p.hi); }
fn activate4(v: vec4<f32>) -> vec4<f32> {
  return vec4<f32>(activate(v.x), activate(v.y), activate(v.z), activate(v.w));
}`;
}

/** The output clamp's uniform fields: a folded RELU's bounds, else the fused activation. */
export function outputClampFields(
  activation: number,
  options: KernelOptions,
): [ParamField, ParamField] {
  if (!options.foldedRelu) return activationFields(activation);
  const [lo, hi] = options.foldedRelu;
  return [{ f32: lo }, { f32: hi }];
}

/**
 * WGSL of -infinity (a max reduction's start). Not a constant expression: WGSL makes an
 * infinite constant an error (Dawn's compiler refuses it), a value computed at run time is
 * not one.
 */
export const NEGATIVE_INFINITY = `fn negative_infinity() -> f32 {
  var bits = 0xff800000u;
  return bitcast<f32>(bits);
}`;

/** The fused activation range of an NNAPI code, as two f32 uniform fields (min, max). */
export function activationFields(code: number): [ParamField, ParamField] {
  const { min, max } = activationRangeFloat(code);
  return [{ f32: min }, { f32: max }];
}

/** The value of a constant scalar input (supportsOnGpu has made sure it is one). */
export function constantScalar(input: PrepareInput): number {
  const value = input.value;
  if (!value || value.length === 0) throw new Error("a scalar parameter is not a constant");
  return Number(value[0]);
}

/** A constant float32 tensor's values (supportsOnGpu has made sure it is one). */
export function constantFloats(input: PrepareInput): Float32Array {
  const value: TensorData | null | undefined = input.value;
  if (!(value instanceof Float32Array)) throw new Error("a weight tensor is not a constant");
  return value;
}
