/**
 * A model whose inputs and outputs have a first extent fixed at 1 (an export with a batch of
 * one), with that extent opened as the batch: what dynamic batching runs for a compilation
 * that declares such a model batchable. Shapes are inferred with one row and with two; an
 * operand whose shape differs between them only in its first extent, 1 against 2, carries
 * the batch and gets that extent open (0). One that differs otherwise means the rows do not
 * stay apart (a RESHAPE to [1, -1] folds them together), and the model is refused, as is one
 * whose shapes need values known only at execution or whose outputs do not carry the batch.
 * Shapes are what is checked: an operation that mixes rows and keeps their shape (a reduction
 * over the first axis, broadcast back) is what the declaration itself rules out.
 */
import { invalid } from "../../nnapi/errors.ts";
import { operationDefinition } from "../../operations/table.ts";
import type { Model, Operand } from "./model.ts";
import { inferShapes, REPRESENTATIVE_EXTENT } from "./shape_inference.ts";

/** Operands whose value the graph computes: their shapes follow the inputs'. */
const COMPUTED = new Set(["TEMPORARY_VARIABLE", "MODEL_OUTPUT"]);

/** Every operand's shape with `rows` rows in each input; unknown extents as representative. */
function shapesWithRows(model: Model, rows: number): (readonly number[] | undefined)[] {
  const steps = model.runOrder
    .map((k) => ({ operation: k, ...model.operations[k] }))
    .filter((op) => op.supported && operationDefinition(op.type));
  const inputs = new Set(model.inputIndexes);
  const { shapes, resolved } = inferShapes(
    model.operands.map((o) => ({
      ...o,
      // What the graph computes may take any extent: the inference says which.
      declared: COMPUTED.has(o.lifetime) ? o.dimensions.map(() => 0) : o.dimensions,
      value: o.lifetime === "NO_VALUE" ? null : o.value,
    })),
    steps,
    model.operands.map((o, i) =>
      inputs.has(i)
        ? o.dimensions.map((d, j) => j === 0 ? rows : d || REPRESENTATIVE_EXTENT)
        : COMPUTED.has(o.lifetime)
        ? undefined
        : o.dimensions
    ),
  );
  if (!resolved) {
    throw refuse("shapes that follow from its inputs' (some need values known only at execution)");
  }
  return shapes;
}

function refuse(why: string) {
  return invalid(`dynamic batching of a model with a batch of 1 needs ${why}`, {
    path: ["batching"],
  });
}

/** Whether every input's and output's first extent is 1: the batch a model fixed at one row. */
export function batchFixedAtOne(
  model: { inputs: { dimensions: number[] }[]; outputs: { dimensions: number[] }[] },
): boolean {
  return [...model.inputs, ...model.outputs].every((p) => p.dimensions[0] === 1);
}

/**
 * `model` with its batch extent open wherever it runs (see the module comment); throws
 * INVALID_ARGUMENT (path `batching`) naming the operation whose output keeps rows together.
 */
export function openBatchExtent(model: Model): Model {
  if (model.referenced.length > 0) throw refuse("a model without control flow (IF, WHILE)");
  let one: (readonly number[] | undefined)[];
  let two: (readonly number[] | undefined)[];
  try {
    one = shapesWithRows(model, 1);
    two = shapesWithRows(model, 2);
  } catch (error) {
    if (error instanceof Error && !/dynamic batching/.test(error.message)) {
      throw refuse(`a graph that runs with two rows; with two: ${error.message}`);
    }
    throw error;
  }
  const producer = new Map<number, number>();
  for (const k of model.runOrder) {
    for (const out of model.operations[k].outputs) producer.set(out, k);
  }
  const carries = (i: number) => {
    const [a, b] = [one[i], two[i]];
    if (!a || !b) throw refuse("shapes that follow from its inputs' (an operation has no kernel)");
    if (a.length === b.length && a.every((d, j) => d === b[j])) return false;
    if (
      a.length === b.length && a[0] === 1 && b[0] === 2 && a.every((d, j) => j === 0 || d === b[j])
    ) {
      return true;
    }
    const k = producer.get(i);
    const where = k === undefined ? `operand ${i}` : `operation ${k} (${model.operations[k].type})`;
    throw refuse(
      `rows that stay apart: ${where} gives [${a}] with one row and [${b}] with two`,
    );
  };
  const operands: Operand[] = model.operands.map((o, i) =>
    (model.inputIndexes.includes(i) || COMPUTED.has(o.lifetime)) && carries(i)
      ? { ...o, dimensions: [0, ...o.dimensions.slice(1)] }
      : o
  );
  for (const [k, i] of model.outputIndexes.entries()) {
    if (operands[i].dimensions[0] !== 0) {
      throw refuse(`outputs that carry the batch: output ${k} is [${one[i]}] whatever the rows`);
    }
  }
  return { ...model, operands, staticShapes: false };
}
