/**
 * Loads the NNAPI CTS conformance vectors from `../shared/nnapi-cts` (or NNSERVE_CTS_DIR)
 * exactly as they are, and compares results with the CTS tolerances.
 */
import { fileURLToPath } from "node:url";

/** One CTS test case (see the vectors' README for the format). */
export interface CtsCase {
  spec: string;
  name: string;
  testSuite: string;
  introducedIn: string | null;
  model: Record<string, unknown> & {
    operands: { type: string; dimensions: number[] }[];
    operations: { type: string; inputs: number[]; outputs: number[] }[];
    inputIndexes: number[];
    outputIndexes: number[];
  };
  examples: {
    inputs: Record<string, number[]>;
    outputs: Record<string, number[]>;
    outputShapes: Record<string, number[]>;
  }[];
  ignoredOutputs: number[];
  tolerance: { fpAtol: number; fpRtol: number; quant8: number; quant16: number };
  dynamicOutputShape: boolean;
}

/**
 * The directory holding the vectors. Missing vectors are an error naming where they were
 * expected, never an empty run: a conformance check with nothing to check must not pass.
 */
export function ctsDirectory(): string {
  const dir = Deno.env.get("NNSERVE_CTS_DIR") ??
    fileURLToPath(new URL("../../../shared/nnapi-cts", import.meta.url));
  try {
    if (Deno.statSync(`${dir}/index.json`).isFile) return dir;
  } catch {
    // reported below
  }
  throw new Error(
    `the NNAPI CTS vectors are missing: expected ${dir}/index.json ` +
      "(../shared/nnapi-cts beside the project, or set NNSERVE_CTS_DIR)",
  );
}

/** Reads every case of the given versions whose name matches the filter. */
export async function loadCases(
  dir: string,
  options: { versions: string[]; filter?: RegExp },
): Promise<CtsCase[]> {
  const cases: CtsCase[] = [];
  for (const version of options.versions) {
    const files = [...Deno.readDirSync(`${dir}/${version}`)]
      .filter((e) => e.name.endsWith(".json"))
      .map((e) => e.name)
      .sort();
    for (const file of files) {
      const all = JSON.parse(await Deno.readTextFile(`${dir}/${version}/${file}`)) as CtsCase[];
      for (const c of all) {
        if (!options.filter || options.filter.test(c.name)) cases.push(c);
      }
    }
  }
  return cases;
}

/** Float32 rounding of the CTS harness's tolerance check. */
const f32 = Math.fround;

/**
 * Compares one output with the CTS rules; returns a description of the first mismatch or
 * undefined when it passes.
 */
export function compareOutput(
  type: string,
  expected: readonly number[],
  actual: ArrayLike<number>,
  tolerance: CtsCase["tolerance"],
): string | undefined {
  if (expected.length !== actual.length) {
    return `expected ${expected.length} values, got ${actual.length}`;
  }
  let worst: string | undefined;
  let mismatches = 0;
  for (let i = 0; i < expected.length; i++) {
    const e = expected[i];
    const a = Number(actual[i]);
    let ok: boolean;
    if (type === "TENSOR_FLOAT32" || type === "TENSOR_FLOAT16") {
      ok = Math.abs(f32(e - a)) <= f32(tolerance.fpAtol + f32(tolerance.fpRtol * Math.abs(e)));
    } else if (type.startsWith("TENSOR_QUANT8")) {
      ok = Math.abs(e - a) <= tolerance.quant8;
    } else if (type.startsWith("TENSOR_QUANT16")) {
      ok = Math.abs(e - a) <= tolerance.quant16;
    } else {
      ok = e === a;
    }
    if (!ok) {
      mismatches++;
      worst ??= `value[${i}]: expected ${e}, got ${a}`;
    }
  }
  return worst && `${mismatches} of ${expected.length} values differ; first ${worst}`;
}

/** The operation types a case uses, for per-operation tables. */
export function operationsOf(c: CtsCase): string[] {
  return [...new Set(c.model.operations.map((op) => op.type))];
}
