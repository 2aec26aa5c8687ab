/**
 * ONNX LSTM, RNN and GRU against onnxruntime-node (see tests/onnx/compare.ts): every
 * direction, with and without initial states and biases, omitted outputs, and the refusals.
 */
import { deepStrictEqual, rejects } from "node:assert/strict";
import * as ort from "onnxruntime-node";
import { convertOnnx } from "../converter/onnx/convert.ts";
import { type TestServer, withTestServer } from "./server_fixture.ts";
import {
  assertClose,
  type AttributeValue,
  type GraphSpec,
  onnx,
  onnxBytes,
  seeded,
} from "../tools/onnx_graphs.ts";
import { compare, compareBytes, weights } from "./onnx/compare.ts";

type Op = "LSTM" | "RNN" | "GRU";

/** Gates stacked in W and R, and state inputs and outputs (besides Y), of each operator. */
const SHAPES: Record<Op, { gates: number; states: string[] }> = {
  LSTM: { gates: 4, states: ["h", "c"] },
  RNN: { gates: 1, states: ["h"] },
  GRU: { gates: 3, states: ["h"] },
};

/** One recurrent node in a graph of its own. */
interface Case {
  op: Op;
  direction?: "forward" | "reverse" | "bidirectional";
  /** Initial states as graph inputs (else omitted: zeros). */
  state?: boolean;
  bias?: boolean;
  /** LSTM's peepholes. */
  peephole?: boolean;
  /** Which of Y, Y_h (and LSTM's Y_c) the node produces; all by default. */
  outputs?: boolean[];
  /** Sequence length and batch: numbers, or names for extents known only at execution. */
  seq?: number | string;
  batch?: number | string;
  attributes?: Record<string, AttributeValue>;
  /** A sequence_lens input (refused). */
  sequenceLens?: boolean;
  /** The ONNX element type of X, the states and the outputs (float32 unless said). */
  type?: number;
}

const [INPUT, HIDDEN] = [3, 4];
const FLOAT16 = onnx.TensorProto.DataType.FLOAT16;

/** The graph of a case; weights seeded by `seed`. */
function recurrent(c: Case, seed = 60): GraphSpec {
  const { gates, states } = SHAPES[c.op];
  const dirs = c.direction === "bidirectional" ? 2 : 1;
  const seq = c.seq ?? 5;
  const batch = c.batch ?? 2;
  const wanted = c.outputs ?? [true, true, true];
  const stateDims = [dirs, batch, HIDDEN];
  const names = ["y", ...states.map((s) => `y${s}`)];
  const outputDims = [[seq, dirs, batch, HIDDEN], ...states.map(() => stateDims)];
  const given = names.map((name, i) => wanted[i] ? name : "");
  while (given.at(-1) === "") given.pop();
  const inputs = [
    "x",
    "w",
    "r",
    c.bias ? "b" : "",
    c.sequenceLens ? "lens" : "",
    ...states.map((s) => c.state ? `${s}0` : ""),
    ...(c.peephole ? ["p"] : []),
  ];
  while (inputs.at(-1) === "") inputs.pop();
  return {
    inputs: [
      { name: "x", dims: [seq, batch, INPUT], type: c.type },
      ...(c.state ? states.map((s) => ({ name: `${s}0`, dims: stateDims, type: c.type })) : []),
    ],
    outputs: names.flatMap((name, i) =>
      wanted[i] ? [{ name, dims: outputDims[i], type: c.type }] : []
    ),
    nodes: [{
      op: c.op,
      inputs,
      outputs: given,
      attributes: {
        hidden_size: HIDDEN,
        ...(c.direction ? { direction: c.direction } : {}),
        ...c.attributes,
      },
    }],
    initializers: [
      weights("w", [dirs, gates * HIDDEN, INPUT], seed),
      weights("r", [dirs, gates * HIDDEN, HIDDEN], seed + 1),
      ...(c.bias ? [weights("b", [dirs, 2 * gates * HIDDEN], seed + 2)] : []),
      ...(c.peephole ? [weights("p", [dirs, 3 * HIDDEN], seed + 3)] : []),
      ...(c.sequenceLens
        ? [{ name: "lens", dims: [batch as number], values: [5, 5], int64: true }]
        : []),
    ],
    opset: 14,
  };
}

/** What a case is, for messages. */
function describe(c: Case): string {
  const flags = ["state", "bias", "peephole"].filter((k) => c[k as keyof Case]);
  return `${c.op} ${c.direction ?? "forward"} ${flags.join(" ")} ${
    JSON.stringify(c.attributes ?? {})
  } outputs ${c.outputs ?? "all"}`;
}

/** Compares a case (symbolic extents given as `runAs` at execution) with onnxruntime. */
function check(server: TestServer, c: Case, runAs = { seq: 5, batch: 2 }) {
  const spec = recurrent(c);
  if (typeof c.seq !== "string" && typeof c.batch !== "string") {
    return compare(server, spec, describe(c));
  }
  const shapes = Object.fromEntries(spec.inputs.map((v) => [
    v.name,
    v.dims.map((d) => d === c.seq ? runAs.seq : d === c.batch ? runAs.batch : d as number),
  ]));
  return compareBytes(server, onnxBytes(spec), shapes, describe(c));
}

const DIRECTIONS = ["forward", "reverse", "bidirectional"] as const;

Deno.test("LSTM in every direction onto the sequence LSTM operations", async () => {
  await withTestServer({}, async (server) => {
    for (const direction of DIRECTIONS) {
      await check(server, { op: "LSTM", direction, state: true, bias: true, peephole: true });
      await check(server, { op: "LSTM", direction });
    }
    const { conversion } = await check(server, { op: "LSTM", direction: "bidirectional" });
    deepStrictEqual(
      conversion.model.operations.map((o) => o.type).filter((t) => t.includes("LSTM")),
      ["BIDIRECTIONAL_SEQUENCE_LSTM"],
    );
  });
});

Deno.test("LSTM with omitted outputs, runtime extents, and its refusals", async () => {
  await withTestServer({}, async (server) => {
    for (const outputs of [[true], [false, true], [false, false, true]]) {
      await check(server, { op: "LSTM", direction: "reverse", bias: true, outputs });
      await check(server, { op: "LSTM", direction: "bidirectional", state: true, outputs });
    }
    // The bidirectional operation needs neither extent; initial states carry the batch.
    await check(server, {
      op: "LSTM",
      direction: "bidirectional",
      state: true,
      bias: true,
      seq: "seq",
      batch: "batch",
    }, { seq: 3, batch: 2 });
    // Reversed along a sequence length known only at execution: a RANGE counts down there.
    for (const seq of [1, 4]) {
      await check(server, { op: "LSTM", direction: "reverse", state: true, seq: "seq" }, {
        seq,
        batch: 2,
      });
    }
    // No initial states and the batch known only at execution: zeros FILLed there.
    for (const batch of [1, 3]) {
      await check(server, { op: "LSTM", batch: "batch" }, { seq: 5, batch });
      await check(server, { op: "GRU", batch: "batch" }, { seq: 2, batch });
    }
    await rejects(
      () => check(server, { op: "LSTM", attributes: { layout: 1 } }),
      /layout 1 \(batch-major\)/,
    );
    await rejects(
      () => check(server, { op: "LSTM", sequenceLens: true }),
      /LSTM sequence_lens is not supported/,
    );
    await rejects(
      () => check(server, { op: "LSTM", attributes: { input_forget: 1 } }),
      /LSTM input_forget is not supported/,
    );
    await rejects(
      () => check(server, { op: "LSTM", attributes: { clip: { float: 3 } } }),
      /LSTM clip is not supported/,
    );
  });
});

Deno.test("RNN in every direction onto the sequence RNN operations", async () => {
  await withTestServer({}, async (server) => {
    for (const direction of DIRECTIONS) {
      await check(server, { op: "RNN", direction, state: true, bias: true });
      await check(server, { op: "RNN", direction });
    }
    for (const activation of ["Relu", "Sigmoid"]) {
      const activations = { strings: [activation, activation] };
      await check(server, {
        op: "RNN",
        direction: "bidirectional",
        bias: true,
        attributes: { activations },
      });
      await check(server, { op: "RNN", attributes: { activations: { strings: [activation] } } });
    }
    await check(server, { op: "RNN", direction: "reverse", state: true, outputs: [false, true] });
    await check(server, { op: "RNN", direction: "bidirectional", outputs: [true, false] });
    await check(
      server,
      { op: "RNN", direction: "reverse", state: true, bias: true, batch: "batch" },
      { seq: 5, batch: 3 },
    );
    await rejects(
      () =>
        check(server, {
          op: "RNN",
          direction: "bidirectional",
          attributes: { activations: { strings: ["Tanh", "Relu"] } },
        }),
      /RNN activations tanh, relu are not supported/,
    );
    await rejects(
      () => check(server, { op: "RNN", sequenceLens: true }),
      /RNN sequence_lens is not supported/,
    );
  });
});

Deno.test("GRU unrolled, linear_before_reset 0 and 1, in every direction", async () => {
  await withTestServer({}, async (server) => {
    for (const linear_before_reset of [0, 1]) {
      const attributes = { linear_before_reset };
      for (const direction of DIRECTIONS) {
        await check(server, { op: "GRU", direction, state: true, bias: true, attributes });
        await check(server, { op: "GRU", direction, attributes });
      }
      await check(server, { op: "GRU", bias: true, attributes });
      await check(server, { op: "GRU", direction: "reverse", state: true, attributes });
    }
  });
});

Deno.test("GRU with omitted outputs, a runtime batch, and its refusals", async () => {
  await withTestServer({}, async (server) => {
    const attributes = { linear_before_reset: 1 };
    await check(server, { op: "GRU", direction: "bidirectional", bias: true, outputs: [true] });
    await check(server, { op: "GRU", direction: "reverse", state: true, outputs: [false, true] });
    await check(server, { op: "GRU", seq: 1, bias: true, attributes });
    // No initial state: the first step has no recurrent terms, so no batch is needed.
    for (const state of [false, true]) {
      await check(server, {
        op: "GRU",
        direction: "bidirectional",
        state,
        bias: true,
        batch: "batch",
        attributes,
      }, { seq: 5, batch: 3 });
    }
    const { conversion } = await check(server, { op: "GRU", direction: "bidirectional" });
    const types = new Set(conversion.model.operations.map((o) => o.type));
    deepStrictEqual(types.has("FULLY_CONNECTED") && types.has("LOGISTIC"), true);
    await rejects(
      () => check(server, { op: "GRU", seq: "seq" }),
      /GRU \(unrolled over its time steps\) needs the sequence length known at conversion/,
    );
    await rejects(
      () => check(server, { op: "GRU", sequenceLens: true }),
      /GRU sequence_lens is not supported/,
    );
    await rejects(
      () =>
        check(server, { op: "GRU", attributes: { activations: { strings: ["Tanh", "Tanh"] } } }),
      /GRU activations Tanh, Tanh are not supported \(only Sigmoid, Tanh\)/,
    );
    await rejects(
      () => check(server, { op: "GRU", attributes: { clip: { float: 2 } } }),
      /GRU clip is not supported/,
    );
  });
});

Deno.test("float16 LSTM, RNN and GRU run in float16 (onnxruntime runs the float32 graph)", async () => {
  await withTestServer({}, async (server) => {
    const cases: Case[] = [
      { op: "LSTM", direction: "bidirectional", state: true, bias: true, peephole: true },
      { op: "LSTM", direction: "reverse", bias: true },
      { op: "RNN", direction: "bidirectional", bias: true },
      { op: "GRU", direction: "reverse", state: true, attributes: { linear_before_reset: 1 } },
    ];
    for (const c of cases) {
      const float32 = recurrent(c);
      const feeds = Object.fromEntries(float32.inputs.map((v, i) => {
        const dims = v.dims as number[];
        return [v.name, new ort.Tensor("float32", seeded(dims, 90 + i, 1), dims)];
      }));
      const session = await ort.InferenceSession.create(onnxBytes(float32));
      const expected = await session.run(feeds);
      await session.release();
      const conversion = convertOnnx(onnxBytes(recurrent({ ...c, type: FLOAT16 })), {});
      const call = async (path: string, body: unknown) => {
        const { status, body: json } = await server.request("POST", path, body);
        deepStrictEqual(status < 300, true, `${describe(c)}: ${path} ${JSON.stringify(json)}`);
        return json;
      };
      const model = await call("/v1/models", conversion.model);
      const compilation = await call("/v1/compilations", { model: model.id });
      const execution = await call(`/v1/compilations/${compilation.id}/executions`, {
        inputs: conversion.inputs.map((info) => ({ data: Array.from(feeds[info.name].data) })),
      });
      const outputs = execution.outputs as { data: number[] }[];
      conversion.outputs.forEach((info, i) => {
        const want = Array.from(expected[info.name].data as Float32Array);
        assertClose(outputs[i].data, want, `float16 ${describe(c)}: ${info.name}`, 2e-3);
      });
    }
  });
});
