/**
 * The NNAPI CTS conformance suite over HTTP: every case's model is registered exactly as the
 * vectors give it, checked for support, compiled and executed through the API of docs/api.md,
 * and its outputs compared with the CTS tolerances. Used by the `deno task cts` CLI
 * (`main.ts`) and by tests.
 *
 * In memory mode the same cases go through shared memories instead (docs/api.md "Memories"):
 * every CONSTANT_REFERENCE constant is uploaded into one memory pool of the case and the
 * model refers to it by `pools` and `location`; each example's inputs are regions of one
 * input memory and its outputs are written into regions of one output memory, read back
 * and compared exactly as inline outputs.
 */
import { NnapiError, Transport } from "../../client/http.ts";
import { createMemory, type Memory } from "../../client/memory.ts";
import {
  decodeBase64,
  elementBytes,
  elementCount,
  fromJsonNumber,
  littleEndianBytes,
  toTensorArray,
} from "../../client/tensor.ts";
import {
  type DeviceSupport,
  type ExecutionResponseJson,
  OPERAND_TYPES,
  type OperandType,
} from "../../client/types.ts";
import { toSignedCase } from "./signed.ts";
import { compareOutput, type CtsCase, ctsDirectory, operationsOf } from "./vectors.ts";

/** What to run and where. */
export interface ConformanceOptions {
  /** The service's root URL. */
  baseUrl: string;
  apiKey?: string;
  /** HAL versions whose cases run, e.g. ["V1_0", "V1_1"]. */
  versions: readonly string[];
  /** Only cases whose name matches. */
  filter?: RegExp;
  /** Cases in flight at once (default 4). */
  concurrency?: number;
  /** The vectors' directory (default `ctsDirectory()`). */
  directory?: string;
  /** Called as each case finishes, for progress output. */
  onCase?: (result: CaseResult) => void;
  /**
   * Pass constants, inputs and outputs through memory pools instead of inline (see the
   * module documentation). Default false.
   */
  memory?: boolean;
  /**
   * Compile for these devices only (NNAPI `createForDevices`); cases with operations none of
   * them supports are skipped, naming the operations. Default: every device.
   */
  devices?: readonly string[];
  /**
   * Fail a case whose steps ran on the reference kernels where the plan put them on another
   * device (a device that cannot prepare them falls back, which would pass unnoticed).
   */
  noFallback?: boolean;
  /**
   * Run the HAL 1.3 signed forms of the cases instead (`toSignedCase`, names suffixed
   * `_signed`); cases without a TENSOR_QUANT8_ASYMM operand are left out. Default false.
   */
  signed?: boolean;
}

/** The outcome of one case; skipped and failed cases say why. */
export interface CaseResult {
  name: string;
  spec: string;
  outcome: "passed" | "failed" | "skipped";
  reason?: string;
  operations: string[];
  ms: number;
}

/** Per operation type: the cases using it, by outcome. */
export interface OperationTally {
  passed: number;
  failed: number;
  skipped: number;
}

/** The whole run. */
export interface ConformanceReport {
  /** Cases run (after the filter). */
  total: number;
  passed: number;
  failed: number;
  skipped: number;
  failures: { name: string; reason: string }[];
  skips: { name: string; reason: string }[];
  perOperation: Record<string, OperationTally>;
}

type Example = CtsCase["examples"][number] & {
  expectedMultinomialDistributionTolerance?: number;
};

/** A verdict reached before the end of a case. */
class Verdict extends Error {
  constructor(readonly outcome: "failed" | "skipped", reason: string) {
    super(reason);
  }
}

function describe(error: unknown): string {
  if (error instanceof Verdict) return error.message;
  if (error instanceof NnapiError) {
    return `${error.status} (HTTP ${error.httpStatus}): ${error.message}`;
  }
  return `crash: ${error instanceof Error ? error.stack ?? error.message : String(error)}`;
}

/** Runs one step; a failure of the service becomes a verdict naming the step. */
async function step<T>(what: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof Verdict) throw error;
    throw new Verdict("failed", `${what}: ${describe(error)}`);
  }
}

/** The cases of the versions, one spec file at a time (the files total ~75 MB). */
async function* readCases(
  directory: string,
  versions: readonly string[],
  filter: RegExp | undefined,
  signed = false,
): AsyncGenerator<CtsCase> {
  for (const version of versions) {
    const files = [...Deno.readDirSync(`${directory}/${version}`)]
      .filter((e) => e.isFile && e.name.endsWith(".json"))
      .map((e) => e.name)
      .sort();
    for (const file of files) {
      const cases = JSON.parse(
        await Deno.readTextFile(`${directory}/${version}/${file}`),
      ) as CtsCase[];
      for (const c of cases) {
        if (filter && !filter.test(c.name)) continue;
        if (!signed) {
          yield c;
          continue;
        }
        const s = toSignedCase(c);
        if (s) yield s;
      }
    }
  }
}

function sameDimensions(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

/** The output values of a response, as numbers, whichever encoding the service chose. */
function outputValues(
  type: string,
  output: ExecutionResponseJson["outputs"][number],
): ArrayLike<number> {
  if (output.data !== undefined) return output.data.map(fromJsonNumber);
  if (output.base64 !== undefined) return decodeBase64(type as OperandType, output.base64);
  throw new Verdict("failed", "an output came back without data");
}

/**
 * RANDOM_MULTINOMIAL's check of the CTS: for batch 0, each class's frequency among the
 * samples is within the tolerance of softmax(logits) for that class.
 */
function checkMultinomial(
  c: CtsCase,
  example: Example,
  response: ExecutionResponseJson,
): string | undefined {
  const tolerance = example.expectedMultinomialDistributionTolerance;
  const op = c.model.operations.find((o) => o.type === "RANDOM_MULTINOMIAL");
  if (tolerance === undefined || !op) return undefined;
  const logits = example.inputs[String(op.inputs[0])];
  const classes = c.model.operands[op.inputs[0]].dimensions[1];
  const k = c.model.outputIndexes.indexOf(op.outputs[0]);
  const output = response.outputs[k];
  const samples = output.dimensions[1];
  const values = outputValues(c.model.operands[op.outputs[0]].type, output);
  const counts = new Array<number>(classes).fill(0);
  for (let i = 0; i < samples; i++) {
    const sample = values[i];
    if (!(sample >= 0 && sample < classes)) return `sample ${i} is ${sample}, not a class`;
    counts[sample]++;
  }
  let sum = 0;
  for (let i = 0; i < classes; i++) sum += Math.exp(logits[i]);
  for (let i = 0; i < classes; i++) {
    const frequency = counts[i] / samples;
    const expected = Math.exp(logits[i]) / sum;
    if (Math.abs(frequency - expected) > tolerance) {
      return `class ${i} drawn with frequency ${frequency}, expected ${expected} ± ${tolerance}`;
    }
  }
  return undefined;
}

/** Checks one execution's outputs against the example; returns the first fault. */
function checkOutputs(
  c: CtsCase,
  example: Example,
  response: ExecutionResponseJson,
): string | undefined {
  const outputCount = c.model.outputIndexes.length;
  if (response.outputs.length !== outputCount || response.outputShapes.length !== outputCount) {
    return `${response.outputs.length} outputs and ${response.outputShapes.length} output shapes, expected ${outputCount}`;
  }
  for (const [k, operandIndex] of c.model.outputIndexes.entries()) {
    if (c.ignoredOutputs.includes(operandIndex)) continue;
    const expectedShape = example.outputShapes[String(operandIndex)];
    const output = response.outputs[k];
    const shape = response.outputShapes[k];
    if (expectedShape) {
      if (!sameDimensions(output.dimensions, expectedShape)) {
        return `output ${k}: dimensions [${output.dimensions}], expected [${expectedShape}]`;
      }
      if (!sameDimensions(shape.dimensions, expectedShape) || !shape.isSufficient) {
        return `output ${k}: outputShapes says [${shape.dimensions}] (isSufficient ${shape.isSufficient}), expected [${expectedShape}]`;
      }
    }
    const type = c.model.operands[operandIndex].type;
    const fault = compareOutput(
      type,
      example.outputs[String(operandIndex)] ?? [],
      outputValues(type, output),
      c.tolerance,
    );
    if (fault) return `output ${k} (${type}): ${fault}`;
  }
  return checkMultinomial(c, example, response);
}

/** An id as a URL path segment. */
function segment(id: string): string {
  return encodeURIComponent(id);
}

/** A vector's operand type, which memory mode must know to lay out its bytes. */
function operandType(type: string): OperandType {
  const known = OPERAND_TYPES.find((t) => t === type);
  if (known === undefined) throw new Verdict("failed", `memory mode: unknown operand type ${type}`);
  return known;
}

/** Size in bytes of `count` elements of the vector's operand type. */
function sizeOf(type: string, count: number): number {
  return count * elementBytes(operandType(type));
}

/** Alignment of the regions packed into a memory. */
const REGION_ALIGNMENT = 8;

/** A region of a memory being packed. */
interface Region {
  offset: number;
  length: number;
}

/**
 * Lays out regions of the given byte lengths (undefined: no region) one after the other at
 * aligned offsets; returns them and the total size.
 */
function pack(
  lengths: readonly (number | undefined)[],
): { regions: (Region | undefined)[]; size: number } {
  let size = 0;
  const regions = lengths.map((length) => {
    if (length === undefined) return undefined;
    const offset = Math.ceil(size / REGION_ALIGNMENT) * REGION_ALIGNMENT;
    size = offset + length;
    return { offset, length };
  });
  return { regions, size };
}

/** Writes the values as little-endian elements of the type at `offset` of `bytes`. */
function encodeInto(bytes: Uint8Array, offset: number, type: string, values: readonly number[]) {
  bytes.set(littleEndianBytes(toTensorArray(operandType(type), values)), offset);
}

/** The memories a case created, deleted when it ends. */
type Memories = Memory[];

async function newMemory(
  what: string,
  transport: Transport,
  source: Uint8Array | { size: number },
  memories: Memories,
): Promise<Memory> {
  const memory = await step(what, () => createMemory(transport, source));
  memories.push(memory);
  return memory;
}

interface VectorOperand {
  type: string;
  dimensions: number[];
  lifetime?: string;
  value?: number[];
  [field: string]: unknown;
}

/**
 * The case's model with every CONSTANT_REFERENCE value moved into one memory pool: the
 * operand carries `location` into `pools[0]` instead of `value`.
 */
async function poolConstants(
  transport: Transport,
  c: CtsCase,
  memories: Memories,
): Promise<CtsCase["model"]> {
  const operands = c.model.operands as VectorOperand[];
  const pooled = operands.map((o) =>
    o.lifetime === "CONSTANT_REFERENCE" && Array.isArray(o.value) && o.value.length > 0
  );
  const { regions, size } = pack(
    operands.map((o, i) => pooled[i] ? sizeOf(o.type, o.value!.length) : undefined),
  );
  if (size === 0) return c.model;
  const bytes = new Uint8Array(size);
  regions.forEach((region, i) => {
    if (region) encodeInto(bytes, region.offset, operands[i].type, operands[i].value!);
  });
  const memory = await newMemory("create constants memory", transport, bytes, memories);
  return {
    ...c.model,
    pools: [memory.id],
    operands: operands.map((operand, i) => {
      const region = regions[i];
      if (!region) return operand;
      const { value: _value, ...rest } = operand;
      return { ...rest, location: { poolIndex: 0, ...region } };
    }),
  };
}

/** Runs example `e` with the request body of `POST /v1/compilations/{id}/executions`. */
function execute(
  transport: Transport,
  compilation: string,
  e: number,
  body: unknown,
): Promise<ExecutionResponseJson> {
  return step(
    `example ${e}: execute`,
    () =>
      transport.json<ExecutionResponseJson>(
        "POST",
        `/v1/compilations/${segment(compilation)}/executions`,
        body,
      ),
  );
}

/** Executes one example with its inputs as JSON numbers and its outputs returned inline. */
function executeInline(
  transport: Transport,
  c: CtsCase,
  compilation: string,
  example: Example,
  e: number,
): Promise<ExecutionResponseJson> {
  const inputs = c.model.inputIndexes.map((operandIndex) => {
    const values = example.inputs[String(operandIndex)] ?? [];
    return values.length === 0 ? { omitted: true } : { data: values };
  });
  return execute(transport, compilation, e, { inputs, measureTiming: true });
}

/**
 * Executes one example with every given input a region of one input memory and every
 * output of non-zero expected size written to a region of one output memory sized by the
 * expected output; returns the response with those outputs' bytes read back from the
 * memory (as base64), so it is checked exactly as an inline one.
 */
async function executeThroughMemories(
  transport: Transport,
  c: CtsCase,
  compilation: string,
  example: Example,
  e: number,
  memories: Memories,
): Promise<ExecutionResponseJson> {
  const typeOf = (operandIndex: number) => c.model.operands[operandIndex].type;
  const inputValues = c.model.inputIndexes.map((i) => example.inputs[String(i)] ?? []);
  const inputs = pack(
    inputValues.map((values, k) =>
      values.length === 0 ? undefined : sizeOf(typeOf(c.model.inputIndexes[k]), values.length)
    ),
  );
  let inputMemory: Memory | undefined;
  if (inputs.regions.some((r) => r !== undefined)) {
    const bytes = new Uint8Array(inputs.size);
    inputs.regions.forEach((region, k) => {
      if (region) encodeInto(bytes, region.offset, typeOf(c.model.inputIndexes[k]), inputValues[k]);
    });
    inputMemory = await newMemory(`example ${e}: create input memory`, transport, bytes, memories);
  }
  const outputs = pack(c.model.outputIndexes.map((i) => {
    const length = sizeOf(typeOf(i), (example.outputs[String(i)] ?? []).length);
    return length === 0 ? undefined : length;
  }));
  let outputMemory: Memory | undefined;
  if (outputs.regions.some((r) => r !== undefined)) {
    outputMemory = await newMemory(
      `example ${e}: create output memory`,
      transport,
      { size: outputs.size },
      memories,
    );
  }
  const response = await execute(transport, compilation, e, {
    inputs: inputs.regions.map((region) =>
      region ? { memory: inputMemory!.id, ...region } : { omitted: true }
    ),
    outputs: outputs.regions.map((region) => region ? { memory: outputMemory!.id, ...region } : {}),
  });
  if (!outputMemory) return response;
  const written = await step(`example ${e}: read output memory`, () => outputMemory.read());
  return {
    ...response,
    outputs: response.outputs.map((output, k) => {
      const region = outputs.regions[k];
      if (!region) return output;
      if (output.data !== undefined || output.base64 !== undefined) {
        throw new Verdict(
          "failed",
          `example ${e}: output ${k} was written to a memory but came back with data too`,
        );
      }
      const type = typeOf(c.model.outputIndexes[k]);
      const length = sizeOf(type, elementCount(output.dimensions));
      if (length > region.length) {
        throw new Verdict(
          "failed",
          `example ${e}: output ${k} has dimensions [${output.dimensions}] (${length} bytes) but its memory region of ${region.length} bytes was accepted`,
        );
      }
      const bytes = written.subarray(region.offset, region.offset + length);
      return { dimensions: output.dimensions, base64: bytes.toBase64() };
    }),
  };
}

/** Runs one case inline or through memories, then deletes the memories it created. */
async function runCase(
  transport: Transport,
  c: CtsCase,
  options: { memory: boolean; devices?: readonly string[]; noFallback?: boolean },
): Promise<void> {
  const memories: Memories = [];
  let verdict: unknown;
  try {
    await runCaseSteps(transport, c, options.memory ? memories : undefined, options);
  } catch (error) {
    verdict = error;
  }
  for (const m of memories) {
    try {
      await step(`delete memory ${m.id}`, () => m.delete());
    } catch (error) {
      verdict ??= error;
    }
  }
  if (verdict !== undefined) throw verdict;
}

/**
 * Registers, checks support, compiles and executes one case (through memories when
 * `memories` collects them); throws a Verdict unless it passes.
 */
async function runCaseSteps(
  transport: Transport,
  c: CtsCase,
  memories: Memories | undefined,
  options: { devices?: readonly string[]; noFallback?: boolean },
): Promise<void> {
  const { devices } = options;
  const json = memories ? await poolConstants(transport, c, memories) : c.model;
  const model = await step(
    "register model",
    () => transport.json<{ id: string }>("POST", "/v1/models", json),
  );
  let verdict: unknown;
  try {
    const support = await step(
      "supported-operations",
      () =>
        transport.json<{ devices: DeviceSupport[] }>(
          "POST",
          `/v1/models/${segment(model.id)}/supported-operations`,
          devices ? { devices } : {},
        ),
    );
    const unsupported = c.model.operations
      .filter((_, k) => !support.devices.some((d) => d.supported[k]))
      .map((op) => op.type);
    if (unsupported.length > 0) {
      throw new Verdict("skipped", `unsupported: ${[...new Set(unsupported)].join(", ")}`);
    }
    const compilation = await step(
      "compile",
      () =>
        transport.json<{ id: string }>("POST", "/v1/compilations", {
          model: model.id,
          ...(devices ? { devices } : {}),
        }),
    );
    try {
      for (const [e, example] of (c.examples as Example[]).entries()) {
        const response = memories
          ? await executeThroughMemories(transport, c, compilation.id, example, e, memories)
          : await executeInline(transport, c, compilation.id, example, e);
        const fault = checkOutputs(c, example, response);
        if (fault) throw new Verdict("failed", `example ${e}: ${fault}`);
        const steps = (response as { timing?: { steps?: { fallback?: string }[] } }).timing?.steps;
        const fellBack = steps?.find((s) => s.fallback);
        if (options.noFallback && fellBack) {
          throw new Verdict("failed", `example ${e}: ran on cpu-reference: ${fellBack.fallback}`);
        }
      }
    } catch (error) {
      verdict = error;
    }
    try {
      await step(
        "delete compilation",
        () => transport.json("DELETE", `/v1/compilations/${segment(compilation.id)}`),
      );
    } catch (error) {
      verdict ??= error;
    }
  } catch (error) {
    verdict = error;
  }
  try {
    await step("delete model", () => transport.json("DELETE", `/v1/models/${segment(model.id)}`));
  } catch (error) {
    verdict ??= error;
  }
  if (verdict !== undefined) throw verdict;
}

/** Runs every selected case against the service and tallies the outcomes. */
export async function runConformance(options: ConformanceOptions): Promise<ConformanceReport> {
  const directory = options.directory ?? ctsDirectory();
  const transport = new Transport({ baseUrl: options.baseUrl, apiKey: options.apiKey });
  const report: ConformanceReport = {
    total: 0,
    passed: 0,
    failed: 0,
    skipped: 0,
    failures: [],
    skips: [],
    perOperation: {},
  };
  const cases = readCases(directory, options.versions, options.filter, options.signed);
  const worker = async () => {
    // Workers share the generator: each next() hands out a different case.
    for await (const c of cases) {
      const started = performance.now();
      let outcome: CaseResult["outcome"] = "passed";
      let reason: string | undefined;
      try {
        await runCase(transport, c, {
          memory: options.memory ?? false,
          devices: options.devices,
          noFallback: options.noFallback,
        });
      } catch (error) {
        outcome = error instanceof Verdict ? error.outcome : "failed";
        reason = describe(error);
      }
      const result: CaseResult = {
        name: c.name,
        spec: c.spec,
        outcome,
        reason,
        operations: operationsOf(c),
        ms: performance.now() - started,
      };
      report.total++;
      report[outcome]++;
      if (outcome !== "passed") {
        (outcome === "failed" ? report.failures : report.skips).push({
          name: c.name,
          reason: reason ?? "",
        });
      }
      for (const op of result.operations) {
        const tally = report.perOperation[op] ??= { passed: 0, failed: 0, skipped: 0 };
        tally[result.outcome]++;
      }
      options.onCase?.(result);
    }
  };
  const concurrency = Math.max(1, options.concurrency ?? 4);
  await Promise.all(Array.from({ length: concurrency }, worker));
  return report;
}
