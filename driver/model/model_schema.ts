/**
 * The wire format of a model (the `model` object of the NNAPI CTS vectors plus docs/api.md's
 * base64 values and memory-pool locations), as a zod schema: the one structural check at
 * the boundary. Semantic rules (NNAPI validateModel) live in `model.ts`.
 */
import { z } from "zod";
import { NON_FINITE_NAMES } from "../../nnapi/tensor.ts";
import { LIFETIMES, OPERAND_TYPES, OPERATION_TYPES } from "../../nnapi/types.ts";

const index = z.number().int().nonnegative();

/**
 * One tensor element in JSON: a number, or the name of a non-finite value (JSON has none). A
 * literal beyond a double's range (`1e999`) reads as infinite and is refused here by name.
 */
export const JsonNumberSchema = z.union([z.number(), z.enum(NON_FINITE_NAMES)], {
  error: (issue) =>
    issue.input === Infinity || issue.input === -Infinity
      ? `a number beyond a double's range (it reads as ${issue.input}); write "Infinity", "-Infinity" or "NaN" for a non-finite value`
      : `expected a number, or "NaN", "Infinity" or "-Infinity"`,
});

const NON_FINITE: ReadonlySet<unknown> = new Set(NON_FINITE_NAMES);

/**
 * An array of {@link JsonNumberSchema} elements, checked in one loop: a schema per element
 * costs about 25 ns each (3.7 ms for one 224x224x3 image as JSON), the loop a tenth of it.
 * The first element that is not one is reported at its index, with the element's message.
 */
export const JsonNumbersSchema = z.custom<z.infer<typeof JsonNumberSchema>[]>(
  (value) => Array.isArray(value),
  { error: (issue) => `expected an array of numbers, received ${kindOf(issue.input)}` },
).check((context) => {
  const values = context.value;
  for (let at = 0; at < values.length; at++) {
    const v = values[at];
    if (typeof v === "number" ? Number.isFinite(v) : NON_FINITE.has(v)) continue;
    const element = JsonNumberSchema.safeParse(v);
    if (element.success) continue;
    const [{ message }] = element.error.issues;
    context.issues.push({ code: "custom", message, input: v, path: [at] });
    return;
  }
}).meta({
  type: "array",
  items: {
    anyOf: [{ type: "number" }, { type: "string", enum: [...NON_FINITE_NAMES] }],
  },
});

function kindOf(value: unknown): string {
  return value === null ? "null" : typeof value;
}

/** A constant's value: JSON numbers, or little-endian bytes in base64. */
export const ValueSchema = z.union([
  JsonNumbersSchema,
  z.object({ base64: z.string() }).strict(),
]);

/** Where a CONSTANT_REFERENCE operand's bytes live in the model's memory pools. */
export const LocationSchema = z.object({
  poolIndex: index,
  offset: index,
  length: index,
}).strict();

export const OperandSchema = z.object({
  type: z.enum(OPERAND_TYPES),
  dimensions: z.array(index),
  scale: z.number().nonnegative().default(0),
  zeroPoint: z.number().int().default(0),
  lifetime: z.enum(LIFETIMES),
  value: ValueSchema.optional(),
  location: LocationSchema.optional(),
  channelQuant: z.object({
    channelDim: index,
    scales: z.array(z.number().positive()),
  }).strict().optional(),
  subgraph: index.optional().describe(
    "On a SUBGRAPH operand (type and lifetime SUBGRAPH): the index in `referenced` of the " +
      "subgraph it stands for (an IF branch, a WHILE condition or body)",
  ),
}).strict();

export const OperationSchema = z.object({
  type: z.enum(OPERATION_TYPES),
  inputs: z.array(index),
  outputs: z.array(index),
}).strict();

/**
 * A referenced subgraph (NNAPI `Model.referenced`): the same fields as the main graph. Its
 * inputs and outputs have the lifetimes MODEL_INPUT and MODEL_OUTPUT, as the main graph's do.
 */
export const SubgraphSchema = z.object({
  operands: z.array(OperandSchema),
  operations: z.array(OperationSchema),
  inputIndexes: z.array(index),
  outputIndexes: z.array(index),
}).strict();

export const ModelSchema = z.object({
  operands: z.array(OperandSchema),
  operations: z.array(OperationSchema),
  inputIndexes: z.array(index),
  outputIndexes: z.array(index),
  relaxComputationFloat32toFloat16: z.boolean().default(false),
  referenced: z.array(SubgraphSchema).optional().describe(
    "Subgraphs that IF and WHILE operations reference through SUBGRAPH operands " +
      '(`{"type": "SUBGRAPH", "dimensions": [], "lifetime": "SUBGRAPH", "subgraph": k}`); ' +
      "the top-level fields are the main graph. Constants of every graph share `pools`.",
  ),
  pools: z.array(z.string()).optional(),
}).strict();

/** A structurally valid model as received. */
export type ModelJson = z.infer<typeof ModelSchema>;
/** One graph of a model: the main graph (the model's own fields) or a referenced subgraph. */
export type GraphJson = z.infer<typeof SubgraphSchema>;
export type OperandJson = z.infer<typeof OperandSchema>;
export type OperationJson = z.infer<typeof OperationSchema>;
