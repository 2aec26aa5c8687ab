/**
 * The validated in-memory model: operands with decoded constant values and operations in
 * run order. `buildModel` applies NNAPI's model validation (validateModel in
 * nn/common/ValidateHal.cpp) and each operation's signature check; anything it accepts the
 * rest of the driver may trust.
 */
import { DriverError, invalid } from "../../nnapi/errors.ts";
import type { GraphJson, ModelJson } from "./model_schema.ts";
import {
  type DeclaredOperand,
  OperationError,
  operationFault,
  type SubgraphSignature,
} from "../../operations/operation.ts";
import { inferShapes } from "./shape_inference.ts";
import { operationDefinition } from "../../operations/table.ts";
import { buildOperands, fail, operandVersion } from "./operands.ts";
import { checkReferenceReaders, inheritThroughReferences, referenceOrder } from "./references.ts";
import { type ChannelQuant, isFullySpecified, type TensorData } from "../../nnapi/tensor.ts";
import {
  type HalVersion,
  laterHal,
  type Lifetime,
  type OperandType,
  type OperationType,
} from "../../nnapi/types.ts";

/** A validated operand; constants carry their decoded value. */
export interface Operand {
  type: OperandType;
  dimensions: number[];
  scale: number;
  zeroPoint: number;
  lifetime: Lifetime;
  channelQuant?: ChannelQuant;
  value?: TensorData;
}

/**
 * A validated operation. `supported` is false for types the driver does not implement;
 * `halVersion` is what the operation needs in this form.
 */
export interface Operation {
  type: OperationType;
  inputs: number[];
  outputs: number[];
  supported: boolean;
  halVersion: HalVersion;
}

/**
 * One validated graph: the main graph, or a referenced subgraph that IF and WHILE run.
 * `runOrder` lists operation indexes in a valid run order.
 */
export interface Subgraph {
  operands: Operand[];
  operations: Operation[];
  inputIndexes: number[];
  outputIndexes: number[];
  runOrder: number[];
}

/** A model that passed validation: its main graph and the subgraphs it references. */
export interface Model extends Subgraph {
  relaxComputationFloat32toFloat16: boolean;
  /**
   * Whether shape inference at registration resolved every operation (no shape depends on
   * a value known only at execution), so plans may fix their tensor layout in advance.
   */
  staticShapes: boolean;
  /** The HAL version the model needs (highest over its operations and operand types). */
  halVersion: HalVersion;
  /**
   * Referenced subgraphs (NNAPI `Model.referenced`), which SUBGRAPH operands name by index;
   * each is validated like the main graph, used or not, as NNAPI does.
   */
  referenced: Subgraph[];
}

/** Resolves the bytes of a CONSTANT_REFERENCE location (memory pools). */
export type PoolResolver = (poolIndex: number, offset: number, length: number) => Uint8Array;

function checkIoIndexes(json: GraphJson, operands: Operand[]): void {
  const check = (list: number[], lifetime: Lifetime, field: string) => {
    const seen = new Set<number>();
    list.forEach((operandIndex, k) => {
      if (operandIndex >= operands.length) {
        fail(`${field}[${k}] = ${operandIndex} is not an operand index`, [field, k]);
      }
      if (seen.has(operandIndex)) {
        fail(`${field}[${k}]: operand ${operandIndex} is listed twice`, [field, k]);
      }
      seen.add(operandIndex);
      if (operands[operandIndex].lifetime !== lifetime) {
        fail(
          `${field}[${k}]: operand ${operandIndex} has lifetime ${
            operands[operandIndex].lifetime
          }, expected ${lifetime}`,
          [field, k],
        );
      }
    });
    operands.forEach((operand, i) => {
      if (operand.lifetime === lifetime && !seen.has(i)) {
        fail(`operand ${i} has lifetime ${lifetime} but is not in ${field}`, ["operands", i]);
      }
    });
  };
  check(json.inputIndexes, "MODEL_INPUT", "inputIndexes");
  check(json.outputIndexes, "MODEL_OUTPUT", "outputIndexes");
}

/** Kahn's algorithm over operand producers; rejects reads of unwritten operands and cycles. */
function runOrderOf(operations: Operation[], operands: Operand[]): number[] {
  const producer = new Map<number, number>();
  operations.forEach((op, k) => {
    for (const out of op.outputs) {
      const lifetime = operands[out].lifetime;
      if (lifetime !== "TEMPORARY_VARIABLE" && lifetime !== "MODEL_OUTPUT") {
        fail(
          `operation ${k} (${op.type}) writes operand ${out} whose lifetime is ${lifetime}`,
          ["operations", k, "outputs"],
        );
      }
      if (producer.has(out)) {
        fail(
          `operand ${out} is written by operation ${producer.get(out)} and operation ${k}`,
          ["operations", k, "outputs"],
        );
      }
      producer.set(out, k);
    }
  });
  operands.forEach((operand, i) => {
    const written = operand.lifetime === "TEMPORARY_VARIABLE" ||
      operand.lifetime === "MODEL_OUTPUT";
    if (written && !producer.has(i)) {
      fail(`operand ${i} (${operand.lifetime}) is never written by an operation`, ["operands", i]);
    }
  });
  const pending = operations.map((op) =>
    new Set(op.inputs.filter((i) => producer.has(i)).map((i) => producer.get(i)!))
  );
  const consumers = operations.map(() => [] as number[]);
  pending.forEach((deps, k) => deps.forEach((d) => consumers[d].push(k)));
  const ready = operations.map((_, k) => k).filter((k) => pending[k].size === 0);
  const order: number[] = [];
  while (ready.length > 0) {
    const k = ready.shift()!;
    order.push(k);
    for (const c of consumers[k]) {
      pending[c].delete(k);
      if (pending[c].size === 0) ready.push(c);
    }
  }
  if (order.length !== operations.length) {
    const stuck = operations.findIndex((_, k) => !order.includes(k));
    fail(`operation ${stuck} (${operations[stuck].type}) is part of a cycle`, [
      "operations",
      stuck,
    ]);
  }
  return order;
}

function declared(operands: Operand[], index: number): DeclaredOperand {
  const o = operands[index];
  return {
    index,
    type: o.type,
    dimensions: o.dimensions,
    scale: o.scale,
    zeroPoint: o.zeroPoint,
    lifetime: o.lifetime,
    channelQuant: o.channelQuant,
    value: o.value,
  };
}

/**
 * Infers shapes of temporaries from constants and declared dimensions as far as they are
 * known, filling unknown temporary dimensions and rejecting contradictions early. Returns
 * whether every supported operation was resolved.
 */
function inferStaticShapes(model: Subgraph): boolean {
  const { operands } = model;
  const steps = model.runOrder
    .map((k) => ({ operation: k, ...model.operations[k] }))
    .filter((op) => op.supported && operationDefinition(op.type));
  const { shapes, resolved } = inferShapes(
    operands.map((o) => ({
      ...o,
      declared: o.dimensions,
      value: o.lifetime === "NO_VALUE" ? null : o.value,
    })),
    steps,
    operands.map((o) =>
      isFullySpecified(o.dimensions) || o.lifetime === "NO_VALUE" ? o.dimensions : undefined
    ),
  );
  operands.forEach((o, i) => {
    if (o.lifetime === "TEMPORARY_VARIABLE" && shapes[i]) o.dimensions = [...shapes[i]];
  });
  return resolved;
}

/**
 * Runs `build` on referenced subgraph `k` (main graph: undefined), so that a fault found
 * there names the subgraph in its message and path.
 */
function inGraph<T>(k: number | undefined, build: () => T): T {
  if (k === undefined) return build();
  try {
    return build();
  } catch (error) {
    if (!(error instanceof DriverError) || error.status !== "INVALID_ARGUMENT") throw error;
    throw invalid(`referenced subgraph ${k}: ${error.message}`, {
      path: ["referenced", k, ...(error.details.path ?? [])],
    });
  }
}

/**
 * Validates the operations of one graph, each against its own signature (IF and WHILE also
 * against the referenced subgraphs' `signatures`); returns them and the highest HAL version
 * they need.
 */
function buildOperations(
  json: GraphJson,
  operands: Operand[],
  signatures: readonly SubgraphSignature[],
): { operations: Operation[]; halVersion: HalVersion } {
  let halVersion: HalVersion = "V1_0";
  const operations: Operation[] = json.operations.map((op, k) => {
    for (const [field, list] of [["inputs", op.inputs], ["outputs", op.outputs]] as const) {
      list.forEach((operandIndex, j) => {
        if (operandIndex >= operands.length) {
          fail(`operation ${k} (${op.type}): ${field}[${j}] = ${operandIndex} is not an operand`, [
            "operations",
            k,
            field,
            j,
          ]);
        }
      });
    }
    const definition = operationDefinition(op.type);
    op.inputs.forEach((operandIndex, j) => {
      if (
        operands[operandIndex]?.lifetime === "NO_VALUE" &&
        !definition?.optionalInputs?.includes(j)
      ) {
        fail(
          `operation ${k} (${op.type}): input ${j} (operand ${operandIndex}) has no value but is not optional`,
          ["operations", k, "inputs", j],
        );
      }
    });
    let supported = false;
    let needs: HalVersion = "V1_0";
    if (definition) {
      try {
        needs = definition.validate({
          type: op.type,
          inputs: op.inputs.map((i) => declared(operands, i)),
          outputs: op.outputs.map((i) => declared(operands, i)),
          referenced: signatures,
        });
        // An operation needs at least the HAL version of every operand type it touches.
        for (const i of [...op.inputs, ...op.outputs]) {
          needs = laterHal(needs, operandVersion(operands[i].type));
        }
        halVersion = laterHal(halVersion, needs);
        supported = true;
      } catch (error) {
        if (error instanceof OperationError) throw operationFault(k, op.type, error.message);
        throw error;
      }
    }
    return {
      type: op.type,
      inputs: [...op.inputs],
      outputs: [...op.outputs],
      supported,
      halVersion: needs,
    };
  });
  return { operations, halVersion };
}

/**
 * Validates a structurally parsed model as NNAPI does and returns the driver's model: every
 * graph (main and referenced) on its own, then the references between them (in range,
 * read only by IF and WHILE, acyclic), then each operation against its signature.
 * Throws an INVALID_ARGUMENT DriverError naming the graph, operand or operation at fault.
 */
export function buildModel(json: ModelJson, options: { resolvePool?: PoolResolver } = {}): Model {
  const referencedJson = json.referenced ?? [];
  const graphs: GraphJson[] = [json, ...referencedJson];
  const inReferenced = (g: number) => g === 0 ? undefined : g - 1;
  const operandLists = graphs.map((graph, g) =>
    inGraph(inReferenced(g), () => {
      const operands = buildOperands(graph, {
        resolvePool: options.resolvePool,
        referencedCount: referencedJson.length,
      });
      checkIoIndexes(graph, operands);
      if (g === 0 && graph.outputIndexes.length === 0) {
        fail("the model has no outputs", ["outputIndexes"]);
      }
      if (graph.operations.length === 0) {
        fail(`the ${g === 0 ? "model" : "subgraph"} has no operations`, ["operations"]);
      }
      checkReferenceReaders(graph.operations, operands);
      return operands;
    })
  );
  const order = referenceOrder(operandLists[0], operandLists.slice(1));
  const signatures: SubgraphSignature[] = referencedJson.map((graph, k) => ({
    inputs: graph.inputIndexes.map((i) => declared(operandLists[k + 1], i)),
    outputs: graph.outputIndexes.map((i) => declared(operandLists[k + 1], i)),
  }));
  // Relaxed float32 is HAL 1.1; referenced subgraphs are HAL 1.3.
  let halVersion: HalVersion = referencedJson.length > 0
    ? "V1_3"
    : json.relaxComputationFloat32toFloat16
    ? "V1_1"
    : "V1_0";
  const built: Subgraph[] = graphs.map((graph, g) =>
    inGraph(inReferenced(g), () => {
      const operands = operandLists[g];
      for (const o of operands) halVersion = laterHal(halVersion, operandVersion(o.type));
      const { operations, halVersion: needs } = buildOperations(graph, operands, signatures);
      halVersion = laterHal(halVersion, needs);
      return {
        operands,
        operations,
        inputIndexes: [...graph.inputIndexes],
        outputIndexes: [...graph.outputIndexes],
        runOrder: runOrderOf(operations, operands),
      };
    })
  );
  const [main, ...referenced] = built;
  inheritThroughReferences(main, referenced, order);
  referenced.forEach((graph, k) => inGraph(k, () => inferStaticShapes(graph)));
  return {
    ...main,
    relaxComputationFloat32toFloat16: json.relaxComputationFloat32toFloat16,
    staticShapes: inferStaticShapes(main),
    halVersion,
    referenced,
  };
}
