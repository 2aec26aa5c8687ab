/**
 * End-to-end suite of invalid requests against a real server (docs/api.md "Errors"): invalid
 * models, compilation and execution requests, unknown ids and routes, and authentication.
 * Every case checks the HTTP status, the NNAPI `status`, a `message` naming the fault and,
 * where the request has an offending field, its `path`. No bad request may answer 500, and
 * the server must still be healthy afterwards.
 */
import { deepStrictEqual, match, ok, strictEqual } from "node:assert/strict";
import { startServer } from "../server.ts";

// ---------------------------------------------------------------------------------------
// Model builders (the wire format of docs/api.md / nnapi-cts README).

interface OperandJson {
  type: string;
  dimensions: number[];
  scale?: number;
  zeroPoint?: number;
  lifetime: string;
  value?: unknown;
  location?: unknown;
  channelQuant?: { channelDim: number; scales: number[] };
  [extra: string]: unknown;
}

interface OperationJson {
  type: string;
  inputs: number[];
  outputs: number[];
}

interface ModelJson {
  operands: OperandJson[];
  operations: OperationJson[];
  inputIndexes: number[];
  outputIndexes: number[];
  relaxComputationFloat32toFloat16?: boolean;
}

function operand(
  type: string,
  dimensions: number[],
  lifetime: string,
  extra: Partial<OperandJson> = {},
): OperandJson {
  return { type, dimensions, scale: 0, zeroPoint: 0, lifetime, ...extra };
}

const f32 = (dimensions: number[], lifetime: string, value?: number[]) =>
  operand("TENSOR_FLOAT32", dimensions, lifetime, value ? { value } : {});
const q8 = (dimensions: number[], lifetime: string, scale: number, value?: number[]) =>
  operand("TENSOR_QUANT8_ASYMM", dimensions, lifetime, { scale, ...(value ? { value } : {}) });
const int32 = (value: number) => operand("INT32", [], "CONSTANT_COPY", { value: [value] });
const float32Scalar = (value: number) =>
  operand("FLOAT32", [], "CONSTANT_COPY", { value: [value] });

/** out(3) = in(0) + in(1), all float32 [2], activation NONE (operand 2). */
function addModel(): ModelJson {
  return {
    operands: [
      f32([2], "MODEL_INPUT"),
      f32([2], "MODEL_INPUT"),
      int32(0),
      f32([2], "MODEL_OUTPUT"),
    ],
    operations: [{ type: "ADD", inputs: [0, 1, 2], outputs: [3] }],
    inputIndexes: [0, 1],
    outputIndexes: [3],
    relaxComputationFloat32toFloat16: false,
  };
}

/** The ADD model with unknown (0) dimensions on inputs and output. */
function dynamicAddModel(): ModelJson {
  const m = addModel();
  for (const i of [0, 1, 3]) m.operands[i].dimensions = [0];
  return m;
}

/** The ADD model with fully specified inputs but an output of unknown extent [0]. */
function dynamicOutputAddModel(): ModelJson {
  const m = addModel();
  m.operands[3].dimensions = [0];
  return m;
}

/** out(1) = RELU(in(0)), quant8 [2], scale 0.5, zero point 0. */
function quantReluModel(): ModelJson {
  return {
    operands: [q8([2], "MODEL_INPUT", 0.5), q8([2], "MODEL_OUTPUT", 0.5)],
    operations: [{ type: "RELU", inputs: [0], outputs: [1] }],
    inputIndexes: [0],
    outputIndexes: [1],
  };
}

/** out(3) = in(0) + const(1), quant8 [2]. */
function quantAddModel(): ModelJson {
  return {
    operands: [
      q8([2], "MODEL_INPUT", 0.5),
      q8([2], "CONSTANT_COPY", 0.5, [1, 2]),
      int32(0),
      q8([2], "MODEL_OUTPUT", 1),
    ],
    operations: [{ type: "ADD", inputs: [0, 1, 2], outputs: [3] }],
    inputIndexes: [0],
    outputIndexes: [3],
  };
}

/** CONV_2D, float32, input [1,3,3,1], filter [1,2,2,1], VALID padding, stride 1 → [1,2,2,1]. */
function convModel(): ModelJson {
  return {
    operands: [
      f32([1, 3, 3, 1], "MODEL_INPUT"),
      f32([1, 2, 2, 1], "CONSTANT_COPY", [1, 2, 3, 4]),
      f32([1], "CONSTANT_COPY", [0]),
      int32(2), // padding scheme VALID
      int32(1), // stride width
      int32(1), // stride height
      int32(0), // activation NONE
      f32([1, 2, 2, 1], "MODEL_OUTPUT"),
    ],
    operations: [{ type: "CONV_2D", inputs: [0, 1, 2, 3, 4, 5, 6], outputs: [7] }],
    inputIndexes: [0],
    outputIndexes: [7],
  };
}

/** CONV_2D, quant8 input with a per-channel symmetric filter [2,1,1,1] (2 output channels). */
function perChannelConvModel(): ModelJson {
  return {
    operands: [
      q8([1, 2, 2, 1], "MODEL_INPUT", 0.5),
      operand("TENSOR_QUANT8_SYMM_PER_CHANNEL", [2, 1, 1, 1], "CONSTANT_COPY", {
        value: [1, 2],
        channelQuant: { channelDim: 0, scales: [0.5, 0.75] },
      }),
      operand("TENSOR_INT32", [2], "CONSTANT_COPY", { value: [0, 0] }),
      int32(2),
      int32(1),
      int32(1),
      int32(0),
      q8([1, 2, 2, 2], "MODEL_OUTPUT", 1),
    ],
    operations: [{ type: "CONV_2D", inputs: [0, 1, 2, 3, 4, 5, 6], outputs: [7] }],
    inputIndexes: [0],
    outputIndexes: [7],
  };
}

/** FULLY_CONNECTED: input [2,3], weights [4,3], bias [4] → [2,4]. */
function fullyConnectedModel(): ModelJson {
  return {
    operands: [
      f32([2, 3], "MODEL_INPUT"),
      f32([4, 3], "CONSTANT_COPY", new Array(12).fill(1)),
      f32([4], "CONSTANT_COPY", [0, 0, 0, 0]),
      int32(0),
      f32([2, 4], "MODEL_OUTPUT"),
    ],
    operations: [{ type: "FULLY_CONNECTED", inputs: [0, 1, 2, 3], outputs: [4] }],
    inputIndexes: [0],
    outputIndexes: [4],
  };
}

/** RESHAPE [2,3] → [3,2]. */
function reshapeModel(): ModelJson {
  return {
    operands: [
      f32([2, 3], "MODEL_INPUT"),
      operand("TENSOR_INT32", [2], "CONSTANT_COPY", { value: [3, 2] }),
      f32([3, 2], "MODEL_OUTPUT"),
    ],
    operations: [{ type: "RESHAPE", inputs: [0, 1], outputs: [2] }],
    inputIndexes: [0],
    outputIndexes: [2],
  };
}

/** RESHAPE [2,3] to a shape given at execution (model input 1); output [0,0]. */
function reshapeByInputModel(): ModelJson {
  return {
    operands: [
      f32([2, 3], "MODEL_INPUT"),
      operand("TENSOR_INT32", [2], "MODEL_INPUT"),
      f32([0, 0], "MODEL_OUTPUT"),
    ],
    operations: [{ type: "RESHAPE", inputs: [0, 1], outputs: [2] }],
    inputIndexes: [0, 1],
    outputIndexes: [2],
  };
}

/** SOFTMAX [1,2] with beta 1.0. */
function softmaxModel(): ModelJson {
  return {
    operands: [f32([1, 2], "MODEL_INPUT"), float32Scalar(1), f32([1, 2], "MODEL_OUTPUT")],
    operations: [{ type: "SOFTMAX", inputs: [0, 1], outputs: [2] }],
    inputIndexes: [0],
    outputIndexes: [2],
  };
}

/** A fresh copy of a model with a change applied. */
function mutated(base: () => ModelJson, change: (m: ModelJson) => void): ModelJson {
  const m = base();
  change(m);
  return m;
}

const float32Base64 = (values: number[]) =>
  new Uint8Array(new Float32Array(values).buffer).toBase64();

// ---------------------------------------------------------------------------------------
// Cases.

type Path = (string | number)[];

/** Ids created by the setup step, for cases that refer to existing resources. */
interface Ctx {
  addCompilation: string;
  quantCompilation: string;
  dynamicCompilation: string;
  dynamicOutputCompilation: string;
  reshapeCompilation: string;
  model: string;
}

interface Call {
  method?: string;
  path: string;
  json?: unknown;
  /** A raw body (sent as is, with `contentType`, default application/json). */
  raw?: string;
  contentType?: string;
}

interface Expected {
  http: number;
  status: string;
  message: RegExp;
  /** Exact `path` of the offending field. */
  path?: Path;
  /** When several paths are right: the leading elements every right path shares. */
  pathPrefix?: Path;
  outputShapes?: { dimensions: number[]; isSufficient: boolean }[];
}

interface Case {
  name: string;
  /** One request. */
  call?: (ctx: Ctx) => Call;
  /**
   * A model that is invalid for an execution: registered, compiled and executed in turn; the
   * first error answer is checked (rejecting at registration is as right as at execution).
   */
  staged?: { model: ModelJson; execution: unknown };
  /** What the answer must be; with a list, any one of them. */
  expect: Expected | Expected[];
}

const INVALID = "INVALID_ARGUMENT";
const NOT_FOUND = "NOT_FOUND";

function bad(message: RegExp, path?: Path): Expected {
  return { http: 400, status: INVALID, message, ...(path ? { path } : {}) };
}

function modelCase(name: string, model: unknown, expect: Expected | Expected[]): Case {
  return { name: `model: ${name}`, call: () => ({ path: "/v1/models", json: model }), expect };
}

function compileCase(name: string, body: (ctx: Ctx) => unknown, expect: Expected): Case {
  return {
    name: `compile: ${name}`,
    call: (ctx) => ({ path: "/v1/compilations", json: body(ctx) }),
    expect,
  };
}

function executeCase(
  name: string,
  compilation: keyof Ctx,
  body: unknown,
  expect: Expected,
): Case {
  return {
    name: `execute: ${name}`,
    call: (ctx) => ({ path: `/v1/compilations/${ctx[compilation]}/executions`, json: body }),
    expect,
  };
}

const UNKNOWN_ID = "00000000-0000-4000-8000-000000000000";

const CASES: Case[] = [
  // --- Transport and schema errors on /v1/models.
  {
    name: "model: malformed JSON",
    call: () => ({ path: "/v1/models", raw: '{"operands": [' }),
    expect: bad(/JSON/i),
  },
  {
    name: "model: body is not JSON (text/plain)",
    call: () => ({ path: "/v1/models", raw: "operands: none", contentType: "text/plain" }),
    expect: bad(/media type|content-type|JSON/i),
  },
  modelCase("body is a JSON array, not a model object", [1, 2, 3], bad(/object|expected/i)),
  modelCase(
    "missing operands",
    { ...addModel(), operands: undefined },
    bad(/operands/, [
      "operands",
    ]),
  ),
  modelCase(
    "unknown operand type",
    mutated(addModel, (m) => m.operands[0].type = "TENSOR_FLOAT64"),
    bad(/operands\.0\.type/, ["operands", 0, "type"]),
  ),
  modelCase(
    "unknown operation type",
    mutated(addModel, (m) => m.operations[0].type = "ADDITION"),
    bad(/operations\.0\.type/, ["operations", 0, "type"]),
  ),
  modelCase(
    "unknown lifetime",
    mutated(addModel, (m) => m.operands[1].lifetime = "MODEL_STATE"),
    bad(/operands\.1\.lifetime/, ["operands", 1, "lifetime"]),
  ),
  modelCase(
    "unknown field on an operand",
    mutated(addModel, (m) => m.operands[0].color = "red"),
    bad(/color/, ["operands", 0]),
  ),
  modelCase(
    "negative dimension",
    mutated(addModel, (m) => m.operands[0].dimensions = [-2]),
    bad(/operands\.0\.dimensions\.0/, ["operands", 0, "dimensions", 0]),
  ),
  modelCase(
    "non-integer dimension",
    mutated(addModel, (m) => m.operands[1].dimensions = [1.5]),
    bad(/operands\.1\.dimensions\.0/, ["operands", 1, "dimensions", 0]),
  ),
  modelCase(
    "operation input index is not an integer",
    mutated(addModel, (m) => m.operations[0].inputs = [0, 1.5, 2]),
    bad(/operations\.0\.inputs\.1/, ["operations", 0, "inputs", 1]),
  ),

  // --- Operand rules.
  modelCase(
    "scalar with dimensions",
    mutated(addModel, (m) => m.operands[2].dimensions = [1]),
    bad(/operand 2 \(INT32\).*scalar/, ["operands", 2, "dimensions"]),
  ),
  modelCase(
    "quant8 tensor with scale 0",
    mutated(quantReluModel, (m) => m.operands[0].scale = 0),
    bad(/operand 0 \(TENSOR_QUANT8_ASYMM\).*scale/, ["operands", 0, "scale"]),
  ),
  modelCase(
    "quant8 zeroPoint 256 out of range",
    mutated(quantReluModel, (m) => m.operands[1].zeroPoint = 256),
    bad(/operand 1 \(TENSOR_QUANT8_ASYMM\).*zeroPoint 256/, ["operands", 1, "zeroPoint"]),
  ),
  modelCase(
    "quant8 negative zeroPoint",
    mutated(quantReluModel, (m) => m.operands[0].zeroPoint = -1),
    bad(/operand 0 \(TENSOR_QUANT8_ASYMM\).*zeroPoint -1/, ["operands", 0, "zeroPoint"]),
  ),
  modelCase(
    "float tensor with a non-zero scale",
    mutated(addModel, (m) => m.operands[1].scale = 0.5),
    bad(/operand 1 \(TENSOR_FLOAT32\).*scale/, ["operands", 1, "scale"]),
  ),
  modelCase(
    "channelQuant on a non-per-channel type",
    mutated(quantReluModel, (m) => m.operands[0].channelQuant = { channelDim: 0, scales: [1, 1] }),
    bad(/operand 0 \(TENSOR_QUANT8_ASYMM\).*channelQuant/, ["operands", 0, "channelQuant"]),
  ),
  modelCase(
    "per-channel scales count mismatch",
    mutated(perChannelConvModel, (m) => m.operands[1].channelQuant!.scales = [0.5, 0.75, 1]),
    bad(/operand 1 \(TENSOR_QUANT8_SYMM_PER_CHANNEL\).*3 .*scales.*2/, [
      "operands",
      1,
      "channelQuant",
      "scales",
    ]),
  ),
  modelCase(
    "per-channel channelDim beyond the rank",
    mutated(perChannelConvModel, (m) => m.operands[1].channelQuant!.channelDim = 4),
    bad(/operand 1 \(TENSOR_QUANT8_SYMM_PER_CHANNEL\).*channelDim 4/, [
      "operands",
      1,
      "channelQuant",
      "channelDim",
    ]),
  ),
  modelCase(
    "constant without value",
    mutated(addModel, (m) => delete m.operands[2].value),
    bad(/operand 2 \(INT32\).*value/, ["operands", 2, "value"]),
  ),
  modelCase(
    "constant value of wrong length",
    mutated(convModel, (m) => m.operands[1].value = [1, 2, 3]),
    bad(/operand 1 \(TENSOR_FLOAT32\).*3 elements.*4/, ["operands", 1, "value"]),
  ),
  modelCase(
    "constant with unknown dimensions",
    mutated(convModel, (m) => m.operands[1].dimensions = [1, 0, 2, 1]),
    bad(/operand 1 \(TENSOR_FLOAT32\).*fully specified/, ["operands", 1, "dimensions"]),
  ),
  modelCase(
    "base64 value of wrong byte length",
    mutated(convModel, (m) => m.operands[1].value = { base64: float32Base64([1, 2, 3]) }),
    bad(/operand 1 \(TENSOR_FLOAT32\).*12 bytes.*16/, ["operands", 1, "value"]),
  ),
  modelCase(
    "invalid base64 value",
    mutated(convModel, (m) => m.operands[1].value = { base64: "not base64 at all!!" }),
    bad(/operand 1 \(TENSOR_FLOAT32\).*base64/, ["operands", 1, "value", "base64"]),
  ),
  modelCase(
    "value on a MODEL_INPUT",
    mutated(addModel, (m) => m.operands[0].value = [1, 2]),
    bad(/operand 0\b.*value/, ["operands", 0, "value"]),
  ),
  modelCase(
    "quant8 constant value 300",
    mutated(quantAddModel, (m) => m.operands[1].value = [1, 300]),
    bad(/operand 1 \(TENSOR_QUANT8_ASYMM\).*300/, ["operands", 1, "value", 1]),
  ),
  modelCase(
    "non-integer INT32 constant",
    mutated(addModel, (m) => m.operands[2].value = [0.5]),
    bad(/operand 2 \(INT32\).*0\.5/, ["operands", 2, "value", 0]),
  ),

  // --- Inputs, outputs and the operation graph.
  modelCase(
    "inputIndexes points at a non-input operand",
    mutated(addModel, (m) => m.inputIndexes = [0, 2]),
    bad(/inputIndexes\[1\].*operand 2.*CONSTANT_COPY/, ["inputIndexes", 1]),
  ),
  modelCase(
    "inputIndexes out of range",
    mutated(addModel, (m) => m.inputIndexes = [0, 9]),
    bad(/inputIndexes\[1\].*9/, ["inputIndexes", 1]),
  ),
  modelCase(
    "inputIndexes duplicated",
    mutated(addModel, (m) => m.inputIndexes = [0, 0]),
    bad(/inputIndexes\[1\].*operand 0.*twice/, ["inputIndexes", 1]),
  ),
  modelCase(
    "MODEL_INPUT operand not listed in inputIndexes",
    mutated(addModel, (m) => m.inputIndexes = [0]),
    bad(/operand 1\b.*MODEL_INPUT.*inputIndexes/, ["operands", 1]),
  ),
  modelCase(
    "outputIndexes points at a temporary",
    mutated(addModel, (m) => {
      m.operands[3].lifetime = "TEMPORARY_VARIABLE";
      m.operands.push(f32([2], "MODEL_OUTPUT"));
      m.operations.push({ type: "RELU", inputs: [3], outputs: [4] });
      m.outputIndexes = [3, 4];
    }),
    bad(/outputIndexes\[0\].*operand 3.*TEMPORARY_VARIABLE/, ["outputIndexes", 0]),
  ),
  modelCase(
    "no outputs",
    mutated(addModel, (m) => {
      m.operands[3].lifetime = "TEMPORARY_VARIABLE";
      m.outputIndexes = [];
    }),
    bad(/no outputs/, ["outputIndexes"]),
  ),
  modelCase(
    "no operations",
    mutated(addModel, (m) => m.operations = []),
    bad(/no operations/, ["operations"]),
  ),
  modelCase(
    "operation input index out of range",
    mutated(addModel, (m) => m.operations[0].inputs = [0, 7, 2]),
    bad(/operation 0 \(ADD\).*inputs\[1\].*7/, ["operations", 0, "inputs", 1]),
  ),
  modelCase(
    "operation output index out of range",
    mutated(addModel, (m) => m.operations[0].outputs = [12]),
    bad(/operation 0 \(ADD\).*outputs\[0\].*12/, ["operations", 0, "outputs", 0]),
  ),
  modelCase(
    "operand written twice",
    mutated(addModel, (m) => m.operations.push({ type: "ADD", inputs: [0, 1, 2], outputs: [3] })),
    bad(/operand 3 .*operation 0 and operation 1/, ["operations", 1, "outputs"]),
  ),
  modelCase(
    "operation writes a MODEL_INPUT",
    mutated(addModel, (m) => m.operations.push({ type: "ADD", inputs: [0, 3, 2], outputs: [1] })),
    bad(/operation 1 \(ADD\) writes operand 1 .*MODEL_INPUT/, ["operations", 1, "outputs"]),
  ),
  modelCase(
    "operation writes a constant",
    mutated(addModel, (m) => {
      m.operands.push(f32([2], "CONSTANT_COPY", [1, 1]));
      m.operations.push({ type: "ADD", inputs: [0, 3, 2], outputs: [4] });
    }),
    bad(/operation 1 \(ADD\) writes operand 4 .*CONSTANT_COPY/, ["operations", 1, "outputs"]),
  ),
  modelCase(
    "temporary never written",
    mutated(addModel, (m) => {
      m.operands.push(f32([2], "TEMPORARY_VARIABLE"));
      m.operations[0].inputs = [0, 4, 2];
    }),
    bad(/operand 4 .*never written/, ["operands", 4]),
  ),
  modelCase(
    "cycle between two operations",
    mutated(addModel, (m) => {
      m.operands.push(f32([2], "TEMPORARY_VARIABLE"), f32([2], "TEMPORARY_VARIABLE"));
      m.operations = [
        { type: "ADD", inputs: [0, 5, 2], outputs: [4] },
        { type: "ADD", inputs: [4, 1, 2], outputs: [5] },
        { type: "ADD", inputs: [4, 1, 2], outputs: [3] },
      ];
    }),
    { ...bad(/operation [01] \(ADD\).*cycle/), pathPrefix: ["operations"] },
  ),

  // --- Operation signatures and shapes.
  modelCase(
    "ADD with two inputs",
    mutated(addModel, (m) => m.operations[0].inputs = [0, 1]),
    bad(/operation 0 \(ADD\).*3 inputs, got 2/, ["operations", 0]),
  ),
  modelCase(
    "CONV_2D with six inputs",
    mutated(convModel, (m) => m.operations[0].inputs = [0, 1, 2, 3, 4, 5]),
    bad(/operation 0 \(CONV_2D\).*got 6/, ["operations", 0]),
  ),
  modelCase(
    "ADD of float32 and quant8",
    mutated(addModel, (m) => m.operands[1] = q8([2], "MODEL_INPUT", 0.5)),
    bad(
      /operation 0 \(ADD\).*input 1 \(operand 1\).*TENSOR_QUANT8_ASYMM.*TENSOR_FLOAT32/,
      ["operations", 0],
    ),
  ),
  modelCase(
    "FLOAT32 activation operand",
    mutated(addModel, (m) => m.operands[2] = float32Scalar(0)),
    bad(/operation 0 \(ADD\).*input 2 \(operand 2\).*FLOAT32.*INT32/, ["operations", 0]),
  ),
  modelCase(
    "activation code 7",
    mutated(addModel, (m) => m.operands[2].value = [7]),
    bad(/operation 0 \(ADD\).*activation.*7/, ["operations", 0]),
  ),
  modelCase(
    "ADD of [2] and [3] (not broadcastable)",
    mutated(addModel, (m) => m.operands[1].dimensions = [3]),
    bad(/operation 0 \(ADD\).*\[2\].*\[3\].*broadcast/, ["operations", 0]),
  ),
  modelCase(
    "declared output shape contradicts the computed one",
    mutated(addModel, (m) => m.operands[3].dimensions = [3]),
    bad(/operation 0 \(ADD\).*operand 3.*\[3\].*\[2\]/, ["operations", 0]),
  ),
  modelCase(
    "quant8 MUL whose output scale is below the input scale product",
    mutated(quantAddModel, (m) => {
      m.operations[0].type = "MUL";
      m.operands[3].scale = 0.125;
    }),
    bad(/operation 0 \(MUL\).*output scale/, ["operations", 0]),
  ),
  modelCase(
    "CONV_2D filter depth differs from the input depth",
    mutated(convModel, (m) => {
      m.operands[1].dimensions = [1, 2, 2, 2];
      m.operands[1].value = [1, 2, 3, 4, 5, 6, 7, 8];
    }),
    bad(/operation 0 \(CONV_2D\).*filter.*depth 2.*1 channel/, ["operations", 0]),
  ),
  modelCase(
    "CONV_2D float32 with an int32 bias",
    mutated(convModel, (m) =>
      m.operands[2] = operand("TENSOR_INT32", [1], "CONSTANT_COPY", {
        value: [0],
      })),
    bad(/operation 0 \(CONV_2D\).*input 2 \(operand 2\).*TENSOR_INT32.*TENSOR_FLOAT32/, [
      "operations",
      0,
    ]),
  ),
  modelCase(
    "FULLY_CONNECTED input size differs from the weights",
    mutated(fullyConnectedModel, (m) => {
      m.operands[1].dimensions = [4, 5];
      m.operands[1].value = new Array(20).fill(1);
    }),
    bad(/operation 0 \(FULLY_CONNECTED\).*input size 5/, ["operations", 0]),
  ),
  modelCase(
    "FULLY_CONNECTED weights of rank 3",
    mutated(fullyConnectedModel, (m) => {
      m.operands[1].dimensions = [4, 3, 1];
    }),
    bad(/operation 0 \(FULLY_CONNECTED\).*weights.*rank 3/, ["operations", 0]),
  ),
  modelCase(
    "RESHAPE to a shape with a different element count",
    mutated(reshapeModel, (m) => m.operands[1].value = [4, 2]),
    bad(/operation 0 \(RESHAPE\).*8 elements.*6/, ["operations", 0]),
  ),
  modelCase(
    "RELU of a TENSOR_INT32",
    mutated(quantReluModel, (m) => {
      m.operands[0] = operand("TENSOR_INT32", [2], "MODEL_INPUT");
      m.operands[1] = operand("TENSOR_INT32", [2], "MODEL_OUTPUT");
    }),
    bad(/operation 0 \(RELU\).*TENSOR_INT32/, ["operations", 0]),
  ),
  modelCase(
    "SOFTMAX with an INT32 beta",
    mutated(softmaxModel, (m) => m.operands[1] = int32(1)),
    bad(/operation 0 \(SOFTMAX\).*input 1 \(operand 1\).*INT32.*FLOAT32/, ["operations", 0]),
  ),

  modelCase(
    "SOFTMAX with beta 0",
    mutated(softmaxModel, (m) => m.operands[1].value = [0]),
    bad(/operation 0 \(SOFTMAX\).*input 1 \(operand 1\).*beta 0/, ["operations", 0]),
  ),
  modelCase(
    "quant8 SOFTMAX whose output scale is not 1/256",
    mutated(softmaxModel, (m) => {
      m.operands[0] = q8([1, 2], "MODEL_INPUT", 0.5);
      m.operands[2] = q8([1, 2], "MODEL_OUTPUT", 0.5);
    }),
    bad(/operation 0 \(SOFTMAX\).*output 0 \(operand 2\).*1\/256/, ["operations", 0]),
  ),
  modelCase(
    "pools naming a memory that does not exist",
    { ...addModel(), pools: ["no-such-memory"] },
    [
      bad(/no-such-memory|pools\[0\]/, ["pools", 0]),
      { http: 404, status: NOT_FOUND, message: /no-such-memory/ },
    ],
  ),
  modelCase(
    "location on a CONSTANT_COPY operand",
    mutated(addModel, (m) => {
      delete m.operands[2].value;
      m.operands[2].location = { poolIndex: 0, offset: 0, length: 4 };
    }),
    bad(/operand 2 \(INT32\).*location/, ["operands", 2, "location"]),
  ),
  {
    name: "model: NO_VALUE operand as a required ADD input",
    staged: {
      model: mutated(addModel, (m) => {
        m.operands[1].lifetime = "NO_VALUE";
        m.inputIndexes = [0];
      }),
      execution: { inputs: [{ data: [1, 2] }] },
    },
    expect: bad(/operand 1\b|input 1\b/),
  },

  // --- Compilations.
  compileCase(
    "unknown model id",
    () => ({ model: UNKNOWN_ID }),
    { http: 404, status: NOT_FOUND, message: new RegExp(UNKNOWN_ID) },
  ),
  compileCase("missing model", () => ({}), bad(/model/, ["model"])),
  {
    name: "compile: malformed JSON",
    call: () => ({ path: "/v1/compilations", raw: "{model:" }),
    expect: bad(/JSON/i),
  },
  compileCase(
    "bad preference",
    (ctx) => ({ model: ctx.model, preference: "FASTEST" }),
    bad(/preference/, ["preference"]),
  ),
  compileCase(
    "bad priority",
    (ctx) => ({ model: ctx.model, priority: "URGENT" }),
    bad(/priority/, ["priority"]),
  ),
  compileCase(
    "negative deadlineMs",
    (ctx) => ({ model: ctx.model, deadlineMs: -5 }),
    bad(/deadlineMs/, ["deadlineMs"]),
  ),
  compileCase(
    "deadlineMs not a number",
    (ctx) => ({ model: ctx.model, deadlineMs: "soon" }),
    bad(/deadlineMs/, ["deadlineMs"]),
  ),
  compileCase(
    "cache token of 16 bytes",
    (ctx) => ({ model: ctx.model, cache: { token: new Uint8Array(16).toBase64() } }),
    bad(/cache\.token.*32 bytes/, ["cache", "token"]),
  ),
  compileCase(
    "cache token not base64",
    (ctx) => ({ model: ctx.model, cache: { token: "%%% not base64 %%%" } }),
    bad(/cache\.token/, ["cache", "token"]),
  ),
  compileCase(
    "unknown device name",
    (ctx) => ({ model: ctx.model, devices: ["npu-9000"] }),
    bad(/unknown device "npu-9000"/, ["devices", 0]),
  ),
  compileCase(
    "unknown field",
    (ctx) => ({ model: ctx.model, turbo: true }),
    bad(/turbo/),
  ),

  // --- Executions.
  {
    name: "execute: unknown compilation id",
    call: () => ({
      path: `/v1/compilations/${UNKNOWN_ID}/executions`,
      json: { inputs: [{ data: [1, 2] }, { data: [3, 4] }] },
    }),
    expect: { http: 404, status: NOT_FOUND, message: new RegExp(`compilation ${UNKNOWN_ID}`) },
  },
  executeCase(
    "a model id used as a compilation id",
    "model",
    { inputs: [{ data: [1, 2] }, { data: [3, 4] }] },
    { http: 404, status: NOT_FOUND, message: /compilation/ },
  ),
  {
    name: "execute: malformed JSON",
    call: (ctx) => ({
      path: `/v1/compilations/${ctx.addCompilation}/executions`,
      raw: '{"inputs": [{"data": [1,2]},',
    }),
    expect: bad(/JSON/i),
  },
  executeCase("missing inputs", "addCompilation", {}, bad(/inputs/, ["inputs"])),
  executeCase(
    "wrong number of inputs",
    "addCompilation",
    { inputs: [{ data: [1, 2] }] },
    bad(/2 inputs.*1/, ["inputs"]),
  ),
  executeCase(
    "wrong element count",
    "addCompilation",
    { inputs: [{ data: [1, 2, 3] }, { data: [3, 4] }] },
    bad(/input 0 \(operand 0.*2 values.*3/, ["inputs", 0]),
  ),
  executeCase(
    "data that is not numbers",
    "addCompilation",
    { inputs: [{ data: [1, 2] }, { data: "3, 4" }] },
    { ...bad(/inputs\.1/), pathPrefix: ["inputs", 1] },
  ),
  executeCase(
    "quant8 value 300",
    "quantCompilation",
    { inputs: [{ data: [300, 1] }] },
    bad(/input 0 \(operand 0.*300.*TENSOR_QUANT8_ASYMM/, ["inputs", 0, "data", 0]),
  ),
  executeCase(
    "non-integer quant8 value",
    "quantCompilation",
    { inputs: [{ data: [1, 2.5] }] },
    bad(/input 0 \(operand 0.*2\.5/, ["inputs", 0, "data", 1]),
  ),
  executeCase(
    "invalid base64 input",
    "addCompilation",
    { inputs: [{ data: [1, 2] }, { base64: "***" }] },
    bad(/inputs\.1\.base64.*base64/, ["inputs", 1, "base64"]),
  ),
  executeCase(
    "base64 input of wrong byte length",
    "addCompilation",
    { inputs: [{ base64: float32Base64([1, 2, 3]) }, { data: [3, 4] }] },
    bad(/input 0 \(operand 0.*8 bytes.*12/, ["inputs", 0]),
  ),
  executeCase(
    "input with no value",
    "addCompilation",
    { inputs: [{ data: [1, 2] }, {}] },
    bad(/input 1\b.*value/, ["inputs", 1]),
  ),
  executeCase(
    "input with unknown dimensions and no dimensions",
    "dynamicCompilation",
    { inputs: [{ data: [1, 2] }, { data: [3, 4], dimensions: [2] }] },
    bad(/input 0 \(operand 0.*unknown dimensions/, ["inputs", 0, "dimensions"]),
  ),
  executeCase(
    "dimensions contradicting the model",
    "addCompilation",
    { inputs: [{ data: [1, 2, 3], dimensions: [3] }, { data: [3, 4] }] },
    bad(/input 0 \(operand 0.*dimension 0 is 2.*not 3/, ["inputs", 0, "dimensions"]),
  ),
  executeCase(
    "dimensions of the wrong rank",
    "addCompilation",
    { inputs: [{ data: [1, 2], dimensions: [2, 1] }, { data: [3, 4] }] },
    bad(/input 0 \(operand 0.*rank 1.*rank 2/, ["inputs", 0, "dimensions"]),
  ),
  executeCase(
    "output ARG with data instead of dimensions",
    "addCompilation",
    { inputs: [{ data: [1, 2] }, { data: [3, 4] }], outputs: [{ data: [0, 0] }] },
    bad(/output 0\b/, ["outputs", 0]),
  ),
  executeCase(
    "wrong number of outputs",
    "addCompilation",
    { inputs: [{ data: [1, 2] }, { data: [3, 4] }], outputs: [{}, {}] },
    bad(/1 outputs.*2/, ["outputs"]),
  ),
  executeCase(
    "output dimensions contradicting the model",
    "addCompilation",
    { inputs: [{ data: [1, 2] }, { data: [3, 4] }], outputs: [{ dimensions: [5] }] },
    bad(/output 0 \(operand 3.*dimension 0 is 2.*not 5/, ["outputs", 0, "dimensions"]),
  ),
  executeCase(
    "output too small (OUTPUT_INSUFFICIENT_SIZE)",
    "dynamicOutputCompilation",
    { inputs: [{ data: [1, 2] }, { data: [3, 4] }], outputs: [{ dimensions: [1] }] },
    {
      http: 422,
      status: "OUTPUT_INSUFFICIENT_SIZE",
      message: /output 0\b.*\[2\]/,
      outputShapes: [{ dimensions: [2], isSufficient: false }],
    },
  ),
  executeCase(
    "omitted value for a required input",
    "addCompilation",
    { inputs: [{ omitted: true }, { data: [3, 4] }] },
    bad(/input 0\b|operand 0\b/),
  ),
  executeCase(
    "shapes that cannot be broadcast, known only at execution",
    "dynamicCompilation",
    { inputs: [{ data: [1, 2], dimensions: [2] }, { data: [1, 2, 3], dimensions: [3] }] },
    bad(/operation 0 \(ADD\).*\[2\].*\[3\].*broadcast/),
  ),
  executeCase(
    "RESHAPE target given at execution with the wrong element count",
    "reshapeCompilation",
    { inputs: [{ data: [1, 2, 3, 4, 5, 6] }, { data: [4, 2] }] },
    bad(/operation 0 \(RESHAPE\).*8 elements.*6/),
  ),
  executeCase(
    "INT32 input value that is not an integer",
    "reshapeCompilation",
    { inputs: [{ data: [1, 2, 3, 4, 5, 6] }, { data: [3, 2.5] }] },
    bad(/input 1 \(operand 1.*2\.5.*TENSOR_INT32/, ["inputs", 1, "data", 1]),
  ),
  executeCase(
    "bad outputEncoding",
    "addCompilation",
    { inputs: [{ data: [1, 2] }, { data: [3, 4] }], outputEncoding: "hex" },
    bad(/outputEncoding/, ["outputEncoding"]),
  ),
  executeCase(
    "negative deadlineMs",
    "addCompilation",
    { inputs: [{ data: [1, 2] }, { data: [3, 4] }], deadlineMs: -1 },
    bad(/deadlineMs/, ["deadlineMs"]),
  ),

  // --- Unknown ids and routes.
  {
    name: "unknown route",
    call: () => ({ method: "GET", path: "/v1/nothing-here" }),
    expect: { http: 404, status: NOT_FOUND, message: /\/v1\/nothing-here/ },
  },
  {
    name: "unknown route outside /v1",
    call: () => ({ method: "POST", path: "/healthz/deep" }),
    expect: { http: 404, status: NOT_FOUND, message: /\/healthz\/deep/ },
  },
  {
    name: "get unknown model",
    call: () => ({ method: "GET", path: `/v1/models/${UNKNOWN_ID}` }),
    expect: { http: 404, status: NOT_FOUND, message: new RegExp(UNKNOWN_ID) },
  },
  {
    name: "delete unknown compilation",
    call: () => ({ method: "DELETE", path: `/v1/compilations/${UNKNOWN_ID}` }),
    expect: { http: 404, status: NOT_FOUND, message: new RegExp(UNKNOWN_ID) },
  },
  {
    name: "supported-operations of an unknown model",
    call: () => ({ path: `/v1/models/${UNKNOWN_ID}/supported-operations`, json: {} }),
    expect: { http: 404, status: NOT_FOUND, message: new RegExp(UNKNOWN_ID) },
  },
];

// ---------------------------------------------------------------------------------------
// Runner.

interface ErrorBody {
  status?: unknown;
  message?: unknown;
  path?: unknown;
  outputShapes?: unknown;
}

/** Every response the suite received, to check that none was a 500. */
const responses: { what: string; http: number; body: string }[] = [];
/** The step being run, to name responses. */
let currentStep = "";

interface Answer {
  http: number;
  body: unknown;
}

async function send(
  base: string,
  call: Call,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const hasBody = call.json !== undefined || call.raw !== undefined;
  const response = await fetch(`${base}${call.path}`, {
    method: call.method ?? "POST",
    headers: hasBody
      ? { "content-type": call.contentType ?? "application/json", ...headers }
      : headers,
    body: call.raw ?? (call.json === undefined ? undefined : JSON.stringify(call.json)),
  });
  const text = await response.text();
  responses.push({
    what: `${currentStep}: ${call.method ?? "POST"} ${call.path}`,
    http: response.status,
    body: text.slice(0, 300),
  });
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // left as text; the assertions below report it
  }
  return { http: response.status, body };
}

function checkError(response: Answer, expect: Expected): void {
  const shown = JSON.stringify(response.body);
  strictEqual(response.http, expect.http, `HTTP ${response.http}: ${shown}`);
  ok(typeof response.body === "object" && response.body !== null, `not JSON: ${shown}`);
  const body = response.body as ErrorBody;
  strictEqual(body.status, expect.status, shown);
  ok(typeof body.message === "string", `no message: ${shown}`);
  match(body.message, expect.message);
  if (expect.path) deepStrictEqual(body.path, expect.path, shown);
  if (expect.pathPrefix) {
    ok(Array.isArray(body.path), `no path: ${shown}`);
    deepStrictEqual(body.path.slice(0, expect.pathPrefix.length), expect.pathPrefix, shown);
  }
  if (expect.outputShapes) deepStrictEqual(body.outputShapes, expect.outputShapes, shown);
}

/** Checks an answer against one or several acceptable expectations. */
function checkAnswer(response: Answer, expect: Expected | Expected[]): void {
  const options = Array.isArray(expect) ? expect : [expect];
  const failures: unknown[] = [];
  for (const option of options) {
    try {
      checkError(response, option);
      return;
    } catch (error) {
      failures.push(error);
    }
  }
  throw failures[0];
}

/** Runs a staged case: register, compile, execute; returns the first error answer. */
async function stagedAnswer(
  base: string,
  staged: { model: ModelJson; execution: unknown },
): Promise<Answer> {
  const model = await send(base, { path: "/v1/models", json: staged.model });
  if (model.http !== 201) return model;
  const compilation = await send(base, {
    path: "/v1/compilations",
    json: { model: (model.body as { id: string }).id },
  });
  if (compilation.http !== 201) return compilation;
  const id = (compilation.body as { id: string }).id;
  const execution = await send(base, {
    path: `/v1/compilations/${id}/executions`,
    json: staged.execution,
  });
  ok(
    execution.http !== 200,
    `registered, compiled and executed: ${JSON.stringify(execution.body)}`,
  );
  return execution;
}

async function created(base: string, call: Call, headers?: Record<string, string>) {
  const { http, body } = await send(base, call, headers);
  strictEqual(http, 201, `${call.path}: ${JSON.stringify(body)}`);
  return (body as { id: string }).id;
}

async function compiled(base: string, model: ModelJson, headers?: Record<string, string>) {
  const modelId = await created(base, { path: "/v1/models", json: model }, headers);
  const id = await created(base, { path: "/v1/compilations", json: { model: modelId } }, headers);
  return { model: modelId, compilation: id };
}

Deno.test("invalid requests are rejected with NNAPI statuses that name the fault", async (t) => {
  ok(CASES.length >= 40, `only ${CASES.length} cases`);
  const names = new Set(CASES.map((c) => c.name));
  strictEqual(names.size, CASES.length, "case names must be distinct");

  const dataDir = await Deno.makeTempDir({ prefix: "nnserve_invalid_" });
  const server = await startServer({ hostname: "127.0.0.1", port: 0, dataDir, verbose: false });
  try {
    let ctx: Ctx | undefined;
    await t.step("setup: valid models and compilations", async () => {
      const add = await compiled(server.url, addModel());
      const quant = await compiled(server.url, quantReluModel());
      const dynamic = await compiled(server.url, dynamicAddModel());
      const dynamicOutput = await compiled(server.url, dynamicOutputAddModel());
      const reshape = await compiled(server.url, reshapeByInputModel());
      ctx = {
        model: add.model,
        addCompilation: add.compilation,
        quantCompilation: quant.compilation,
        dynamicCompilation: dynamic.compilation,
        dynamicOutputCompilation: dynamicOutput.compilation,
        reshapeCompilation: reshape.compilation,
      };
      // The valid requests the cases are variations of succeed.
      const ok200 = await send(server.url, {
        path: `/v1/compilations/${add.compilation}/executions`,
        json: { inputs: [{ data: [1, 2] }, { data: [3, 4] }], outputs: [{ dimensions: [2] }] },
      });
      strictEqual(ok200.http, 200, JSON.stringify(ok200.body));
      deepStrictEqual((ok200.body as { outputs: { data: number[] }[] }).outputs[0].data, [4, 6]);
      const dyn = await send(server.url, {
        path: `/v1/compilations/${dynamic.compilation}/executions`,
        json: { inputs: [{ data: [1, 2], dimensions: [2] }, { data: [3, 4], dimensions: [2] }] },
      });
      strictEqual(dyn.http, 200, JSON.stringify(dyn.body));
    });

    for (const c of CASES) {
      await t.step(c.name, async () => {
        currentStep = c.name;
        ok(ctx, "setup failed");
        const answer = c.staged
          ? await stagedAnswer(server.url, c.staged)
          : await send(server.url, c.call!(ctx));
        checkAnswer(answer, c.expect);
      });
    }

    await t.step("the server still answers /healthz after all bad requests", async () => {
      const { http, body } = await send(server.url, { method: "GET", path: "/healthz" });
      strictEqual(http, 200);
      deepStrictEqual(body, { status: "ok" });
    });
  } finally {
    await server.close();
  }

  await t.step(
    "with API keys: 401 without a valid key, 404 for another client's ids",
    async (t) => {
      currentStep = "with API keys";
      const keyedDir = await Deno.makeTempDir({ prefix: "nnserve_invalid_keys_" });
      const keyed = await startServer({
        hostname: "127.0.0.1",
        port: 0,
        dataDir: keyedDir,
        verbose: false,
        apiKeys: new Map([["secret-key", "alice"], ["other-key", "bob"]]),
      });
      const alice = { authorization: "Bearer secret-key" };
      const bob = { authorization: "Bearer other-key" };
      try {
        const mine = await compiled(keyed.url, addModel(), alice);
        const execution = (id: string) => ({
          path: `/v1/compilations/${id}/executions`,
          json: { inputs: [{ data: [1, 2] }, { data: [3, 4] }] },
        });
        const authCases: { name: string; call: Call; headers: Record<string, string> }[] = [
          { name: "missing key", call: { method: "GET", path: "/v1/devices" }, headers: {} },
          {
            name: "missing key on register",
            call: { path: "/v1/models", json: addModel() },
            headers: {},
          },
        ];
        for (const c of authCases) {
          await t.step(c.name, async () => {
            checkError(await send(keyed.url, c.call, c.headers), {
              http: 401,
              status: "UNAUTHORIZED",
              message: /missing|key/i,
            });
          });
        }
        await t.step("wrong key", async () => {
          checkError(
            await send(keyed.url, { method: "GET", path: `/v1/models/${mine.model}` }, {
              authorization: "Bearer wrong-key",
            }),
            { http: 401, status: "UNAUTHORIZED", message: /key/i },
          );
        });
        await t.step("not a bearer key", async () => {
          checkError(
            await send(keyed.url, execution(mine.compilation), { authorization: "secret-key" }),
            { http: 401, status: "UNAUTHORIZED", message: /bearer|key/i },
          );
        });
        const hidden: { name: string; call: Call; id: string }[] = [
          {
            name: "bob cannot get alice's model",
            call: { method: "GET", path: `/v1/models/${mine.model}` },
            id: mine.model,
          },
          {
            name: "bob cannot compile alice's model",
            call: { path: "/v1/compilations", json: { model: mine.model } },
            id: mine.model,
          },
          {
            name: "bob cannot ask alice's model's supported operations",
            call: { path: `/v1/models/${mine.model}/supported-operations`, json: {} },
            id: mine.model,
          },
          {
            name: "bob cannot execute alice's compilation",
            call: execution(mine.compilation),
            id: mine.compilation,
          },
          {
            name: "bob cannot delete alice's compilation",
            call: { method: "DELETE", path: `/v1/compilations/${mine.compilation}` },
            id: mine.compilation,
          },
          {
            name: "bob cannot delete alice's model",
            call: { method: "DELETE", path: `/v1/models/${mine.model}` },
            id: mine.model,
          },
        ];
        for (const c of hidden) {
          await t.step(c.name, async () => {
            checkError(await send(keyed.url, c.call, bob), {
              http: 404,
              status: NOT_FOUND,
              message: new RegExp(c.id),
            });
          });
        }
        await t.step("alice still has her model and compilation", async () => {
          const model = await send(
            keyed.url,
            { method: "GET", path: `/v1/models/${mine.model}` },
            alice,
          );
          strictEqual(model.http, 200, JSON.stringify(model.body));
          const run = await send(keyed.url, execution(mine.compilation), alice);
          strictEqual(run.http, 200, JSON.stringify(run.body));
        });
        await t.step("the keyed server still answers /healthz", async () => {
          const { http } = await send(keyed.url, { method: "GET", path: "/healthz" });
          strictEqual(http, 200);
        });
      } finally {
        await keyed.close();
        await Deno.remove(keyedDir, { recursive: true });
      }
    },
  );

  await Deno.remove(dataDir, { recursive: true });

  await t.step("no response in the suite was a 500", () => {
    const failures = responses.filter((r) => r.http >= 500);
    deepStrictEqual(failures, []);
  });
});
