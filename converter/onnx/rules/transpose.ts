/**
 * Transpose onto NNAPI's TRANSPOSE, which takes rank <= 4. A higher-rank permutation is
 * normalized as XNNPACK normalizes its transposes (`xnn_normalize_transpose_permutation`):
 * unit axes are dropped and input axes that stay adjacent and in order in the output are
 * merged; when that leaves at most 4 axes it runs as RESHAPE -> TRANSPOSE -> RESHAPE, else
 * as a sequence of such steps, each moving one axis to its place (which merges to at most 4
 * axes). Merged extents known only at execution are computed there (`runtime_extents.ts`).
 */
import { transpose } from "../../../kernels/shape_transform.ts";
import type { BuiltOperand } from "../../graph_builder.ts";
import type { ConversionContext, OutputSpec } from "../context.ts";
import type { RuntimeExtent } from "../runtime_extents.ts";
import type { NodeView } from "../node_view.ts";
import type { Rule } from "../rule.ts";
import { allocateHost } from "../tensors.ts";
import { int32Vector, knownProduct, sameTypeAs } from "./common.ts";
import { reshapeOperand } from "./reshape.ts";

/** The most axes NNAPI's TRANSPOSE takes. */
const MAX_RANK = 4;

/** A permutation normalized: the same data movement on fewer, merged axes. */
interface NormalizedTranspose {
  /** The merged input extents (0 = known only at execution). */
  dims: number[];
  perm: number[];
  /** For each merged input axis that is one original axis: that axis. */
  inputSources: (number | undefined)[];
  /** For each merged input axis: the original axes it merges. */
  inputRuns: number[][];
  /** For each original output axis that is one merged axis: its axis in the transposed result. */
  outputSources: (number | undefined)[];
}

/**
 * Drops unit axes of `dims` and merges the runs of input axes that `perm` keeps adjacent and
 * in order; a merged extent is known when all of its parts are.
 */
function normalizeTranspose(
  dims: readonly number[],
  perm: readonly number[],
): NormalizedTranspose {
  const kept = dims.flatMap((d, axis) => d === 1 ? [] : [axis]);
  const position = new Map(kept.map((axis, i) => [axis, i]));
  /** Runs of kept-axis positions, in output order. */
  const runs: number[][] = [];
  for (const axis of perm) {
    const p = position.get(axis);
    if (p === undefined) continue;
    const run = runs.at(-1);
    if (run && p === run[run.length - 1] + 1) run.push(p);
    else runs.push([p]);
  }
  const byInput = [...runs].sort((r, s) => r[0] - s[0]);
  const runOf = (axis: number) => runs.findIndex((run) => run.includes(position.get(axis)!));
  return {
    dims: byInput.map((run) => knownProduct(run.map((p) => dims[kept[p]])) ?? 0),
    perm: runs.map((run) => byInput.indexOf(run)),
    inputSources: byInput.map((run) => run.length === 1 ? kept[run[0]] : undefined),
    inputRuns: byInput.map((run) => run.map((p) => kept[p])),
    outputSources: perm.map((axis) => {
      if (dims[axis] === 1) return undefined;
      const k = runOf(axis);
      return runs[k].length === 1 ? k : undefined;
    }),
  };
}

function permutation(node: NodeView, rank: number): number[] {
  return node.ints("perm", Array.from({ length: rank }, (_, i) => rank - 1 - i));
}

/**
 * `t` (whose axes are `x`'s axes `order`, extents `xDims`) transposed by `perm` when that
 * normalizes to at most 4 axes: RESHAPE -> TRANSPOSE -> RESHAPE, unknown merged extents
 * computed at execution from `x`'s.
 */
function transposeMerged(
  ctx: ConversionContext,
  t: BuiltOperand,
  options: { x: number; xDims: readonly number[]; order: readonly number[]; perm: number[] },
  spec: OutputSpec,
): BuiltOperand {
  const { x, xDims, order, perm } = options;
  const dims = order.map((axis) => xDims[axis]);
  const n = normalizeTranspose(dims, perm);
  const extentOf = (axes: readonly number[]): RuntimeExtent => ({
    factors: axes.filter((a) => xDims[order[a]] === 0).map((a) => ({ operand: x, axis: order[a] })),
    scale: axes.reduce(
      (product, a) => xDims[order[a]] === 0 ? product : product * xDims[order[a]],
      1,
    ),
  });
  const output = { spec, dims: perm.map((axis) => dims[axis]) };
  if (n.perm.every((p, i) => p === i)) {
    // Only unit axes move: a reshape.
    return reshapeOperand(ctx, t, {
      ...output,
      sources: perm,
      extents: perm.map((axis) => extentOf([axis])),
    });
  }
  if (n.perm.length > MAX_RANK) throw new Error("not a merged transpose"); // callers avoid it
  const merged = reshapeOperand(ctx, t, {
    spec,
    dims: n.dims,
    sources: n.inputSources,
    extents: n.inputRuns.map(extentOf),
  });
  const [moved] = ctx.emit("TRANSPOSE", [merged, int32Vector(ctx, n.perm)], [spec]);
  return reshapeOperand(ctx, moved, {
    ...output,
    sources: n.outputSources,
    extents: perm.map((axis) => extentOf([axis])),
  });
}

const transposeRule: Rule = {
  fold(node, [x]) {
    const perm = permutation(node, x!.dims.length);
    const out = allocateHost(x!.type, perm.map((p) => x!.dims[p]));
    transpose(x!.data, x!.dims, perm, out.data);
    return [out];
  },
  convert(node, ctx) {
    const x = node.inputs[0];
    const dims = ctx.dims(x);
    const perm = permutation(node, dims.length);
    const spec = sameTypeAs(ctx, x);
    if (dims.length <= MAX_RANK) {
      ctx.emitAs(node.outputs[0], "TRANSPOSE", [ctx.operand(x), int32Vector(ctx, perm)], spec);
      return;
    }
    const x0 = ctx.operand(x);
    const options = { x: x0.index, xDims: dims, order: dims.map((_, i) => i), perm };
    let result: BuiltOperand;
    try {
      if (normalizeTranspose(dims, perm).perm.length <= MAX_RANK) {
        result = transposeMerged(ctx, x0, options, spec);
      } else {
        // One axis at a time to its place: each such move merges to at most 4 axes.
        result = x0;
        let order = options.order;
        for (let j = 0; j < perm.length; j++) {
          const i = order.indexOf(perm[j]);
          if (i === j) continue;
          const move = order.map((_, k) => k < j ? k : k === j ? i : k <= i ? k - 1 : k);
          result = transposeMerged(ctx, result, { ...options, order, perm: move }, spec);
          order = move.map((k) => order[k]);
        }
      }
    } catch (error) {
      throw new Error(
        `a rank-${dims.length} transpose by [${perm}] of [${dims}], as RESHAPE -> TRANSPOSE ` +
          `-> RESHAPE steps: ${error instanceof Error ? error.message : error}`,
      );
    }
    ctx.setOperand(node.outputs[0], result, spec.elementType);
  },
};

export const TRANSPOSE_RULES: Record<string, Rule> = { Transpose: transposeRule };
