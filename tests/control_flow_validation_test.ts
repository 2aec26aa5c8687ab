/**
 * Validation of models with referenced subgraphs (NNAPI validateModel with IF and WHILE):
 * each fault is 400 INVALID_ARGUMENT whose message names it and whose path points at it;
 * faults found only at execution (a loop growing a tensor its subgraph declares fixed) are
 * 400 naming the operation.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { float32Tensor, type TestServer, withTestServer } from "./server_fixture.ts";
import {
  binaryGraph,
  condition,
  type ControlFlowModel,
  type GraphJson,
  ifAddOrMul,
  subgraph,
  whileFibonacci,
  whileGrowing,
} from "./control_flow_models.ts";

/** Registers a model that must be refused; checks the message and the path. */
async function refused(
  server: TestServer,
  model: ControlFlowModel,
  expected: { message: string | RegExp; path?: (string | number)[] },
): Promise<void> {
  const response = await server.request("POST", "/v1/models", model);
  strictEqual(response.status, 400, JSON.stringify(response.body));
  strictEqual(response.body.status, "INVALID_ARGUMENT");
  const message = String(response.body.message);
  ok(
    typeof expected.message === "string"
      ? message.includes(expected.message)
      : expected.message.test(message),
    `message: ${message}`,
  );
  if (expected.path) deepStrictEqual(response.body.path, expected.path);
}

/** A graph that is an IF over referenced subgraphs `then` and `otherwise`, on x [2]. */
function ifGraph(then: number, otherwise: number): GraphJson {
  return {
    operands: [
      condition("MODEL_INPUT"),
      subgraph(then),
      subgraph(otherwise),
      float32Tensor([2], "MODEL_INPUT"),
      float32Tensor([2], "MODEL_OUTPUT"),
    ],
    operations: [{ type: "IF", inputs: [0, 1, 2, 0, 3], outputs: [4] }],
    inputIndexes: [0, 3],
    outputIndexes: [4],
  };
}

Deno.test("subgraph references must name a referenced subgraph and be SUBGRAPH through and through", async () => {
  await withTestServer({}, async (server) => {
    const outOfRange = ifAddOrMul();
    outOfRange.operands[2] = subgraph(5);
    await refused(server, outOfRange, {
      message:
        "operand 2 (SUBGRAPH) references subgraph 5, but the model has 2 referenced subgraphs",
      path: ["operands", 2, "subgraph"],
    });

    const noneAtAll = ifAddOrMul();
    delete noneAtAll.referenced;
    await refused(server, noneAtAll, { message: "references subgraph 0, but the model has 0" });

    const unnamed = ifAddOrMul();
    delete unnamed.operands[1].subgraph;
    await refused(server, unnamed, {
      message: 'operand 1 (SUBGRAPH) needs "subgraph"',
      path: ["operands", 1],
    });

    const wrongLifetime = ifAddOrMul();
    wrongLifetime.operands[1] = { ...subgraph(0), lifetime: "CONSTANT_COPY" };
    await refused(server, wrongLifetime, {
      message: "a subgraph reference has type and lifetime SUBGRAPH, got type SUBGRAPH with " +
        "lifetime CONSTANT_COPY",
      path: ["operands", 1],
    });

    const wrongType = ifAddOrMul();
    wrongType.operands[1] = { ...subgraph(0), type: "INT32" };
    await refused(server, wrongType, { message: "got type INT32 with lifetime SUBGRAPH" });

    const stray = ifAddOrMul();
    stray.operands[3] = { ...stray.operands[3], subgraph: 0 };
    await refused(server, stray, {
      message: "only a SUBGRAPH operand names a subgraph",
      path: ["operands", 3, "subgraph"],
    });

    const notAReference = ifAddOrMul();
    notAReference.operations[0].inputs = [0, 3, 2, 3, 4];
    await refused(server, notAReference, {
      message:
        "the then branch (input 1, operand 3) must be a SUBGRAPH operand, got TENSOR_FLOAT32",
      path: ["operations", 0],
    });
  });
});

Deno.test("only IF and WHILE read subgraph references, at their subgraph positions", async () => {
  await withTestServer({}, async (server) => {
    const model = ifAddOrMul();
    model.operands.push(float32Tensor([2], "TEMPORARY_VARIABLE"));
    model.operations.push({ type: "ADD", inputs: [3, 1, 4], outputs: [6] });
    await refused(server, model, {
      message: "operation 1 (ADD): input 1 (operand 1) is a subgraph reference; only IF inputs " +
        "1 and 2 and WHILE inputs 0 and 1 take one",
      path: ["operations", 1, "inputs", 1],
    });
    const asData = ifAddOrMul();
    asData.operations[0].inputs = [0, 1, 2, 1, 4];
    await refused(server, asData, {
      message: "input 3 (operand 1) is a subgraph reference",
      path: ["operations", 0, "inputs", 3],
    });
  });
});

Deno.test("referenced subgraphs may not reference one another in a cycle", async () => {
  await withTestServer({}, async (server) => {
    const twoCycle: ControlFlowModel = {
      ...ifGraph(0, 0),
      referenced: [ifGraph(1, 1), ifGraph(0, 0)],
    };
    await refused(server, twoCycle, {
      message: "referenced subgraphs form a cycle: 0 -> 1 -> 0",
      path: ["referenced", 1, "operands", 1],
    });
    const selfCycle: ControlFlowModel = {
      ...ifGraph(0, 1),
      referenced: [binaryGraph("ADD", [2]), ifGraph(1, 0)],
    };
    await refused(server, selfCycle, { message: "form a cycle: 1 -> 1" });
    // The same subgraph reached twice without a cycle is fine (a diamond): 0 and 1 both run 2,
    // which takes what ifGraph's IF passes (the condition and x) and doubles x.
    const doubling = binaryGraph("ADD", [2]);
    doubling.operands[0] = condition("MODEL_INPUT");
    doubling.operations[0].inputs = [1, 1, 2];
    const diamond: ControlFlowModel = {
      ...ifGraph(0, 1),
      referenced: [ifGraph(2, 2), ifGraph(2, 2), doubling],
    };
    const accepted = await server.request("POST", "/v1/models", diamond);
    strictEqual(accepted.status, 201, JSON.stringify(accepted.body));
  });
});

Deno.test("IF's condition must be TENSOR_BOOL8 of shape [1]", async () => {
  await withTestServer({}, async (server) => {
    for (const operand of [{ type: "TENSOR_INT32", dimensions: [1] }, { dimensions: [2] }]) {
      const model = ifAddOrMul();
      model.operands[0] = { ...model.operands[0], ...operand };
      await refused(server, model, {
        message:
          /operation 0 \(IF\): the condition \(input 0\) \(operand 0\) must be TENSOR_BOOL8 of shape \[1\]/,
        path: ["operations", 0],
      });
    }
  });
});

Deno.test("IF's branches must match its inputs and outputs in count, type, shape and quantization", async () => {
  await withTestServer({}, async (server) => {
    const inputType = ifAddOrMul();
    inputType.referenced![1].operands[0] = float32Tensor([3], "MODEL_INPUT");
    await refused(server, inputType, {
      message: "the else branch (subgraph 1) input 0 and IF input 3: operand 0 " +
        "(TENSOR_FLOAT32 [3]) does not match operand 3 (TENSOR_FLOAT32 [2])",
      path: ["operations", 0],
    });

    const outputType = ifAddOrMul();
    outputType.referenced![0].operands[3] = {
      ...float32Tensor([2], "MODEL_OUTPUT"),
      type: "TENSOR_FLOAT16",
    };
    await refused(server, outputType, {
      message: "the then branch (subgraph 0) output 0 and IF output 0",
    });

    const inputCount = ifAddOrMul();
    inputCount.operations[0].inputs = [0, 1, 2, 3];
    inputCount.operands[4].lifetime = "TEMPORARY_VARIABLE";
    inputCount.inputIndexes = [0, 3];
    await refused(server, inputCount, {
      message: "the then branch (subgraph 0) has 2 inputs; IF passes it 1",
    });

    const outputCount = ifAddOrMul();
    outputCount.operands.push(float32Tensor([2], "MODEL_OUTPUT"));
    outputCount.operations[0].outputs = [5, 6];
    outputCount.outputIndexes = [5, 6];
    await refused(server, outputCount, {
      message: "the then branch (subgraph 0) has 1 outputs; IF has 2",
    });

    const tooFew = ifAddOrMul();
    tooFew.operations[0].inputs = [0, 1];
    tooFew.inputIndexes = [0, 3, 4];
    await refused(server, tooFew, { message: "expected at least 3 inputs" });

    // Unknown extents on either side are compatible.
    const unknown = ifAddOrMul([0]);
    unknown.referenced![0].operands[0] = float32Tensor([0], "MODEL_INPUT");
    strictEqual((await server.request("POST", "/v1/models", unknown)).status, 201);
  });
});

Deno.test("WHILE's condition and body must agree with its inputs and outputs", async () => {
  await withTestServer({}, async (server) => {
    const conditionOutput = whileFibonacci();
    conditionOutput.referenced![0].operations[0].type = "ADD";
    conditionOutput.referenced![0].operands[4] = float32Tensor([1], "MODEL_OUTPUT");
    conditionOutput.referenced![0].operations[0].inputs = [2, 3, 5];
    conditionOutput.referenced![0].operands.push({
      type: "INT32",
      dimensions: [],
      scale: 0,
      zeroPoint: 0,
      lifetime: "CONSTANT_COPY",
      value: [0],
    });
    await refused(server, conditionOutput, {
      message: "the condition (subgraph 0) output 0 (operand 4) must be TENSOR_BOOL8 of shape [1]",
      path: ["operations", 0],
    });

    const conditionOutputs = whileFibonacci();
    const cond = conditionOutputs.referenced![0];
    cond.operands.push(condition("MODEL_OUTPUT"));
    cond.operations.push({ type: "GREATER", inputs: [2, 3], outputs: [5] });
    cond.outputIndexes = [4, 5];
    await refused(server, conditionOutputs, {
      message: "the condition (subgraph 0) has 2 outputs; it must have exactly 1",
    });

    const bodyInputs = whileFibonacci();
    bodyInputs.referenced![1].inputIndexes = [0, 1, 2];
    bodyInputs.referenced![1].operands[3] = float32Tensor([1], "CONSTANT_COPY", [0]);
    await refused(server, bodyInputs, {
      message: "the body (subgraph 1) has 3 inputs; WHILE passes it 4",
    });

    const bodyOutputs = whileFibonacci();
    bodyOutputs.operands.push(
      float32Tensor([1], "MODEL_OUTPUT"),
      float32Tensor([1], "MODEL_OUTPUT"),
    );
    bodyOutputs.operations[0].outputs = [6, 7, 8, 9];
    bodyOutputs.outputIndexes = [6, 7, 8, 9];
    await refused(server, bodyOutputs, {
      message: "the body (subgraph 1) has 3 outputs; it needs at least the WHILE's 4",
    });

    const state = whileFibonacci();
    state.referenced![1].operands[9] = float32Tensor([2], "MODEL_OUTPUT");
    await refused(server, state, {
      message:
        /the body \(subgraph 1\) input 2 and its output 2: operand 2 \(TENSOR_FLOAT32 \[1\]\) does not match operand 9 \(TENSOR_FLOAT32 \[2\]\)/,
    });

    const quantization = whileFibonacci();
    quantization.operands[2] = {
      type: "TENSOR_QUANT8_ASYMM",
      dimensions: [1],
      scale: 0.5,
      zeroPoint: 0,
      lifetime: "CONSTANT_COPY",
      value: [0],
    };
    await refused(server, quantization, {
      message:
        "the condition (subgraph 0) input 0 and WHILE input 2: operand 0 (TENSOR_FLOAT32 [1])" +
        " does not match operand 2 (TENSOR_QUANT8_ASYMM [1] scale 0.5 zeroPoint 0)",
    });
  });
});

Deno.test("a fault inside a referenced subgraph names the subgraph", async () => {
  await withTestServer({}, async (server) => {
    const model = ifAddOrMul();
    model.referenced![1].operands[2] = { ...model.referenced![1].operands[2], value: [9] };
    await refused(server, model, {
      message: /^referenced subgraph 1: operation 0 \(MUL\): .*9/,
      path: ["referenced", 1, "operations", 0],
    });
    const empty = ifAddOrMul();
    empty.referenced!.push({ ...binaryGraph("ADD", [2]), operations: [] });
    await refused(server, empty, {
      message: "referenced subgraph 2: the subgraph has no operations",
      path: ["referenced", 2, "operations"],
    });
    const lifetime = ifAddOrMul();
    lifetime.referenced![0].operands[0].lifetime = "TEMPORARY_VARIABLE";
    await refused(server, lifetime, {
      message: "referenced subgraph 0: inputIndexes[0]: operand 0 has lifetime TEMPORARY_VARIABLE",
      path: ["referenced", 0, "inputIndexes", 0],
    });
  });
});

Deno.test("an unused referenced subgraph is validated and accepted, as NNAPI does", async () => {
  await withTestServer({}, async (server) => {
    const unused = { ...binaryGraph("ADD", [2]), referenced: [binaryGraph("MUL", [2])] };
    const accepted = await server.request("POST", "/v1/models", unused);
    strictEqual(accepted.status, 201, JSON.stringify(accepted.body));
    strictEqual(accepted.body.halVersion, "V1_3");
    const broken = { ...binaryGraph("ADD", [2]), referenced: [binaryGraph("MUL", [2])] };
    broken.referenced[0].operations[0].inputs = [0, 1, 7];
    await refused(server, broken, {
      message: "referenced subgraph 0: operation 0 (MUL): inputs[2] = 7 is not an operand",
    });
  });
});

Deno.test("a WHILE body that outgrows its subgraph's declared shape fails at execution, naming it", async () => {
  await withTestServer({}, async (server) => {
    const model = whileGrowing();
    model.referenced![1].operands[0] = float32Tensor([1], "MODEL_INPUT");
    model.referenced![0].operands[0] = float32Tensor([1], "MODEL_INPUT");
    const registered = await server.request("POST", "/v1/models", model);
    strictEqual(registered.status, 201, JSON.stringify(registered.body));
    const compilation = await server.request("POST", "/v1/compilations", {
      model: registered.body.id,
    });
    strictEqual(compilation.status, 201, JSON.stringify(compilation.body));
    const run = (n: number) =>
      server.request("POST", `/v1/compilations/${compilation.body.id}/executions`, {
        inputs: [{ data: [1], dimensions: [1] }, { data: [n] }],
      });
    const never = await run(0);
    strictEqual(never.status, 200, JSON.stringify(never.body));
    deepStrictEqual(never.body.outputs, [{ dimensions: [1], data: [1] }]);
    // After one iteration x is [2], which the condition (subgraph 0) declares [1].
    const once = await run(1);
    strictEqual(once.status, 400, JSON.stringify(once.body));
    strictEqual(
      once.body.message,
      "operation 0 (WHILE): referenced subgraph 0 input 0 (operand 0) is declared [1] but is " +
        "given [2]",
    );
    deepStrictEqual(once.body.path, ["operations", 0]);
  });
});
