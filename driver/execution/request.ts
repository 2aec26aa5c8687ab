/**
 * Execution requests as the driver receives them (already decoded from the wire) and their
 * checks against a prepared model: NNAPI's `validateRequest` for arguments, dimensions and
 * sizes, before anything reaches an executor.
 */
import { DriverError, invalid, type OutputShape } from "../../nnapi/errors.ts";
import type { Pool } from "../../memory/pools.ts";
import type { RunInput, RunOutput } from "../compilation/plan.ts";
import type { StepTiming } from "../compilation/plan.ts";
import type { PlanWithoutWeights } from "../compilation/plan.ts";
import type { InputArrays } from "./input_arrays.ts";
import {
  byteSize,
  elementCount,
  fromCheckedNumbers,
  isFullySpecified,
  isScalarType,
  type JsonNumber,
  misfitReason,
  type TensorData,
  viewBytes,
} from "../../nnapi/tensor.ts";

/** A region of a client's memory pool. */
export interface MemoryRegion {
  memory: string;
  offset: number;
  length: number;
}

/**
 * The value of one execution argument. `memory` and `buffer` refer to client objects and
 * are bound (to `bytes` and `tensor`) by `arguments.ts` before validation.
 */
export type ArgumentValue =
  | { kind: "numbers"; values: readonly JsonNumber[] }
  | { kind: "bytes"; bytes: Uint8Array }
  | { kind: "tensor"; data: TensorData; shape: readonly number[] }
  | ({ kind: "memory" } & MemoryRegion)
  | { kind: "buffer"; token: string }
  | { kind: "omitted" };

/** One input of an execution; `dimensions` completes unknown model dimensions. */
export interface InputArgument {
  value: ArgumentValue;
  dimensions?: readonly number[];
}

/** Where an output goes when it is not returned inline. */
export type OutputTarget =
  | ({ kind: "memory" } & MemoryRegion)
  | { kind: "pool"; pool: Pool; offset: number; length: number }
  | { kind: "buffer"; token: string };

/** One output of an execution: optional dimensions the caller expects, and its target. */
export interface OutputArgument {
  dimensions?: readonly number[];
  target?: OutputTarget;
}

/** A decoded execution request. */
export interface ExecutionRequest {
  inputs: readonly InputArgument[];
  outputs?: readonly OutputArgument[];
  measureTiming?: boolean;
  deadlineMs?: number;
  /** NNAPI's loop timeout for WHILE loops (ms; default 2 000, clamped to 15 000). */
  loopTimeoutMs?: number;
}

/**
 * An execution request as clients send it: inputs in model order, or by name for models
 * whose inputs have names (imported ones).
 */
export type ClientExecutionRequest = Omit<ExecutionRequest, "inputs"> & {
  inputs: readonly InputArgument[] | Readonly<Record<string, InputArgument>>;
};

/**
 * Inputs in the model's input order (by name, or a list as it is), the ONNX scalars among
 * them (`ports.scalars`, carried as [1]) taking `dimensions: []` as [1].
 */
export function positionalInputs(
  ports: { names?: readonly string[]; scalars?: readonly number[] },
  inputs: ClientExecutionRequest["inputs"],
): readonly InputArgument[] {
  const ordered = inOrder(ports.names, inputs);
  if (!ports.scalars?.some((k) => ordered[k]?.dimensions?.length === 0)) return ordered;
  return ordered.map((input, k) =>
    ports.scalars!.includes(k) && input.dimensions?.length === 0
      ? { ...input, dimensions: [1] }
      : input
  );
}

/** Inputs by name in the model's input order; a list passes as it is. */
function inOrder(
  names: readonly string[] | undefined,
  inputs: ClientExecutionRequest["inputs"],
): readonly InputArgument[] {
  if (Array.isArray(inputs)) return inputs;
  const byName = inputs as Readonly<Record<string, InputArgument>>;
  if (!names) {
    throw invalid("inputs by name need a model whose inputs have names (an import); give a list", {
      path: ["inputs"],
    });
  }
  for (const name of Object.keys(byName)) {
    if (!names.includes(name)) {
      throw invalid(`the model has no input named '${name}' (its inputs: ${names.join(", ")})`, {
        path: ["inputs", name],
      });
    }
  }
  return names.map((name) => {
    const argument = byName[name];
    if (!argument) throw invalid(`input '${name}' is missing`, { path: ["inputs", name] });
    return argument;
  });
}

/** Timing in microseconds, as NNAPI `Timing`, with the time of each plan step. */
export interface Timing {
  onDeviceUs: number;
  inDriverUs: number;
  steps?: StepTiming[];
}

/** An output after execution; `data` is absent when it was written to a memory or buffer. */
export interface ExecutionOutput {
  shape: number[];
  data?: TensorData;
  /** The output's name, for models whose outputs have names (imports). */
  name?: string;
}

/** A successful execution. */
export interface ExecutionResult {
  outputs: ExecutionOutput[];
  outputShapes: OutputShape[];
  timing?: Timing;
}

/**
 * Combines model dimensions with request dimensions as NNAPI does (0 = unknown); `what` names
 * the operand in an error (made only then).
 */
export function combineDimensions(
  model: readonly number[],
  requested: readonly number[] | undefined,
  what: () => string,
  scalar: boolean,
): number[] {
  if (requested === undefined) return [...model];
  if (scalar) {
    if (requested.length !== 0) throw invalid(`${what()} is a scalar; dimensions must be []`);
    return [];
  }
  if (model.length !== 0 && requested.length !== model.length) {
    throw invalid(`${what()} has rank ${model.length}, dimensions give rank ${requested.length}`);
  }
  return requested.map((d, i) => {
    const declared = model[i] ?? 0;
    if (declared !== 0 && d !== 0 && d !== declared) {
      throw invalid(`${what()}: dimension ${i} is ${declared} in the model, not ${d}`);
    }
    return declared !== 0 ? declared : d;
  });
}

/**
 * Checks and decodes the inputs of a request into typed arrays with full shapes (JSON
 * numbers into the arrays `reuse` keeps, when given: runs on the driver's thread).
 */
export function resolveInputs(
  prepared: PlanWithoutWeights,
  request: ExecutionRequest,
  reuse?: InputArrays,
): RunInput[] {
  const expected = prepared.inputIndexes.length;
  if (request.inputs.length !== expected) {
    throw invalid(`the model has ${expected} inputs, the request gives ${request.inputs.length}`, {
      path: ["inputs"],
    });
  }
  return request.inputs.map((arg, k) => {
    const operandIndex = prepared.inputIndexes[k];
    const operand = prepared.operands[operandIndex];
    // Named only when a check fails: most requests pass them all.
    const what = () => `input ${k} (operand ${operandIndex}, ${operand.type})`;
    const scalar = isScalarType(operand.type);
    if (arg.value.kind === "omitted") {
      if (!prepared.omittableInputs[k]) {
        throw invalid(`${what()} is omitted, but an operation reading it needs its value`, {
          path: ["inputs", k],
        });
      }
      return { data: null, shape: [...operand.shape] };
    }
    if (arg.value.kind === "memory" || arg.value.kind === "buffer") {
      throw new DriverError("GENERAL_FAILURE", `${what()}: ${arg.value.kind} argument not bound`);
    }
    let shape: number[];
    try {
      const given = arg.value.kind === "tensor" ? arg.value.shape : arg.dimensions;
      shape = combineDimensions(operand.shape, given, what, scalar);
    } catch (error) {
      throw invalid((error as Error).message, { path: ["inputs", k, "dimensions"] });
    }
    if (!scalar && (shape.length === 0 || !isFullySpecified(shape))) {
      throw invalid(`${what()} has unknown dimensions [${shape}]; give "dimensions"`, {
        path: ["inputs", k, "dimensions"],
      });
    }
    if (arg.value.kind === "tensor") return { data: arg.value.data, shape };
    if (arg.value.kind === "numbers") {
      const values = arg.value.values;
      const count = elementCount(shape);
      if (values.length !== count) {
        throw invalid(`${what()} needs ${count} values for [${shape}], got ${values.length}`, {
          path: ["inputs", k],
        });
      }
      const data = fromCheckedNumbers(operand.type, values, reuse?.array(k, operand.type, count));
      if (typeof data === "number") {
        throw invalid(`${what()}: value ${data}: ${misfitReason(operand.type, values[data])}`, {
          path: ["inputs", k, "data", data],
        });
      }
      return { data, shape };
    }
    const size = byteSize(operand.type, shape);
    if (arg.value.bytes.byteLength !== size) {
      throw invalid(
        `${what()} needs ${size} bytes for [${shape}], got ${arg.value.bytes.byteLength}`,
        { path: ["inputs", k] },
      );
    }
    return { data: viewBytes(operand.type, arg.value.bytes), shape };
  });
}

/** Checks the output arguments' count and dimensions against the model before running. */
export function checkOutputArguments(
  prepared: PlanWithoutWeights,
  request: ExecutionRequest,
): void {
  const outputs = request.outputs;
  if (outputs === undefined) return;
  const expected = prepared.outputIndexes.length;
  if (outputs.length !== expected) {
    throw invalid(`the model has ${expected} outputs, the request gives ${outputs.length}`, {
      path: ["outputs"],
    });
  }
  outputs.forEach((arg, k) => {
    const operandIndex = prepared.outputIndexes[k];
    const operand = prepared.operands[operandIndex];
    const what = () => `output ${k} (operand ${operandIndex}, ${operand.type})`;
    try {
      combineDimensions(operand.shape, arg.dimensions, what, isScalarType(operand.type));
    } catch (error) {
      throw invalid((error as Error).message, { path: ["outputs", k, "dimensions"] });
    }
  });
}

/**
 * Reports output shapes; an output larger than the room its caller gave (`capacities`, in
 * bytes: a memory region, a fully shaped buffer, or requested dimensions) is insufficient
 * (NNAPI OUTPUT_INSUFFICIENT_SIZE, reported with every output's shape).
 */
export function checkOutputShapes(
  outputs: readonly RunOutput[],
  capacities: readonly number[],
): OutputShape[] {
  const shapes = outputs.map((output, k) => ({
    dimensions: output.shape,
    isSufficient: output.data.byteLength <= capacities[k],
  }));
  const short = shapes.findIndex((s) => !s.isSufficient);
  if (short >= 0) {
    throw new DriverError(
      "OUTPUT_INSUFFICIENT_SIZE",
      `output ${short} needs dimensions [${shapes[short].dimensions}] (${
        outputs[short].data.byteLength
      } bytes), more than the ${capacities[short]} bytes given`,
      { outputShapes: shapes },
    );
  }
  return shapes;
}

/** Room for each output when the caller gave only dimensions (inline outputs). */
export function inlineCapacities(
  prepared: PlanWithoutWeights,
  request: ExecutionRequest,
): number[] {
  return prepared.outputIndexes.map((operandIndex, k) => {
    const asked = request.outputs?.[k]?.dimensions;
    return asked && asked.length > 0 && isFullySpecified(asked)
      ? byteSize(prepared.operands[operandIndex].type, asked)
      : Infinity;
  });
}
