/**
 * Loads the NNAPI CTS conformance vectors exactly as they are, and compares results with the
 * CTS tolerances. The vectors live in the repository as `nnapi-cts.tar.xz` (75 MB of JSON,
 * 2.6 MB packed; their provenance and Apache 2.0 licence in `NNAPI_CTS_NOTICE.md` and in the
 * archive's README) and are unpacked beside it on first use; NNSERVE_CTS_DIR names another
 * copy.
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

/** The packed vectors; a new set gets a new name, so an old unpacked copy is never read. */
const ARCHIVE = new URL("./nnapi-cts.tar.xz", import.meta.url);
/** Where they are unpacked (git-ignored), one directory per archive name. */
const UNPACKED = new URL("./.vectors/nnapi-cts.tar.xz/", import.meta.url);

/**
 * The directory holding the vectors: NNSERVE_CTS_DIR when set, else the repository's own,
 * unpacked on first use (`tar` with `xz`). Missing vectors are an error naming where they
 * were expected, never an empty run: a conformance check with nothing to check must not
 * pass.
 */
export function ctsDirectory(): string {
  const given = Deno.env.get("NNSERVE_CTS_DIR");
  const dir = given ?? fileURLToPath(new URL("./nnapi-cts", UNPACKED));
  if (!given && !hasIndex(dir)) unpackVectors();
  if (hasIndex(dir)) return dir;
  throw new Error(
    `the NNAPI CTS vectors are missing: expected ${dir}/index.json ` +
      (given ? "(NNSERVE_CTS_DIR)" : `(unpacked from ${fileURLToPath(ARCHIVE)})`),
  );
}

function hasIndex(dir: string): boolean {
  try {
    return Deno.statSync(`${dir}/index.json`).isFile;
  } catch {
    return false;
  }
}

/**
 * Unpacks the archive into a fresh directory and renames it into place: test files running
 * in parallel may unpack at once, and the one renaming first wins (the others' copies go).
 */
function unpackVectors(): void {
  const target = fileURLToPath(UNPACKED);
  const parent = fileURLToPath(new URL("../", UNPACKED));
  Deno.mkdirSync(parent, { recursive: true });
  const scratch = Deno.makeTempDirSync({ dir: parent, prefix: "unpacking-" });
  let placed = false;
  try {
    const tar = new Deno.Command("tar", {
      args: ["-xJf", fileURLToPath(ARCHIVE), "-C", scratch],
      stderr: "piped",
    }).outputSync();
    if (!tar.success) {
      throw new Error(
        `could not unpack ${fileURLToPath(ARCHIVE)} (tar with xz): ` +
          new TextDecoder().decode(tar.stderr).trim(),
      );
    }
    try {
      Deno.renameSync(scratch, target);
      placed = true;
    } catch (error) {
      // Another test file unpacked them first.
      if (!hasIndex(`${target}/nnapi-cts`)) throw error;
    }
  } finally {
    // A copy that did not become the vectors (another's won, or unpacking failed) goes.
    if (!placed) Deno.removeSync(scratch, { recursive: true });
  }
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
