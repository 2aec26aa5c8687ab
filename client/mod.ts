/**
 * TypeScript client SDK of nnserve, shaped like the NNAPI NDK: build a `Model`, `compile`
 * it into a `Compilation`, run `Execution`s on it. Everything goes over the HTTP API of
 * docs/api.md with fetch, so the SDK runs in Deno, browsers and Node alike.
 *
 * Failures reported by the service (and an unreachable service) throw `NnapiError`, whose
 * `status` is the NNAPI ErrorStatus; misuse of the SDK itself (an input never set, an
 * operand index out of range, changing a finished model) throws ordinary `Error`s before
 * anything is sent.
 *
 * ```ts
 * const client = new NnClient({ baseUrl: "http://127.0.0.1:8080" });
 * const m = client.model();
 * const a = m.addOperand({ type: "TENSOR_FLOAT32", dimensions: [2] });
 * const b = m.addOperand({ type: "TENSOR_FLOAT32", dimensions: [2] });
 * const act = m.addOperand({ type: "INT32" });
 * const sum = m.addOperand({ type: "TENSOR_FLOAT32", dimensions: [2] });
 * m.setOperandValue(act, FuseCode.NONE);
 * m.addOperation("ADD", [a, b, act], [sum]);
 * m.identifyInputsAndOutputs([a, b], [sum]);
 * const compilation = await client.compile(m);
 * const { outputs } = await compilation.compute([[1, 2], new Float32Array([3, 4])]);
 * outputs[0].data; // Float32Array [4, 6]
 * ```
 *
 * Large data can live in service-side memories (`client.createMemory(bytes | {size})`),
 * uploaded once and referenced by offset and length: `Model.setOperandValueFromMemory`,
 * `Execution.setInputFromMemory` and `Execution.setOutputFromMemory` (whose output then
 * comes back with dimensions only; `memory.read()` it).
 *
 * Data that only executions need can stay on the service in driver-managed buffers
 * (NNAPI memory domains): `compilation.allocateBuffer({roles})` gives a `DeviceBuffer`
 * that executions write (`setOutputFromBuffer`) and read (`setInputFromBuffer`) in the
 * roles it was allocated for, e.g. a recurrent state carried from step to step; its bytes
 * are reached by `copyFrom` / `copyTo` a `Memory`:
 *
 * ```ts
 * const state = await compilation.allocateBuffer({
 *   roles: [{ io: "input", index: 1 }, { io: "output", index: 0 }],
 * });
 * await state.copyFrom(await client.createMemory({ size: 16 }));
 * for (const x of steps) {
 *   await compilation.execution().setInput(0, x).setInputFromBuffer(1, state)
 *     .setOutputFromBuffer(0, state).compute();
 * }
 * ```
 *
 * For many executions of one compilation (a camera stream), `compilation.burst()` opens a
 * `Burst`: one WebSocket with binary frames, memories referred to by small slot numbers,
 * and requests pipelined within the service's window, results in order:
 *
 * ```ts
 * await using burst = await compilation.burst();
 * const { outputs } = await burst.compute([new Float32Array([1, 2]), [3, 4]]);
 * await burst.computePipelined(frames, (result, i) => show(i, result.outputs[0].data));
 * ```
 *
 * The same service speaks the Open Inference Protocol (KServe v2) at `/v2`, and
 * `client.v2` is a client of it (also usable alone, as `V2Client`, with any server of that
 * protocol):
 *
 * ```ts
 * const result = await client.v2.infer("adder", [
 *   { name: "input0", datatype: "FP32", shape: [2], data: [1, 2] },
 *   { name: "input1", datatype: "FP32", shape: [2], data: new Float32Array([10, 20]), binary: true },
 * ]);
 * result.outputs[0].data; // Float32Array [11, 22]
 * ```
 *
 * @module
 */
export { NnClient, type NnClientOptions, type OnnxImportOptions } from "./client.ts";
export { NnapiError } from "./http.ts";
export { type BufferInfo, type BufferRequest, type BufferRole, DeviceBuffer } from "./buffer.ts";
export {
  type GraphWithPoolsJson,
  MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES,
  Model,
  type ModelWithPoolsJson,
  type OperandOptions,
  type OperandWithPoolsJson,
} from "./model.ts";
export {
  Compilation,
  type CompilationInfo,
  type CompileOptions,
  type ComputeOptions,
} from "./compilation.ts";
export {
  type ArgumentOptions,
  Execution,
  type ExecutionOutput,
  type ExecutionResult,
  type ExecutionTarget,
} from "./execution.ts";
export { Burst, type BurstClose, CLOSE_COMPILATION_DELETED, CLOSE_POLICY } from "./burst.ts";
export {
  type BurstComputeOptions,
  type BurstInput,
  type BurstOutput,
  type BurstTensor,
  type SlotRegion,
} from "./burst_codec.ts";
export type { BurstOpenOptions } from "./burst_open.ts";
export {
  type LocationJson,
  Memory,
  type MemoryInfo,
  type MemoryRange,
  type MemorySource,
} from "./memory.ts";
export type { JsonNumber, TensorArray, TensorValues } from "./tensor.ts";
export {
  type ArgumentJson,
  type ChannelQuant,
  type CompilationSummary,
  type DeviceInfo,
  type DeviceSupport,
  ERROR_STATUSES,
  type ErrorStatus,
  type ExecutionRequestJson,
  FuseCode,
  type Lifetime,
  LIFETIMES,
  type ModelInfo,
  type ModelJson,
  type ModelNaming,
  type ModelSignature,
  type OnnxImportInfo,
  type OnnxPort,
  OPERAND_TYPES,
  type OperandDescription,
  type OperandJson,
  type OperandType,
  OPERATION_TYPES,
  type OperationJson,
  type OperationType,
  type OutputShape,
  PaddingCode,
  type PageOptions,
  type Timing,
  type ValueJson,
} from "./types.ts";
export { V2Client, type V2ClientOptions, V2Error } from "./v2.ts";
// The protocol's shapes, every one (each named V2…).
export type * from "./v2_types.ts";
export type { TensorData as V2OutputData } from "./v2_tensors.ts";
