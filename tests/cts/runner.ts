/**
 * The NNAPI CTS conformance suite over HTTP: every case's model is registered exactly as the
 * vectors give it, checked for support, compiled and executed through the API of API.md,
 * and its outputs compared with the CTS tolerances. Used by the `deno task cts` CLI
 * (`main.ts`) and by tests.
 */
import { NnapiError, Transport } from "../../client/http.ts";
import { decodeBase64 } from "../../client/tensor.ts";
import type { DeviceSupport, ExecutionResponseJson, OperandType } from "../../client/types.ts";
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
        if (!filter || filter.test(c.name)) yield c;
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
  if (output.data !== undefined) return output.data;
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

/** Registers, checks support, compiles and executes one case; throws a Verdict unless it passes. */
async function runCase(transport: Transport, c: CtsCase): Promise<void> {
  const model = await step(
    "register model",
    () => transport.json<{ id: string }>("POST", "/v1/models", c.model),
  );
  let verdict: unknown;
  try {
    const support = await step(
      "supported-operations",
      () =>
        transport.json<{ devices: DeviceSupport[] }>(
          "POST",
          `/v1/models/${segment(model.id)}/supported-operations`,
          {},
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
      () => transport.json<{ id: string }>("POST", "/v1/compilations", { model: model.id }),
    );
    try {
      for (const [e, example] of (c.examples as Example[]).entries()) {
        const inputs = c.model.inputIndexes.map((operandIndex) => {
          const values = example.inputs[String(operandIndex)] ?? [];
          return values.length === 0 ? { omitted: true } : { data: values };
        });
        const response = await step(
          `example ${e}: execute`,
          () =>
            transport.json<ExecutionResponseJson>(
              "POST",
              `/v1/compilations/${segment(compilation.id)}/executions`,
              { inputs },
            ),
        );
        const fault = checkOutputs(c, example, response);
        if (fault) throw new Verdict("failed", `example ${e}: ${fault}`);
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
  if (directory === undefined) throw new Error("the CTS vectors are not available");
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
  const cases = readCases(directory, options.versions, options.filter);
  const worker = async () => {
    // Workers share the generator: each next() hands out a different case.
    for await (const c of cases) {
      const started = performance.now();
      let outcome: CaseResult["outcome"] = "passed";
      let reason: string | undefined;
      try {
        await runCase(transport, c);
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
