/**
 * Loop onto NNAPI's WHILE (HAL 1.3). A Loop runs
 * `for (i = 0; i < M && cond; i++) (cond, v, scans) = body(i, cond, v)`, M and the first cond
 * optional (onnxruntime, the oracle, honours the body's cond even when the Loop has no cond
 * input, which the ONNX text calls ignored).
 *
 * As a WHILE, the loop-carried operands are (i, cond, v..., one accumulator per scan
 * output); M and the outer values the body reads are input-only. The condition subgraph
 * computes `i < M && cond`; the body subgraph is the ONNX body plus `i + 1` and each scan
 * value appended to its accumulator. An accumulator starts as one row of zeros (NNAPI has
 * no empty tensors), sliced off after the loop.
 *
 * A Loop that carries a sequence (torch's exports build one per iteration), or whose every
 * input is known at conversion, unrolls there instead; one whose trip count is known only at
 * execution grows its sequence as a scan output (`loop_sequences.ts`).
 */
import type { ConversionContext } from "../context.ts";
import { NodeView } from "../node_view.ts";
import { type GraphProto, list, onnx } from "../decode.ts";
import { hostTensor, tensorFromProto } from "../tensors.ts";
import { convertGrown, grownSequence } from "./loop_sequences.ts";
import type { Rule } from "../rule.ts";
import {
  bindOutputs,
  conditionOperand,
  type ConvertedSubgraph,
  convertSubgraph,
  type FormalInput,
  outerInput,
  outerReads,
  runtimeValues,
} from "../subgraph.ts";
import type { BuiltOperand } from "../../graph_builder.ts";
import { allocate } from "../../../nnapi/tensor.ts";

const INT = onnx.AttributeProto.AttributeType.INT;

/** The largest trip count an int32 iteration counter reaches (int64 counts are clamped). */
const MAX_TRIP_COUNT = 0x7fffffff;

/** M as a TENSOR_INT32 [1] operand, or undefined when the Loop has none. */
function tripCount(ctx: ConversionContext, name: string | undefined): BuiltOperand | undefined {
  if (!name) return undefined;
  const constant = ctx.constant(name);
  if (constant) {
    if (constant.data.length !== 1) throw new Error("the trip count M is not a single value");
    const m = Math.min(Number(constant.data[0]), MAX_TRIP_COUNT);
    return ctx.builder.constant("TENSOR_INT32", [1], new Int32Array([m]));
  }
  const operand = ctx.operand(name);
  if (operand.type !== "TENSOR_INT32") throw new Error("the trip count M is not an integer");
  return operand;
}

/** The loop-carried values' extents widened (0) where the body changes them. */
function widen(inputs: readonly FormalInput[], body: ConvertedSubgraph): FormalInput[] {
  return inputs.map((input, j) => {
    const produced = body.outputs[j].operand.dimensions;
    if (produced.length !== input.dimensions.length) {
      throw new Error(`the loop-carried value '${input.name}' changes rank in the body`);
    }
    return { ...input, dimensions: input.dimensions.map((d, k) => d === produced[k] ? d : 0) };
  });
}

/** The ONNX Loop's names, split by role. */
interface LoopNames {
  iteration: string;
  condition: string;
  /** Body inputs of the loop-carried values. */
  carried: string[];
  /** Body outputs: the next condition, the next carried values, the scan values. */
  nextCondition: string;
  nextCarried: string[];
  scans: string[];
}

function loopNames(node: NodeView, body: GraphProto): LoopNames {
  const inputs = list(body.input).map((v) => v.name ?? "");
  const outputs = list(body.output).map((v) => v.name ?? "");
  const carriedCount = node.inputs.length - 2;
  if (inputs.length !== carriedCount + 2) {
    throw new Error(`the body has ${inputs.length} inputs, expected ${carriedCount + 2}`);
  }
  if (outputs.length < carriedCount + 1) {
    throw new Error(`the body has ${outputs.length} outputs, expected ${carriedCount + 1} or more`);
  }
  return {
    iteration: inputs[0],
    condition: inputs[1],
    carried: inputs.slice(2),
    nextCondition: outputs[0],
    nextCarried: outputs.slice(1, carriedCount + 1),
    scans: outputs.slice(carriedCount + 1),
  };
}

/** The most iterations a Loop unrolls into at conversion. */
const MAX_UNROLLED = 64;

/** A condition known at conversion (a Loop that unrolls needs each). */
function knownTruth(ctx: ConversionContext, name: string, what: string): boolean {
  const tensor = ctx.constant(name);
  if (!tensor) throw new Error(`${what} ('${name}') is known only at execution`);
  if (tensor.data.length !== 1) throw new Error(`${what} ('${name}') is not a single value`);
  return !!tensor.data[0];
}

/**
 * The iterations of a Loop to unroll at conversion, or undefined to run it as a WHILE: one
 * that carries or reads a sequence (which lives only at conversion) must unroll; one whose
 * every input is a constant unrolls (and folds) when it is short.
 */
function unrolledTrips(
  node: NodeView,
  ctx: ConversionContext,
  body: GraphProto,
): number | "grown" | undefined {
  const [mName, condName, ...initial] = node.inputs;
  const reads = outerReads(body);
  const sequence = [...initial, ...reads].find((name) => ctx.isSequence(name));
  const known = (name: string) => ctx.isSequence(name) || ctx.constant(name) !== undefined;
  const m = mName ? ctx.constant(mName) : undefined;
  const trips = m ? Number(m.data[0]) : mName ? undefined : Infinity;
  const short = trips !== undefined && trips <= MAX_UNROLLED;
  if (sequence === undefined) {
    return short && trips !== Infinity &&
        [condName, ...initial, ...reads].every((n) => !n || known(n))
      ? trips
      : undefined;
  }
  if (trips === undefined || (trips !== Infinity && !short)) {
    if (grownSequence(node, ctx, body)) return "grown";
    throw new Error(
      `the Loop carries or reads the sequence '${sequence}', which lives only at conversion, ` +
        `so the loop must unroll there: its trip count must be known then and at most ` +
        `${MAX_UNROLLED} (or the sequence must start empty, grow by one tensor each ` +
        `iteration and be read after the loop only by ConcatFromSequence)`,
    );
  }
  return trips;
}

/**
 * The Loop unrolled at conversion: the body's nodes converted once per iteration in this
 * graph (most fold: an index computation over known shapes), the carried values and scan
 * values kept apart from one iteration to the next. The condition must be known each time.
 */
function unroll(node: NodeView, ctx: ConversionContext, body: GraphProto, trips: number): void {
  const names = loopNames(node, body);
  const [, condName, ...initial] = node.inputs;
  for (const proto of list(body.initializer)) {
    ctx.setConstant(proto.name ?? "", tensorFromProto(proto));
  }
  const nodes = list(body.node).map((proto) => new NodeView(proto, node.index));
  let carried = initial.map((name) => ctx.snapshot(name));
  const scans: string[][] = names.scans.map(() => []);
  let going = condName ? knownTruth(ctx, condName, "the Loop's condition") : true;
  let i = 0;
  for (; going && i < trips; i++) {
    if (i === MAX_UNROLLED) {
      throw new Error(`the Loop did not stop within ${MAX_UNROLLED} iterations at conversion`);
    }
    ctx.setConstant(names.iteration, hostTensor("int64", [], [i]));
    ctx.setConstant(names.condition, hostTensor("bool", [], [1]));
    names.carried.forEach((input, j) => ctx.bind(input, carried[j]));
    ctx.convertNodes(nodes);
    if (ctx.restTaken) {
      throw new Error("an If in a Loop that unrolls gives values of different ranks");
    }
    going = knownTruth(ctx, names.nextCondition, "the body's condition");
    carried = names.nextCarried.map((name) => ctx.snapshot(name));
    names.scans.forEach((scan, k) => scans[k].push(ctx.snapshot(scan)));
  }
  node.outputs.slice(0, initial.length).forEach((out, j) => {
    if (out) ctx.bind(out, carried[j]);
  });
  // Each scan output stacks its values along a new first axis.
  node.outputs.slice(initial.length).forEach((out, k) => {
    if (!out) return;
    if (scans[k].length === 0) throw new Error(`scan output ${k} is empty: no iteration ran`);
    const sequence = `${out}#values`;
    ctx.setSequence(sequence, scans[k]);
    ctx.convertNodes([
      new NodeView({
        name: `${node.name}#scan${k}`,
        opType: "ConcatFromSequence",
        input: [sequence],
        output: [out],
        attribute: [{ name: "axis", type: INT, i: 0 }, { name: "new_axis", type: INT, i: 1 }],
      }, node.index),
    ]);
  });
}

export const loop: Rule = {
  convert(node, ctx) {
    const body = node.graph("body");
    const trips = unrolledTrips(node, ctx, body);
    if (trips === "grown") {
      const growth = grownSequence(node, ctx, body)!;
      return convertGrown(node, ctx, body, growth, (rewritten) => loop.convert(rewritten, ctx));
    }
    if (trips !== undefined) return unroll(node, ctx, body, trips);
    const names = loopNames(node, body);
    const [mName, condName, ...initial] = node.inputs;
    const m = tripCount(ctx, mName);
    const outer = runtimeValues(ctx, outerReads(body));
    const inputOnly: FormalInput[] = [
      ...(m ? [{ ...COUNTER, name: `${node.name}#M` }] : []),
      ...outer.map((name) => outerInput(ctx, name)),
    ];
    const accumulators = names.scans.map((_, k) => `${node.name}#scan${k}`);
    const next = {
      iteration: `${names.iteration}#next`,
      condition: `${names.condition}#next`,
      scans: accumulators.map((name) => `${name}#next`),
    };
    const convertBody = (carried: FormalInput[]) =>
      convertSubgraph(ctx, body, [...carried, ...inputOnly], [
        next.iteration,
        next.condition,
        ...names.nextCarried,
        ...next.scans,
      ], (inner) => {
        const one = inner.builder.constant("TENSOR_INT32", [1], new Int32Array([1]));
        const i = inner.operand(names.iteration);
        inner.emitAs(next.iteration, "ADD", [i, one, inner.builder.int32(0)], COUNTER_SPEC);
        // ONNX's condition may be a scalar; NNAPI carries it as [1].
        inner.setOperand(next.condition, conditionOperand(inner, names.nextCondition), "bool");
        names.scans.forEach((scan, k) => {
          const spec = { type: inner.operand(scan).type, elementType: inner.elementType(scan) };
          const axis = inner.builder.int32(0);
          const [row] = inner.emit("EXPAND_DIMS", [inner.operand(scan), axis], [spec]);
          const accumulator = inner.operand(accumulators[k]);
          inner.emitAs(next.scans[k], "CONCATENATION", [accumulator, row, axis], spec);
        });
      });

    // Loop-carried: the iteration number, the condition, the ONNX values, the accumulators.
    const carriedValues: FormalInput[] = [
      { ...COUNTER, name: names.iteration },
      { ...CONDITION, name: names.condition },
      ...initial.map((name, j) => ({ ...outerInput(ctx, name), name: names.carried[j] })),
    ];
    let carried = [
      ...carriedValues,
      ...scanRows(ctx, body, names.scans, [...carriedValues, ...inputOnly]).map((row, k) => ({
        ...row,
        name: accumulators[k],
      })),
    ];
    // The body may change a value's extents: widen them until the body agrees with itself.
    let converted: ConvertedSubgraph;
    for (let round = 0;; round++) {
      const mark = ctx.builder.referencedCount;
      converted = convertBody(carried);
      const widened = widen(carried, converted);
      if (widened.every((w, j) => w.dimensions.join() === carried[j].dimensions.join())) break;
      if (round > 8) throw new Error("the loop-carried shapes do not settle");
      ctx.builder.dropReferenced(mark);
      carried = widened;
    }
    const condition = conditionSubgraph(
      ctx,
      [...carried, ...inputOnly],
      m ? carried.length : undefined,
    );
    const scanOutputs = node.outputs.slice(initial.length);
    const outputs = bindOutputs(
      ctx,
      ["", "", ...node.outputs.slice(0, initial.length)],
      converted.outputs,
      (j) => carried[j].dimensions,
    );
    const firstRows = carried.slice(carriedValues.length).map((accumulator, k) => {
      const row = [1, ...accumulator.dimensions.slice(1)];
      if (row.includes(0)) {
        throw new Error(`scan output ${k} has extents known only at execution`);
      }
      const data = allocate(accumulator.type, row.reduce((a, b) => a * b, 1));
      return ctx.builder.constant(accumulator.type, row, data, accumulator.quant);
    });
    ctx.builder.operation("WHILE", [
      ctx.builder.subgraph(condition),
      ctx.builder.subgraph(converted.index),
      ctx.builder.constant("TENSOR_INT32", [1], new Int32Array([0])),
      condName
        ? conditionOperand(ctx, condName)
        : ctx.builder.constant("TENSOR_BOOL8", [1], new Uint8Array([1])),
      ...initial.map((name) => ctx.operand(name)),
      ...firstRows,
      ...(m ? [m] : []),
      ...outer.map((name) => ctx.operand(name)),
    ], outputs);
    // Each scan output is its accumulator without the first row.
    scanOutputs.forEach((name, k) => {
      if (!name) return;
      const accumulator = outputs[carriedValues.length + k];
      const rank = accumulator.dimensions.length;
      const begin = new Int32Array(rank);
      begin[0] = 1;
      const size = new Int32Array(rank).fill(-1);
      ctx.emitAs(name, "SLICE", [
        accumulator,
        ctx.builder.constant("TENSOR_INT32", [rank], begin),
        ctx.builder.constant("TENSOR_INT32", [rank], size),
      ], {
        type: accumulator.type,
        elementType: converted.outputs[carriedValues.length + k].elementType,
        quant: accumulator,
      });
    });
  },
};

/** The iteration number: ONNX int64, an NNAPI TENSOR_INT32 [1]. */
const COUNTER = { type: "TENSOR_INT32", dimensions: [1], elementType: "int64" } as const;
const COUNTER_SPEC = { type: "TENSOR_INT32", elementType: "int64" } as const;
/** The loop condition: ONNX bool, an NNAPI TENSOR_BOOL8 [1]. */
const CONDITION = { type: "TENSOR_BOOL8", dimensions: [1], elementType: "bool" } as const;

/**
 * The accumulators of the scan outputs as loop-carried inputs: `[0, ...s]` where `s` is the
 * scan value's shape in a first conversion of the body (then dropped).
 */
function scanRows(
  ctx: ConversionContext,
  body: GraphProto,
  scans: readonly string[],
  inputs: readonly FormalInput[],
): Omit<FormalInput, "name">[] {
  if (scans.length === 0) return [];
  const mark = ctx.builder.referencedCount;
  const probe = convertSubgraph(ctx, body, inputs, scans);
  ctx.builder.dropReferenced(mark);
  return probe.outputs.map(({ operand, elementType }) => ({
    type: operand.type,
    dimensions: [0, ...operand.dimensions],
    quant: { scale: operand.scale, zeroPoint: operand.zeroPoint },
    elementType,
  }));
}

/**
 * The WHILE condition subgraph over the body's inputs: `i < M && cond`, or `cond` when the
 * Loop has no M (input `tripCountAt` holds M).
 */
function conditionSubgraph(
  ctx: ConversionContext,
  inputs: readonly FormalInput[],
  tripCountAt: number | undefined,
): number {
  const inner = ctx.subgraphContext([], []);
  const operands = inputs.map((input) =>
    inner.builder.input(input.type, input.dimensions, input.quant)
  );
  const [i, cond] = operands;
  const bool = { type: "TENSOR_BOOL8", elementType: "bool" } as const;
  let result = cond;
  if (tripCountAt !== undefined) {
    const [below] = inner.emit("LESS", [i, operands[tripCountAt]], [bool]);
    [result] = inner.emit("LOGICAL_AND", [below, cond], [bool]);
  }
  inner.builder.output(result);
  return inner.builder.reference();
}
