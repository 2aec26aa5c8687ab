/**
 * `deno task onnx:compare <file.onnx> [input=1x3x224x224 ...] [--value sr=16000 ...] [--fixed]
 * [--import-shape x=1x3x48x?] [--fix-values] [--runs N] [--seed N] [--url http://host:port]`:
 * runs an ONNX model in nnserve (converted, registered, compiled and executed over HTTP; an in-process server unless --url is given) and in
 * onnxruntime-node on the same seeded random inputs (float inputs; integer and boolean inputs
 * take the values `--value` gives), and prints the largest absolute and relative error of
 * every output, with both run times. `--fixed` specializes the model to the given shapes at
 * conversion; otherwise they are given at execution. `--import-shape x=1x3x48x?` fixes what
 * it gives at conversion instead (`?` keeps an extent to execution, as `?shape=` does).
 * `--fix-values` fixes the `--value` inputs at conversion (as `?value=` does) instead of
 * sending them. `--runs N` also times N more executions in each engine and prints the
 * medians (onnxruntime on one thread; nnserve with the threads its server has).
 */
import { parseArgs } from "node:util";
import * as ort from "onnxruntime-node";
import { convertOnnx, type OnnxConversion } from "../converter/onnx/convert.ts";
import { decodeOnnx, type Int64, int64, list } from "../converter/onnx/decode.ts";
import { seededFloats } from "../kernels/seeded_random.ts";
import { startServer } from "../server.ts";

/** One output's agreement. */
export interface OutputComparison {
  name: string;
  dimensions: number[];
  /** onnxruntime's shape; a mismatch is reported, not thrown. */
  expectedDimensions: number[];
  maxAbsoluteError: number;
  maxRelativeError: number;
  /** nnserve's values and onnxruntime's, for callers that check them element by element. */
  actual: number[];
  expected: number[];
}

export interface ModelComparison {
  conversion: OnnxConversion;
  outputs: OutputComparison[];
  /** The first execution's time (ms), and the median of `runs` more when asked. */
  nnserveMs: number;
  onnxRuntimeMs: number;
  steady?: { runs: number; nnserveMs: number; onnxRuntimeMs: number };
}

export interface CompareOptions {
  seed?: number;
  /** Seeded inputs lie in [-scale/2, scale/2). */
  scale?: number;
  /** Specialize the model to the input shapes at conversion. */
  fixed?: boolean;
  /** Shapes fixed at conversion instead (0 keeps an extent as the file has it). */
  importShapes?: Record<string, number[]>;
  /** The absolute error allowed (tests): 1e-4 unless said, e.g. one quantization step. */
  tolerance?: number;
  /** Values of inputs by name (required for non-float inputs: sample rates, token ids). */
  values?: Record<string, number[]>;
  /** Fix the `values` at conversion (they are then not inputs of nnserve's model). */
  fixValues?: boolean;
  /**
   * onnxruntime's graph optimizations (default all). "disabled" keeps a QDQ model's float
   * operations between its quantize steps, as its ONNX definition reads, instead of fusing
   * them into integer kernels that round differently.
   */
  ortOptimization?: "disabled" | "all";
  /**
   * An equivalent ONNX file for onnxruntime to run instead, where it refuses a form the
   * converter takes (e.g. ConvInteger's per-channel weight zero points).
   */
  oracle?: Uint8Array;
  /** Runs after the first to time in both engines (median; one thread in onnxruntime). */
  runs?: number;
}

/** The median time (ms) of `runs` calls of `run`, one after the other. */
async function medianMs(runs: number, run: () => Promise<unknown>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    await run();
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

/** onnxruntime's tensor types for the converter's input element types. */
const ORT_TYPES = {
  float32: "float32",
  float16: "float16",
  int64: "int64",
  int32: "int32",
  bool: "bool",
} as const;

/** An input's feed: given values, or seeded floats in [-scale/2, scale/2). */
/** What a feed needs to know of its input. */
type FeedInfo = { name: string; elementType: string };

function feedValues(
  info: FeedInfo,
  count: number,
  seed: number,
  options: CompareOptions,
): number[] {
  const given = options.values?.[info.name];
  if (given) {
    if (given.length !== count) {
      throw new Error(`${given.length} values given for input '${info.name}' of ${count}`);
    }
    return given;
  }
  if (info.elementType !== "float32" && info.elementType !== "float16") {
    throw new Error(`give values for the ${info.elementType} input '${info.name}'`);
  }
  return Array.from(seededFloats(count, seed, options.scale ?? 2));
}

/** An onnxruntime tensor of an input's values. */
function ortTensor(info: FeedInfo, values: number[], dims: number[]) {
  const type = ORT_TYPES[info.elementType as keyof typeof ORT_TYPES];
  if (!type) throw new Error(`input '${info.name}' has element type ${info.elementType}`);
  switch (type) {
    case "int64":
      return new ort.Tensor(type, BigInt64Array.from(values, BigInt), dims);
    case "int32":
      return new ort.Tensor(type, Int32Array.from(values), dims);
    case "bool":
      return new ort.Tensor(type, Uint8Array.from(values), dims);
    case "float16":
      // onnxruntime takes float16 as its bits.
      return new ort.Tensor(type, new Uint16Array(Float16Array.from(values).buffer), dims);
    default:
      return new ort.Tensor(type, Float32Array.from(values), dims);
  }
}

async function call(baseUrl: string, method: string, path: string, body: unknown) {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const json = await response.json();
  if (!response.ok) {
    throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`);
  }
  return json;
}

/** `?shape=` and `?value=` of an ONNX import (a scalar's shape needs no fixing). */
function importQuery(
  shapes: Record<string, number[]> | undefined,
  values: Record<string, number[]> | undefined,
): string {
  const params = new URLSearchParams();
  for (const [name, dims] of Object.entries(shapes ?? {})) {
    if (dims.some((d) => d > 0)) {
      params.append("shape", `${name}:${dims.map((d) => d > 0 ? d : "?").join("x")}`);
    }
  }
  for (const [name, given] of Object.entries(values ?? {})) {
    params.append("value", `${name}:${given.join(",")}`);
  }
  return params.size > 0 ? `?${params}` : "";
}

/** POSTs the file to nnserve's ONNX import; returns the model's info. */
async function importOnnx(
  baseUrl: string,
  bytes: Uint8Array,
  shapes: Record<string, number[]> | undefined,
  values: Record<string, number[]> | undefined,
) {
  const path = `/v1/models${importQuery(shapes, values)}`;
  const response = await fetch(`${baseUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/onnx" },
    body: new Uint8Array(bytes),
  });
  const json = await response.json();
  if (!response.ok) throw new Error(`POST ${path}: ${response.status} ${JSON.stringify(json)}`);
  return json;
}

/** Runs the model in nnserve (at `baseUrl`) and in onnxruntime-node and compares outputs. */
export async function compareWithOnnxRuntime(
  baseUrl: string,
  bytes: Uint8Array,
  shapes: Record<string, number[]>,
  options: CompareOptions = {},
): Promise<ModelComparison> {
  const seed = options.seed ?? 1;
  const conversion = convertOnnx(bytes, {
    ...(options.fixed ? { shapes } : options.importShapes ? { shapes: options.importShapes } : {}),
    ...(options.fixValues ? { values: options.values } : {}),
  });
  const feeds: Record<string, { info: FeedInfo; dims: number[]; data: number[] }> = Object
    .fromEntries(conversion.inputs.map((info, i) => {
      const dims = shapes[info.name];
      if (!dims) throw new Error(`no shape given for input '${info.name}'`);
      const n = dims.reduce((a, b) => a * b, 1);
      return [info.name, { info, dims, data: feedValues(info, n, seed + i, options) }];
    }));
  for (const fixed of conversion.fixedInputs) {
    const dims = shapes[fixed.name] ?? fixed.dimensions;
    feeds[fixed.name] = { info: fixed, dims, data: fixed.values };
  }

  const session = await ort.InferenceSession.create(options.oracle ?? bytes, {
    graphOptimizationLevel: options.ortOptimization ?? "all",
    // One thread: the timings are comparable from run to run on a shared machine.
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
  });
  let expected: ort.InferenceSession.OnnxValueMapType;
  const ortFeeds = Object.fromEntries(
    Object.entries(feeds).map(([k, v]) => [k, ortTensor(v.info, v.data, v.dims)]),
  );
  const ortStarted = performance.now();
  let ortSteadyMs: number | undefined;
  try {
    expected = await session.run(ortFeeds);
    if (options.runs) ortSteadyMs = await medianMs(options.runs, () => session.run(ortFeeds));
  } finally {
    await session.release();
  }
  const onnxRuntimeMs = performance.now() - ortStarted;

  // Imported as users import it (the ONNX route, its ?shape= and ?value=), so its answers
  // are those users get (ONNX scalars answered as scalars).
  const model = await importOnnx(
    baseUrl,
    bytes,
    options.fixed ? shapes : options.importShapes,
    options.fixValues ? options.values : undefined,
  );
  const compilation = await call(baseUrl, "POST", "/v1/compilations", { model: model.id });
  const execute = () =>
    call(baseUrl, "POST", `/v1/compilations/${compilation.id}/executions`, {
      inputs: conversion.inputs.map((info) => ({
        data: feeds[info.name].data,
        ...(info.dimensions.includes(0) ? { dimensions: feeds[info.name].dims } : {}),
      })),
    });
  const started = performance.now();
  const execution = await execute();
  const nnserveMs = performance.now() - started;
  const steady = options.runs
    ? {
      runs: options.runs,
      nnserveMs: await medianMs(options.runs, execute),
      onnxRuntimeMs: ortSteadyMs!,
    }
    : undefined;

  const outputs = conversion.outputs.map((info, i): OutputComparison => {
    const got = execution.outputs[i] as { dimensions: number[]; data: number[] };
    const want = expected[info.name] as ort.Tensor;
    const reference = Array.from(want.data as ArrayLike<number | bigint>, Number);
    const actual = got.data.map(Number);
    let maxAbsoluteError = 0;
    let maxRelativeError = 0;
    reference.forEach((e, k) => {
      const error = Math.abs(actual[k] - e);
      maxAbsoluteError = Math.max(maxAbsoluteError, error);
      if (e !== 0) maxRelativeError = Math.max(maxRelativeError, error / Math.abs(e));
    });
    return {
      name: info.name,
      dimensions: got.dimensions,
      expectedDimensions: [...want.dims],
      maxAbsoluteError,
      maxRelativeError,
      actual,
      expected: reference,
    };
  });
  return { conversion, outputs, nnserveMs, onnxRuntimeMs, steady };
}

function parseShape(text: string): [string, number[]] {
  const at = text.lastIndexOf("=");
  if (at < 0) throw new Error(`'${text}' is not name=DxDxD (or name= for a scalar)`);
  const dims = text.slice(at + 1);
  return [text.slice(0, at), dims === "" ? [] : dims.split("x").map(Number)];
}

/** `name=1x3x48x?` for --import-shape: `?` keeps an extent as the file has it (0). */
function parseImportShape(text: string): [string, number[]] {
  const [name, dims] = parseShape(text.replaceAll("?", "0"));
  return [name, dims];
}

function parseValues(text: string): [string, number[]] {
  const at = text.lastIndexOf("=");
  if (at < 0) throw new Error(`'${text}' is not name=V,V,...`);
  return [text.slice(0, at), text.slice(at + 1).split(",").map(Number)];
}

async function main() {
  const { values, positionals } = parseArgs({
    args: Deno.args,
    allowPositionals: true,
    options: {
      fixed: { type: "boolean", default: false },
      seed: { type: "string", default: "1" },
      url: { type: "string" },
      value: { type: "string", multiple: true, default: [] },
      "fix-values": { type: "boolean", default: false },
      "import-shape": { type: "string", multiple: true, default: [] },
      runs: { type: "string", default: "0" },
    },
  });
  const [file, ...shapeArgs] = positionals;
  if (!file) {
    console.error(
      "usage: deno task onnx:compare <file.onnx> [input=1x3x224x224 ...] [--value sr=16000] " +
        "[--fixed | --import-shape x=1x3x48x?] [--fix-values] [--runs N]",
    );
    Deno.exit(2);
  }
  const bytes = await Deno.readFile(file);
  const shapes = Object.fromEntries(shapeArgs.map(parseShape));
  // Inputs without a given shape take their fixed ONNX shape.
  const { graph } = decodeOnnx(bytes);
  const initializers = new Set(list(graph.initializer).map((t) => t.name));
  for (const input of list(graph.input)) {
    const name = input.name ?? "";
    if (initializers.has(name) || shapes[name]) continue;
    const dims = list(input.type?.tensorType?.shape?.dim).map((d) =>
      d.dimValue ? int64(d.dimValue as Int64) : 0
    );
    if (dims.includes(0)) throw new Error(`give a shape for input '${name}'`);
    shapes[name] = dims;
  }
  let baseUrl = values.url;
  let stop: (() => Promise<void>) | undefined;
  if (!baseUrl) {
    const dataDir = await Deno.makeTempDir({ prefix: "nnserve-onnx-compare-" });
    const server = await startServer({ hostname: "127.0.0.1", port: 0, dataDir, verbose: false });
    baseUrl = server.url;
    stop = async () => {
      await server.close();
      await Deno.remove(dataDir, { recursive: true });
    };
  }
  try {
    const result = await compareWithOnnxRuntime(baseUrl, bytes, shapes, {
      seed: Number(values.seed),
      fixed: values.fixed,
      values: Object.fromEntries(values.value.map(parseValues)),
      fixValues: values["fix-values"],
      runs: Number(values.runs),
      importShapes: values["import-shape"].length > 0
        ? Object.fromEntries(values["import-shape"].map(parseImportShape))
        : undefined,
    });
    console.log(
      `${file}: opset ${result.conversion.opset}, ` +
        `${result.conversion.model.operations.length} NNAPI operations`,
    );
    for (const note of result.conversion.notes) console.log(`  note: ${note}`);
    for (const o of result.outputs) {
      console.log(
        `  ${o.name} [${o.dimensions}]: max abs error ${o.maxAbsoluteError.toExponential(2)}, ` +
          `max rel error ${o.maxRelativeError.toExponential(2)}` +
          (o.dimensions.join() === o.expectedDimensions.join()
            ? ""
            : ` (onnxruntime [${o.expectedDimensions}])`),
      );
    }
    console.log(
      `  first run: nnserve ${result.nnserveMs.toFixed(1)} ms (HTTP, JSON), onnxruntime-node ` +
        `${result.onnxRuntimeMs.toFixed(1)} ms`,
    );
    if (result.steady) {
      console.log(
        `  median of ${result.steady.runs} more: nnserve ${
          result.steady.nnserveMs.toFixed(2)
        } ms ` +
          `(HTTP, JSON), onnxruntime-node ${result.steady.onnxRuntimeMs.toFixed(2)} ms (1 thread)`,
      );
    }
  } finally {
    await stop?.();
  }
}

if (import.meta.main) await main();
