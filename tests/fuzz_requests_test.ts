import { ok } from "node:assert/strict";
import { addModel, startTestServer } from "./server_fixture.ts";

/** A quant8 CONV_2D (explicit padding, 10 inputs) followed by a float DEQUANTIZE. */
function convModel() {
  const i32 = (v: number) => ({
    type: "INT32",
    dimensions: [],
    lifetime: "CONSTANT_COPY",
    value: [v],
  });
  const q8 = (dimensions: number[], lifetime: string, scale: number, zeroPoint = 0) => ({
    type: "TENSOR_QUANT8_ASYMM",
    dimensions,
    scale,
    zeroPoint,
    lifetime,
  });
  return {
    operands: [
      q8([1, 3, 3, 2], "MODEL_INPUT", 0.5),
      { ...q8([2, 2, 2, 2], "CONSTANT_COPY", 0.5, 127), value: new Array(16).fill(130) },
      {
        type: "TENSOR_INT32",
        dimensions: [2],
        scale: 0.25,
        lifetime: "CONSTANT_COPY",
        value: [4, -4],
      },
      i32(0),
      i32(1),
      i32(0),
      i32(1),
      i32(1),
      i32(1),
      i32(1),
      q8([1, 3, 3, 2], "TEMPORARY_VARIABLE", 1),
      { type: "TENSOR_FLOAT32", dimensions: [1, 3, 3, 2], lifetime: "MODEL_OUTPUT" },
    ],
    operations: [
      { type: "CONV_2D", inputs: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], outputs: [10] },
      { type: "DEQUANTIZE", inputs: [10], outputs: [11] },
    ],
    inputIndexes: [0],
    outputIndexes: [11],
  };
}

/** A small seeded generator, so a failure replays exactly. */
function generator(seed: number) {
  let s = seed >>> 0;
  const next = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(list: readonly T[]): T => list[int(list.length)];
  return { next, int, pick };
}

const WEIRD_VALUES: readonly unknown[] = [
  null,
  -1,
  0,
  1.5,
  2 ** 31,
  -(2 ** 40),
  1e308,
  "",
  "x",
  "TENSOR_FLOAT32",
  [],
  [0],
  [-1, 2],
  [2 ** 30, 2 ** 30],
  {},
  { base64: "!!" },
  { base64: "AAAA" },
  true,
];

/** Replaces, deletes or adds one field somewhere in a JSON value. */
function mutate(value: unknown, g: ReturnType<typeof generator>): unknown {
  if (Array.isArray(value)) {
    if (value.length === 0 || g.next() < 0.2) return g.pick(WEIRD_VALUES);
    const copy = [...value];
    const i = g.int(copy.length);
    if (g.next() < 0.15) copy.splice(i, 1);
    else copy[i] = mutate(copy[i], g);
    return copy;
  }
  if (value && typeof value === "object") {
    const copy: Record<string, unknown> = { ...value as Record<string, unknown> };
    const keys = Object.keys(copy);
    if (keys.length === 0 || g.next() < 0.15) return g.pick(WEIRD_VALUES);
    const key = g.pick(keys);
    const roll = g.next();
    if (roll < 0.15) delete copy[key];
    else if (roll < 0.2) copy[`extra${g.int(3)}`] = g.pick(WEIRD_VALUES);
    else copy[key] = mutate(copy[key], g);
    return copy;
  }
  return g.pick(WEIRD_VALUES);
}

Deno.test("randomly mutated models and execution requests never get a 500", async () => {
  const server = await startTestServer();
  try {
    const g = generator(Number(Deno.env.get("FUZZ_SEED") ?? 20261121));
    const conv = await server.request("POST", "/v1/models", convModel());
    ok(conv.status === 201, JSON.stringify(conv.body));
    const valid = await server.request("POST", "/v1/models", addModel(3));
    const compilation = await server.request("POST", "/v1/compilations", {
      model: valid.body.id,
    });
    const execution = {
      inputs: [{ data: [1, 2, 3] }, { base64: new Uint8Array(12).toBase64(), dimensions: [3] }],
      outputs: [{ dimensions: [3] }],
      measureTiming: true,
    };
    const seen = new Map<number, number>();
    for (let i = 0; i < 300; i++) {
      const model = mutate(i % 2 === 0 ? addModel(3) : convModel(), g);
      const registered = await server.request("POST", "/v1/models", model);
      seen.set(registered.status, (seen.get(registered.status) ?? 0) + 1);
      ok(
        registered.status < 500,
        `model ${i}: ${JSON.stringify(model)} -> ${JSON.stringify(registered.body)}`,
      );
      ok(registered.status === 201 || typeof registered.body.status === "string");
      if (registered.status === 201) {
        const compiled = await server.request("POST", "/v1/compilations", {
          model: registered.body.id,
        });
        ok(
          compiled.status < 500,
          `compile ${i}: ${JSON.stringify(model)} -> ${JSON.stringify(compiled.body)}`,
        );
        if (compiled.status === 201) {
          const run = await server.request(
            "POST",
            `/v1/compilations/${compiled.body.id}/executions`,
            execution,
          );
          ok(run.status < 500, `run ${i}: ${JSON.stringify(model)} -> ${JSON.stringify(run.body)}`);
        }
      }
      const request = mutate(execution, g);
      const run = await server.request(
        "POST",
        `/v1/compilations/${compilation.body.id}/executions`,
        request,
      );
      ok(
        run.status < 500,
        `execution ${i}: ${JSON.stringify(request)} -> ${JSON.stringify(run.body)}`,
      );
    }
    ok((seen.get(400) ?? 0) > 100, "most mutations are rejected as INVALID_ARGUMENT");
    ok((await server.request("GET", "/healthz")).status === 200);
  } finally {
    await server.close();
  }
});
