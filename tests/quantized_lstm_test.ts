/**
 * QUANTIZED_LSTM end to end: each model is registered with a real server, reported
 * supported on cpu-reference, compiled and run over HTTP, for two time steps (the second
 * fed the first one's output_state_out and cell_state_out). The expected values come from
 * a float64 LSTM written here, not from the kernel: it dequantizes the step's inputs and
 * weights with their declared quantization (biases: input scale x weights scale without
 * layer norm, layer-norm weights scale / 1024 with it, as TFLite quantizes them), computes
 * the gates, the cell state, the hidden state o * tanh(c) (limited to what its int8
 * quantization can hold) and the projection in floating point, and divides by the output
 * scales. The server's integers must lie within a stated tolerance of those real values
 * (see `checkCase`); output and output_state_out must be equal.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { seededFloats } from "../kernels/seeded_random.ts";
import { compileOnReference, type TestServer, withTestServer } from "./server_fixture.ts";

type Gate = "input" | "forget" | "cell" | "output";
const GATES: Gate[] = ["input", "forget", "cell", "output"];

/** What a test case chooses; the weights follow from `seed`. */
interface Form {
  cifg: boolean;
  peephole: boolean;
  layerNorm: boolean;
  projection: boolean;
  outputSize: number;
  cellScale: number;
  hidden: { scale: number; zeroPoint: number };
  /** output_state_in's (and the outputs') quantization. */
  state: { scale: number; zeroPoint: number };
  cellClip: number;
  projectionClip: number;
  seed: number;
}

const BATCH = 2, INPUT_SIZE = 3, UNITS = 4;
const INPUT = { scale: 1 / 128, zeroPoint: -3 };
const WEIGHTS_SCALE = 1 / 256;
const PEEPHOLE_SCALE = 2 ** -12;
const LAYER_NORM_SCALE = 2 ** -12;
const PROJECTION_SCALE = 1 / 128;

/** Integers in [-range, range] from the seeded generator. */
function ints(n: number, seed: number, range: number): number[] {
  return [...seededFloats(n, seed, 2 * range)].map(Math.round);
}

interface GateData {
  input: number[];
  recurrent: number[];
  bias: number[];
  peephole: number[] | null;
  layerNorm: number[] | null;
}

/** A case's weights, as integers. */
function weightsOf(form: Form) {
  let seed = form.seed;
  const next = (n: number, range: number) => ints(n, seed++, range);
  // Gate biases of about ±0.5 in the real domain, in the scale each form implies.
  const biasScale = form.layerNorm ? LAYER_NORM_SCALE / 1024 : WEIGHTS_SCALE * INPUT.scale;
  const gates = {} as Record<Gate, GateData>;
  for (const gate of GATES) {
    gates[gate] = {
      input: next(UNITS * INPUT_SIZE, 120),
      recurrent: next(UNITS * form.outputSize, 120),
      bias: next(UNITS, Math.round(0.5 / biasScale)),
      peephole: form.peephole && gate !== "cell" ? next(UNITS, 2048) : null,
      layerNorm: form.layerNorm ? next(UNITS, 2048).map((v) => v + 4096) : null,
    };
  }
  const projection = form.projection
    ? {
      weights: next(form.outputSize * UNITS, 100),
      bias: next(form.outputSize, Math.round(0.2 / (PROJECTION_SCALE * form.hidden.scale))),
    }
    : null;
  return { gates, projection };
}

type Weights = ReturnType<typeof weightsOf>;

/**
 * The scale of each gate's summed products: Q3.12, which the activations read without layer
 * norm, and fine enough for layer norm to normalize to about 2^-10.
 */
const INTERMEDIATE_SCALE = 2 ** -12;

function operand(type: string, dimensions: number[], scale: number, zeroPoint = 0) {
  return { type, dimensions, scale, zeroPoint };
}

/** The QUANTIZED_LSTM model of a case: states and input are model inputs, the rest constant. */
function modelOf(form: Form, weights: Weights) {
  const out = form.outputSize;
  const constant = (o: object, value: number[] | null) =>
    value === null ? { ...o, lifetime: "NO_VALUE" } : { ...o, lifetime: "CONSTANT_COPY", value };
  const w8 = (cols: number, value: number[] | null) =>
    constant(operand("TENSOR_QUANT8_SYMM", [UNITS, cols], WEIGHTS_SCALE), value);
  const q16 = (value: number[] | null, scale: number) =>
    constant(operand("TENSOR_QUANT16_SYMM", [UNITS], scale), value);
  const bias = (value: number[] | null) => constant(operand("TENSOR_INT32", [UNITS], 0), value);
  const scalar = (type: string, value: number) => constant(operand(type, [], 0), [value]);
  const g = weights.gates;
  const skipInput = (v: number[] | null) => form.cifg ? null : v;
  const state = operand(
    "TENSOR_QUANT8_ASYMM_SIGNED",
    [BATCH, out],
    form.state.scale,
    form.state.zeroPoint,
  );
  const cellState = operand("TENSOR_QUANT16_SYMM", [BATCH, UNITS], form.cellScale);
  const operands = [
    {
      ...operand("TENSOR_QUANT8_ASYMM_SIGNED", [BATCH, INPUT_SIZE], INPUT.scale, INPUT.zeroPoint),
      lifetime: "MODEL_INPUT",
    },
    ...GATES.map((gate) =>
      w8(INPUT_SIZE, gate === "input" ? skipInput(g.input.input) : g[gate].input)
    ),
    ...GATES.map((gate) =>
      w8(out, gate === "input" ? skipInput(g.input.recurrent) : g[gate].recurrent)
    ),
    q16(skipInput(g.input.peephole), PEEPHOLE_SCALE),
    q16(g.forget.peephole, PEEPHOLE_SCALE),
    q16(g.output.peephole, PEEPHOLE_SCALE),
    ...GATES.map((gate) => bias(gate === "input" ? skipInput(g.input.bias) : g[gate].bias)),
    constant(
      operand("TENSOR_QUANT8_SYMM", [out, UNITS], PROJECTION_SCALE),
      weights.projection?.weights ?? null,
    ),
    constant(operand("TENSOR_INT32", [out], 0), weights.projection?.bias ?? null),
    { ...state, lifetime: "MODEL_INPUT" },
    { ...cellState, lifetime: "MODEL_INPUT" },
    ...GATES.map((gate) =>
      q16(gate === "input" ? skipInput(g.input.layerNorm) : g[gate].layerNorm, LAYER_NORM_SCALE)
    ),
    scalar("FLOAT32", form.cellClip),
    scalar("FLOAT32", form.projectionClip),
    ...GATES.map(() => scalar("FLOAT32", INTERMEDIATE_SCALE)),
    scalar("INT32", form.hidden.zeroPoint),
    scalar("FLOAT32", form.hidden.scale),
    { ...state, lifetime: "MODEL_OUTPUT" },
    { ...cellState, lifetime: "MODEL_OUTPUT" },
    { ...state, lifetime: "MODEL_OUTPUT" },
  ];
  return {
    operands,
    operations: [{ type: "QUANTIZED_LSTM", inputs: [...Array(32).keys()], outputs: [32, 33, 34] }],
    inputIndexes: [0, 18, 19],
    outputIndexes: [32, 33, 34],
  };
}

const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));
const clamp = (x: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, x));

/**
 * One step in float64 from the quantized inputs. Returns the real values the outputs should
 * hold, in quantized units before rounding: the output (state) and the cell state.
 */
function referenceStep(
  form: Form,
  weights: Weights,
  step: { input: number[]; state: number[]; cell: number[] },
) {
  const out = form.outputSize;
  const cellOut: number[] = [];
  const output: number[] = [];
  for (let b = 0; b < BATCH; b++) {
    const x = step.input.slice(b * INPUT_SIZE, (b + 1) * INPUT_SIZE).map((q) =>
      (q - INPUT.zeroPoint) * INPUT.scale
    );
    const h = step.state.slice(b * out, (b + 1) * out).map((q) =>
      (q - form.state.zeroPoint) * form.state.scale
    );
    const c = step.cell.slice(b * UNITS, (b + 1) * UNITS).map((q) => q * form.cellScale);
    const gate = (name: Gate, cellState: number[]) => {
      const g = weights.gates[name];
      const pre = [...Array(UNITS).keys()].map((u) => {
        let sum = 0;
        for (let j = 0; j < INPUT_SIZE; j++) {
          sum += g.input[u * INPUT_SIZE + j] * WEIGHTS_SCALE * x[j];
        }
        for (let k = 0; k < out; k++) sum += g.recurrent[u * out + k] * WEIGHTS_SCALE * h[k];
        if (g.peephole) sum += g.peephole[u] * PEEPHOLE_SCALE * cellState[u];
        return g.layerNorm ? sum : sum + g.bias[u] * WEIGHTS_SCALE * INPUT.scale;
      });
      if (!g.layerNorm) return pre;
      const mean = pre.reduce((a, v) => a + v, 0) / UNITS;
      const std = Math.sqrt(pre.reduce((a, v) => a + (v - mean) ** 2, 0) / UNITS);
      return pre.map((v, u) =>
        (v - mean) / std * g.layerNorm![u] * LAYER_NORM_SCALE + g.bias[u] * LAYER_NORM_SCALE / 1024
      );
    };
    const f = gate("forget", c).map(sigmoid);
    const z = gate("cell", c).map(Math.tanh);
    const i = form.cifg ? f.map((v) => 1 - v) : gate("input", c).map(sigmoid);
    const cellLimit = form.cellClip > 0 ? form.cellClip : Infinity;
    const next = c.map((cu, u) =>
      clamp(
        clamp(f[u] * cu + i[u] * z[u], -cellLimit, cellLimit),
        -32768 * form.cellScale,
        32767 * form.cellScale,
      )
    );
    const o = gate("output", next).map(sigmoid);
    // The hidden state as its int8 quantization can hold it.
    const { scale: hs, zeroPoint: hz } = form.hidden;
    const hidden = next.map((cu, u) =>
      (clamp(o[u] * Math.tanh(cu) / hs + hz, -128, 127) - hz) * hs
    );
    cellOut.push(...next.map((v) => v / form.cellScale));
    if (!weights.projection) {
      output.push(...hidden.map((v) => v / hs + hz));
      continue;
    }
    const p = weights.projection;
    const limit = form.projectionClip > 0 ? form.projectionClip : Infinity;
    for (let v = 0; v < out; v++) {
      let sum = p.bias[v] * PROJECTION_SCALE * hs;
      for (let u = 0; u < UNITS; u++) {
        sum += p.weights[v * UNITS + u] * PROJECTION_SCALE * hidden[u];
      }
      output.push(
        clamp(clamp(sum, -limit, limit) / form.state.scale + form.state.zeroPoint, -128, 127),
      );
    }
  }
  return { output, cell: cellOut };
}

/** Registers and compiles a model on cpu-reference; returns a function running one step. */
async function compile(server: TestServer, model: unknown) {
  const run = await compileOnReference(server, model);
  return (inputs: number[][]) => run(inputs.map((data) => ({ data })));
}

function within(actual: number[], expected: number[], units: number, what: string) {
  strictEqual(actual.length, expected.length, what);
  actual.forEach((a, i) =>
    ok(
      Math.abs(a - expected[i]) <= units,
      `${what}[${i}] = ${a}, expected ${expected[i].toFixed(2)} ± ${units}`,
    )
  );
}

/**
 * Runs two steps of a case through the server and checks both against the reference:
 * the outputs within 1 int8 unit, the cell state within 0.002 in real terms (the integer
 * layer norm resolves normalized gates to about 2^-10 and the 16-bit sigmoid and tanh are
 * within 2^-10 at worst; over eight seeds the largest deviations seen were 0.0013 and 0.61).
 * Returns every output and cell state value the server gave.
 */
async function checkCase(
  server: TestServer,
  form: Form,
) {
  const seen = { output: [] as number[], cell: [] as number[] };
  const weights = weightsOf(form);
  const run = await compile(server, modelOf(form, weights));
  let step = {
    input: ints(BATCH * INPUT_SIZE, form.seed + 100, 120),
    state: ints(BATCH * form.outputSize, form.seed + 101, 60).map((v) => v + form.state.zeroPoint),
    cell: ints(BATCH * UNITS, form.seed + 102, 0.6 / form.cellScale),
  };
  for (let t = 0; t < 2; t++) {
    const [stateOut, cellOut, output] = await run([step.input, step.state, step.cell]);
    deepStrictEqual(stateOut.dimensions, [BATCH, form.outputSize]);
    deepStrictEqual(cellOut.dimensions, [BATCH, UNITS]);
    deepStrictEqual(output.data, stateOut.data, "output equals output_state_out");
    const expected = referenceStep(form, weights, step);
    within(output.data, expected.output, 1, `step ${t} output`);
    within(cellOut.data, expected.cell, 0.002 / form.cellScale, `step ${t} cell_state_out`);
    ok(new Set(output.data).size > 2, `step ${t} output is not saturated: ${output.data}`);
    seen.output.push(...output.data);
    seen.cell.push(...cellOut.data);
    step = {
      input: ints(BATCH * INPUT_SIZE, form.seed + 103 + t, 120),
      state: stateOut.data,
      cell: cellOut.data,
    };
  }
  return seen;
}

const BASE: Form = {
  cifg: false,
  peephole: false,
  layerNorm: false,
  projection: false,
  outputSize: UNITS,
  cellScale: 2 ** -11,
  hidden: { scale: 1 / 128, zeroPoint: 0 },
  state: { scale: 1 / 128, zeroPoint: 0 },
  cellClip: 0,
  projectionClip: 0,
  seed: 1,
};

Deno.test("QUANTIZED_LSTM: full cell with layer norm, no CIFG, peephole or projection", async () => {
  await withTestServer({}, async (server) => {
    await checkCase(server, { ...BASE, layerNorm: true, seed: 11 });
  });
});

Deno.test("QUANTIZED_LSTM: CIFG with peephole, gate biases without layer norm", async () => {
  await withTestServer({}, async (server) => {
    const hidden = { scale: 1 / 100, zeroPoint: 4 };
    const form = { ...BASE, cifg: true, peephole: true, hidden, state: hidden, seed: 23 };
    await checkCase(server, form);
  });
});

Deno.test("QUANTIZED_LSTM: projection with clips, layer norm, nonzero zero points", async () => {
  await withTestServer({}, async (server) => {
    const form: Form = {
      ...BASE,
      layerNorm: true,
      projection: true,
      outputSize: 3,
      cellScale: 2 ** -15,
      hidden: { scale: 1 / 120, zeroPoint: 3 },
      state: { scale: 1 / 64, zeroPoint: -2 },
      cellClip: 0.4,
      projectionClip: 0.25,
      seed: 37,
    };
    const seen = await checkCase(server, form);
    // Both clips bind: 0.4 / 2^-15 = 13107.2 cell units, -2 ± 0.25 x 64 output units.
    ok(seen.cell.some((c) => Math.abs(c) === 13107), `cell clip reached: ${seen.cell}`);
    ok(seen.output.some((o) => o === -18 || o === 14), `projection clip reached: ${seen.output}`);
  });
});
