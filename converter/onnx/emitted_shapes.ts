/**
 * The shapes of the operations the converter emits, by the driver's own shape rules (each
 * operation's `prepare`), where some extents are known only at execution: unknown extents
 * (0) are replaced by two different placeholders, and what agrees across both runs is known.
 */
import type { BuiltOperand } from "../graph_builder.ts";
import { type PrepareInput, ValueNotYetKnown } from "../../operations/operation.ts";
import { operationDefinition } from "../../operations/table.ts";
import type { TensorData } from "../../nnapi/tensor.ts";
import type { OperationType } from "../../nnapi/types.ts";
import type { OutputSpec } from "./context.ts";

/**
 * Broadcast of two shapes where 0 marks an extent known only at execution: a known extent
 * above 1 wins; beside a 1 or another unknown one, the result is unknown.
 */
export function broadcastDims(a: readonly number[], b: readonly number[]): number[] {
  const rank = Math.max(a.length, b.length);
  return Array.from({ length: rank }, (_, i) => {
    const x = a[i - rank + a.length] ?? 1;
    const y = b[i - rank + b.length] ?? 1;
    if (x === 0 || y === 0) return x > 1 ? x : y > 1 ? y : 0;
    if (x !== y && x !== 1 && y !== 1) throw new Error(`[${a}] and [${b}] do not broadcast`);
    return Math.max(x, y);
  });
}

/** Operations whose output has the broadcast shape of their tensor inputs. */
const BROADCASTING = new Set<OperationType>([
  "ADD",
  "SUB",
  "MUL",
  "DIV",
  "POW",
  "MAXIMUM",
  "MINIMUM",
  "PRELU",
  "EQUAL",
  "NOT_EQUAL",
  "GREATER",
  "GREATER_EQUAL",
  "LESS",
  "LESS_EQUAL",
  "LOGICAL_AND",
  "LOGICAL_OR",
]);

/** Runs `prepare`, where a value known only at execution is no fault. */
function preparedOrPending(prepare: () => unknown): void {
  try {
    prepare();
  } catch (error) {
    if (!(error instanceof ValueNotYetKnown)) throw error;
  }
}

/** Whether an operand is a tensor whose rank is known only at execution. */
function hasUnknownRank(o: BuiltOperand): boolean {
  return o.type.startsWith("TENSOR_") && o.dimensions.length === 0 && o.value === undefined &&
    o.lifetime !== "NO_VALUE";
}

/**
 * Stand-ins for extents known only at execution: two runs tell known from unknown. They lie
 * far apart, so a strided window (stride up to their difference) still tells them apart,
 * and have many small factors, so a reshape may split them (into pairs, heads, ...).
 */
const PLACEHOLDERS = [7920, 11880] as const;

/**
 * Output shapes by the driver's shape inference. Unknown input extents (0) are replaced by
 * two different placeholders; output extents that agree across both runs are known, the
 * others are unknown (0). An output whose shape cannot be inferred at all gets unknown rank.
 */
export function inferShapes(
  type: OperationType,
  inputs: readonly BuiltOperand[],
  outputs: readonly OutputSpec[],
): number[][] {
  const definition = operationDefinition(type);
  if (!definition) throw new Error(`the NNAPI operation ${type} is not implemented`);
  if (inputs.some(hasUnknownRank)) return outputs.map(() => []);
  const runs = PLACEHOLDERS.map((placeholder) => {
    const prepareInputs: PrepareInput[] = inputs.map((o) => ({
      type: o.type,
      shape: o.dimensions.map((d) => d === 0 ? placeholder : d),
      scale: o.scale,
      zeroPoint: o.zeroPoint,
      channelQuant: o.channelQuant,
      value: o.lifetime === "NO_VALUE" ? null : o.value as TensorData | undefined,
    }));
    try {
      return definition.prepare(
        prepareInputs,
        outputs.map((o) => ({
          type: o.type,
          shape: [],
          scale: o.quant?.scale ?? 0,
          zeroPoint: o.quant?.zeroPoint ?? 0,
        })),
      );
    } catch {
      return undefined;
    }
  });
  const [a, b] = runs;
  if ((!a || !b) && BROADCASTING.has(type)) {
    // Extents known only at execution beside known ones: the broadcast of what is known
    // (the placeholders stand for extents that may also be 1 or equal at execution).
    const tensors = inputs.filter((o) => o.type.startsWith("TENSOR_"));
    return [[...tensors.map((o) => o.dimensions).reduce((x, y) => broadcastDims(x, y))]];
  }
  if (!a || !b) {
    if (inputs.every((o) => !o.dimensions.includes(0))) {
      // Fully known inputs that the operation refuses: let validation name the fault (an
      // output that depends on values known only at execution is no fault).
      preparedOrPending(() =>
        definition.prepare(
          inputs.map((o) => ({
            ...o,
            shape: [...o.dimensions],
            value: o.lifetime === "NO_VALUE" ? null : o.value,
          })),
          outputs.map((o) => ({
            type: o.type,
            shape: [],
            scale: o.quant?.scale ?? 0,
            zeroPoint: o.quant?.zeroPoint ?? 0,
          })),
        )
      );
    }
    return outputs.map(() => []);
  }
  return a.map((shape, i) =>
    shape.length === b[i].length ? shape.map((d, k) => d === b[i][k] ? d : 0) : []
  );
}
