/**
 * The client SDK stands alone: no module under client/ imports anything outside client/
 * (so it bundles for browsers and Node without the service), but for the gRPC client
 * (client/grpc.ts, for Deno and Node only), which imports its gRPC libraries and nothing
 * of the service, and which no other SDK module imports. The vocabulary and the burst
 * frame layout live in client/ and the service uses them from there; what the SDK still
 * keeps as its own copy (fuse and padding codes, tensor helpers) agrees with the service's,
 * and frames one side writes the other reads back unchanged.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import * as sdkFrames from "../client/burst_frames.ts";
import * as sdkTensor from "../client/tensor.ts";
import * as sdk from "../client/types.ts";
import * as driverFrames from "../driver/burst/protocol.ts";
import * as nnapiErrors from "../nnapi/errors.ts";
import * as nnapiTensor from "../nnapi/tensor.ts";
import * as nnapiTypes from "../nnapi/types.ts";

const CLIENT = new URL("../client/", import.meta.url);

/**
 * Every module specifier of a TypeScript source: `import ... from "x"`, `import "x"`,
 * `export ... from "x"` (type-only ones too) and `import("x")`. Comments are removed first
 * so that examples in doc comments do not count.
 */
function moduleSpecifiers(source: string): string[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
  const patterns = [
    /\b(?:import|export)\s+(?:type\s+)?[^"';]*?\bfrom\s*["']([^"']+)["']/g,
    /\bimport\s*["']([^"']+)["']/g,
    /\bimport\s*\(\s*["']([^"']+)["']\s*\)/g,
  ];
  return patterns.flatMap((pattern) => [...code.matchAll(pattern)].map((m) => m[1]));
}

/** What the gRPC client alone may import beyond client/: its libraries. */
const GRPC_CLIENT_IMPORTS = ["@grpc/grpc-js", "@grpc/proto-loader", "node:buffer", "node:url"];

/** Why `specifier`, imported by client/`file`, leaves client/; undefined when it does not. */
function escapes(file: string, specifier: string): string | undefined {
  if (file === "grpc.ts" && GRPC_CLIENT_IMPORTS.includes(specifier)) return undefined;
  if (file !== "grpc.ts" && /(^|\/)grpc\.ts$/.test(specifier)) {
    return `${file} imports the gRPC client, which browsers cannot load: keep it apart`;
  }
  if (!specifier.startsWith("./") && !specifier.startsWith("../")) {
    return `${file} imports "${specifier}": only relative imports within client/ are allowed`;
  }
  const target = new URL(specifier, new URL(file, CLIENT));
  if (!target.href.startsWith(CLIENT.href)) {
    return `${file} imports "${specifier}", which resolves outside client/ (${target.pathname})`;
  }
  return undefined;
}

Deno.test("moduleSpecifiers() finds static, type-only, re-export, side-effect and dynamic imports", () => {
  const source = `
    /** An example: import { x } from "../in/a/comment.ts"; */
    // import { y } from "npm:commented-out";
    import { a, type B } from "./a.ts";
    import type {
      C,
      D,
    } from "../nnapi/types.ts";
    import "./side_effect.ts";
    export { e } from "./e.ts";
    export type { F } from "jsr:@std/f";
    export * from "npm:g";
    const h = await import("./h.ts");
  `;
  deepStrictEqual(moduleSpecifiers(source).sort(), [
    "../nnapi/types.ts",
    "./a.ts",
    "./e.ts",
    "./h.ts",
    "./side_effect.ts",
    "jsr:@std/f",
    "npm:g",
  ]);
  strictEqual(escapes("a.ts", "./b.ts"), undefined);
  ok(escapes("a.ts", "../nnapi/types.ts"));
  ok(escapes("a.ts", "./sub/../../server.ts"));
  ok(escapes("a.ts", "npm:hono"));
  ok(escapes("a.ts", "hono"));
  ok(escapes("a.ts", "https://example.com/x.ts"));
  strictEqual(escapes("grpc.ts", "@grpc/grpc-js"), undefined);
  ok(escapes("grpc.ts", "hono"));
  ok(escapes("a.ts", "@grpc/grpc-js"));
  ok(escapes("mod.ts", "./grpc.ts"));
});

Deno.test("no module under client/ imports anything outside client/", async () => {
  const problems: string[] = [];
  let files = 0;
  let specifiers = 0;
  for await (const entry of Deno.readDir(CLIENT)) {
    if (!entry.isFile || !entry.name.endsWith(".ts")) continue;
    files++;
    const source = await Deno.readTextFile(new URL(entry.name, CLIENT));
    for (const specifier of moduleSpecifiers(source)) {
      specifiers++;
      const problem = escapes(entry.name, specifier);
      if (problem) problems.push(problem);
    }
  }
  ok(files >= 10 && specifiers >= 20, `read ${files} files, ${specifiers} imports`);
  deepStrictEqual(problems, []);
});

/** Compile-time: the SDK's and the service's types accept exactly the same values. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const sameTypes: [
  Same<sdk.OperandType, nnapiTypes.OperandType>,
  Same<sdk.OperationType, nnapiTypes.OperationType>,
  Same<sdk.Lifetime, nnapiTypes.Lifetime>,
  Same<sdk.ErrorStatus, nnapiErrors.ErrorStatus>,
  Same<sdk.OutputShape, nnapiErrors.OutputShape>,
  Same<sdk.ChannelQuant, nnapiTensor.ChannelQuant>,
  Same<sdkTensor.JsonNumber, nnapiTensor.JsonNumber>,
  Same<sdkTensor.TensorArray, nnapiTensor.TensorData>,
] = [true, true, true, true, true, true, true, true];

Deno.test("the SDK's vocabulary is the service's; its fuse and padding codes agree", () => {
  ok(sameTypes.every(Boolean));
  strictEqual(sdk.OPERAND_TYPES, nnapiTypes.OPERAND_TYPES, "one list, not a copy");
  strictEqual(sdk.ERROR_STATUSES, nnapiErrors.ERROR_STATUSES, "one list, not a copy");
  deepStrictEqual(sdk.FuseCode, {
    NONE: nnapiTypes.FUSED_NONE,
    RELU: nnapiTypes.FUSED_RELU,
    RELU1: nnapiTypes.FUSED_RELU1,
    RELU6: nnapiTypes.FUSED_RELU6,
  });
  deepStrictEqual(sdk.PaddingCode, {
    SAME: nnapiTypes.PADDING_SAME,
    VALID: nnapiTypes.PADDING_VALID,
  });
});

Deno.test("the SDK's tensor helpers map every operand type as the service does", () => {
  const bytes = Uint8Array.from({ length: 17 }, (_, i) => i * 13);
  for (const type of nnapiTypes.OPERAND_TYPES) {
    strictEqual(sdkTensor.elementBytes(type), nnapiTensor.elementBytes(type), type);
    strictEqual(sdkTensor.isScalarType(type), nnapiTensor.isScalarType(type), type);
    const width = nnapiTensor.elementBytes(type);
    // The same class and values, aligned (a view) and misaligned (a copy).
    for (const offset of [0, 1]) {
      const slice = bytes.subarray(offset, offset + 2 * width);
      const ours = sdkTensor.fromLittleEndian(type, slice);
      const theirs = nnapiTensor.viewBytes(type, slice);
      strictEqual(ours.constructor, theirs.constructor, `${type} at ${offset}`);
      deepStrictEqual(Array.from(ours), Array.from(theirs), `${type} at ${offset}`);
    }
    strictEqual(
      sdkTensor.toTensorArray(type, [1, 2]).constructor,
      nnapiTensor.allocate(type, 0).constructor,
      type,
    );
  }
  for (const shape of [[], [3], [2, 0, 4], [1, 2, 3]]) {
    strictEqual(sdkTensor.elementCount(shape), nnapiTensor.elementCount(shape));
  }
  for (const value of [1.5, -0, NaN, Infinity, -Infinity]) {
    deepStrictEqual(sdkTensor.toJsonNumber(value), nnapiTensor.toJsonNumber(value));
    const json = nnapiTensor.toJsonNumber(value);
    deepStrictEqual(sdkTensor.fromJsonNumber(json), nnapiTensor.fromJsonNumber(json));
  }
});

/** Requests of every argument kind, with and without dimensions, timing and deadlines. */
function sampleRequests(): sdkFrames.BurstRequest[] {
  return [
    { id: 0, measureTiming: false, deadlineUs: 0, inputs: [], outputs: [] },
    {
      id: 0xfffffffe,
      measureTiming: true,
      deadlineUs: 2_500_000,
      inputs: [
        { kind: "inline", bytes: Uint8Array.of(1, 2, 3), dimensions: [3] },
        { kind: "slot", slot: 7, offset: 16, length: 12, dimensions: [1, 3] },
        { kind: "omitted" },
        { kind: "inline", bytes: new Uint8Array(0), dimensions: [] },
        { kind: "inline", bytes: Uint8Array.of(9, 8, 7, 6, 5, 4, 3, 2, 1) },
      ],
      outputs: [
        { kind: "inline", bytes: Uint8Array.of(5), dimensions: [2, 2] },
        { kind: "slot", slot: 0xffffffff, offset: 0, length: 8 },
      ],
    },
  ];
}

/** Results of every status, with outputs, timing and a non-ASCII message. */
function sampleResults(): sdkFrames.BurstResult[] {
  return [
    {
      id: 3,
      status: "NONE",
      message: "",
      outputs: [
        { dimensions: [], isSufficient: true, bytes: Uint8Array.of(9) },
        { dimensions: [2, 3, 1], isSufficient: true, bytes: Uint8Array.of(1, 2, 3, 4, 5, 6) },
        { dimensions: [4], isSufficient: true, bytes: new Uint8Array(0) },
      ],
      timing: { onDeviceUs: 12.5, inDriverUs: 40 },
    },
    ...nnapiErrors.ERROR_STATUSES.map((status, k): sdkFrames.BurstResult => ({
      id: 100 + k,
      status,
      message: `${status}: 8 bytes needed, 4 given — ünïcode`,
      outputs: [{ dimensions: [2], isSufficient: false, bytes: new Uint8Array(0) }],
    })),
  ];
}

/** A decoded result with its byte views as plain arrays, to compare by content. */
function plain(result: sdkFrames.BurstResult) {
  return { ...result, outputs: result.outputs.map((o) => ({ ...o, bytes: [...o.bytes] })) };
}

Deno.test("burst frames the SDK writes the service reads, and the other way round", () => {
  for (const request of sampleRequests()) {
    const decoded = driverFrames.decodeRequest(sdkFrames.encodeRequest(request));
    // As JSON: bytes as arrays, absent and undefined dimensions alike.
    const inlineBytes = (args: sdkFrames.BurstArgument[]) =>
      JSON.parse(
        JSON.stringify(args.map((a) => a.kind === "inline" ? { ...a, bytes: [...a.bytes] } : a)),
      );
    deepStrictEqual(inlineBytes(decoded.inputs), inlineBytes(request.inputs), `${request.id}`);
    deepStrictEqual(
      inlineBytes(decoded.outputs),
      inlineBytes(
        request.outputs.map((a) => a.kind === "inline" ? { ...a, bytes: new Uint8Array(0) } : a),
      ),
    );
    deepStrictEqual([decoded.id, decoded.measureTiming, decoded.deadlineUs], [
      request.id,
      request.measureTiming,
      request.deadlineUs,
    ]);
  }
  for (const result of sampleResults()) {
    const frame = driverFrames.encodeResult(result);
    deepStrictEqual(plain(sdkFrames.decodeResult(frame)), plain(result));
  }
  for (const [name, code] of Object.entries(driverFrames.STATUS_CODES)) {
    strictEqual(sdkFrames.STATUS_NAMES[code], name, `status code ${code}`);
  }
  const frame = driverFrames.encodeResult(sampleResults()[0]);
  for (const bad of [frame.subarray(0, 20), Uint8Array.of(0x01, ...frame.subarray(1))]) {
    let thrown: unknown;
    try {
      sdkFrames.decodeResult(bad);
    } catch (error) {
      thrown = error;
    }
    ok(thrown instanceof Error && thrown.name === "FrameError", `refused: ${thrown}`);
  }
});
