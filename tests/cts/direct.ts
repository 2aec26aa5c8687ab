/**
 * In-process conformance runner for kernel development: runs CTS cases through model
 * validation, preparation and the executable, without HTTP.
 * Usage: deno run -A tests/cts/direct.ts [--filter RE] [--versions V1_0,V1_1] [--verbose]
 */
import { DriverError } from "../../nnapi/errors.ts";
import { Executable } from "../../driver/execution/executable.ts";
import { buildModel } from "../../driver/model/model.ts";
import { ModelSchema } from "../../driver/model/model_schema.ts";
import { prepareModel } from "../../driver/compilation/prepare.ts";
import { fromNumbers, isFullySpecified } from "../../nnapi/tensor.ts";
import type { OperandType } from "../../nnapi/types.ts";
import { compareOutput, type CtsCase, ctsDirectory, loadCases, operationsOf } from "./vectors.ts";

function runCase(c: CtsCase): string | undefined {
  const model = buildModel(ModelSchema.parse(c.model));
  const unsupported = model.operations.filter((op) => !op.supported).map((op) => op.type);
  if (unsupported.length > 0) return `skip: ${[...new Set(unsupported)].join(",")}`;
  const executable = new Executable(
    prepareModel(model, { preference: "FAST_SINGLE_ANSWER", priority: "MEDIUM" }),
  );
  for (const [e, example] of c.examples.entries()) {
    const inputs = model.inputIndexes.map((i) => {
      const values = example.inputs[String(i)] ?? [];
      const operand = model.operands[i];
      if (values.length === 0) return { data: null, shape: operand.dimensions };
      if (!isFullySpecified(operand.dimensions)) throw new Error(`input ${i} has unknown dims`);
      return { data: fromNumbers(operand.type as OperandType, values), shape: operand.dimensions };
    });
    const outputs = executable.run(inputs);
    for (const [k, operandIndex] of model.outputIndexes.entries()) {
      if (c.ignoredOutputs.includes(operandIndex)) continue;
      const expectedShape = example.outputShapes[String(operandIndex)];
      const got = outputs[k];
      if (expectedShape && expectedShape.join(",") !== got.shape.join(",")) {
        return `example ${e} output ${k}: shape [${got.shape}] != expected [${expectedShape}]`;
      }
      const fault = compareOutput(
        model.operands[operandIndex].type,
        example.outputs[String(operandIndex)] ?? [],
        got.data as ArrayLike<number>,
        c.tolerance,
      );
      if (fault) return `example ${e} output ${k}: ${fault}`;
    }
  }
  return undefined;
}

function argument(name: string): string | undefined {
  const i = Deno.args.indexOf(name);
  return i >= 0 ? Deno.args[i + 1] : undefined;
}

if (import.meta.main) {
  let dir: string;
  try {
    dir = ctsDirectory();
  } catch (error) {
    console.error(`cts: ${(error as Error).message}`);
    Deno.exit(1);
  }
  const filter = argument("--filter");
  const versions = (argument("--versions") ?? "V1_0").split(",");
  const verbose = Deno.args.includes("--verbose");
  const cases = await loadCases(dir, { versions, filter: filter ? new RegExp(filter) : undefined });
  let passed = 0, failed = 0, skipped = 0;
  const perOperation = new Map<string, { passed: number; failed: number; skipped: number }>();
  for (const c of cases) {
    let fault: string | undefined;
    const started = performance.now();
    try {
      fault = runCase(c);
    } catch (error) {
      fault = error instanceof DriverError
        ? `${error.status}: ${error.message}`
        : `crash: ${(error as Error).stack}`;
    }
    const ms = performance.now() - started;
    const outcome = fault === undefined
      ? "passed"
      : fault.startsWith("skip")
      ? "skipped"
      : "failed";
    if (outcome === "passed") passed++;
    else if (outcome === "skipped") skipped++;
    else failed++;
    for (const op of operationsOf(c)) {
      const row = perOperation.get(op) ?? { passed: 0, failed: 0, skipped: 0 };
      row[outcome]++;
      perOperation.set(op, row);
    }
    if (outcome === "failed" || verbose) {
      console.log(
        `${outcome.toUpperCase()} ${c.name} (${ms.toFixed(0)} ms)${fault ? `: ${fault}` : ""}`,
      );
    }
  }
  for (const [op, row] of [...perOperation].sort()) {
    console.log(
      `${op.padEnd(30)} ${row.passed} passed, ${row.failed} failed, ${row.skipped} skipped`,
    );
  }
  console.log(`cts: ${passed} passed, ${failed} failed, ${skipped} skipped`);
}
