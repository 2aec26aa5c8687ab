/**
 * Plans run on the driver's thread decode JSON inputs into arrays they keep between runs
 * (driver/execution/input_arrays.ts): concurrent requests must still each get their own
 * answer, a refused request must leave nothing behind, and large inputs are not kept.
 */
import { deepStrictEqual, notStrictEqual, strictEqual } from "node:assert/strict";
import { InputArrays, MAX_KEPT_ELEMENTS } from "../driver/execution/input_arrays.ts";
import { addModel, withTestServer } from "./server_fixture.ts";

Deno.test("concurrent executions on the driver's thread each get their own inputs' answer", async () => {
  await withTestServer({}, async (server) => {
    const model = await server.request("POST", "/v1/models", addModel(4));
    const compilation = await server.request("POST", "/v1/compilations", {
      model: model.body.id,
    });
    const path = `/v1/compilations/${compilation.body.id}/executions`;
    const a = (i: number) => [i, i + 1, i + 2, i + 3];
    const b = (i: number) => [10 * i, 10 * i, 10 * i, 10 * i];
    const answers = await Promise.all(Array.from({ length: 64 }, (_, i) =>
      // Every fifth request carries a value float32 cannot hold, after valid ones: refused.
      server.request("POST", path, {
        inputs: [{ data: a(i) }, { data: i % 5 === 4 ? [1, 2, 3, 1e39] : b(i) }],
      })));
    answers.forEach((answer, i) => {
      if (i % 5 === 4) return strictEqual(answer.status, 400, `request ${i}`);
      strictEqual(answer.status, 200, `request ${i}`);
      const [output] = answer.body.outputs as { data: number[] }[];
      deepStrictEqual(output.data, a(i).map((v, k) => v + b(i)[k]), `request ${i}`);
    });
  });
});

Deno.test("InputArrays keeps one array per input and length, and none for large inputs", () => {
  const arrays = new InputArrays();
  const first = arrays.array(0, "TENSOR_FLOAT32", 4)!;
  strictEqual(first instanceof Float32Array, true);
  strictEqual(arrays.array(0, "TENSOR_FLOAT32", 4), first);
  notStrictEqual(arrays.array(1, "TENSOR_FLOAT32", 4), first);
  strictEqual(arrays.holds(first), true);
  const longer = arrays.array(0, "TENSOR_FLOAT32", 8)!;
  strictEqual(longer.length, 8);
  strictEqual(arrays.holds(first), false);
  strictEqual(arrays.array(2, "TENSOR_INT32", MAX_KEPT_ELEMENTS + 1), undefined);
  strictEqual(arrays.holds(null), false);
  strictEqual(arrays.holds(new Float32Array(4)), false);
});
