/**
 * Transpose onto NNAPI's TRANSPOSE, which takes rank <= 4. A higher-rank permutation is
 * normalized as XNNPACK normalizes its transposes (`xnn_normalize_transpose_permutation`):
 * unit axes are dropped and input axes that stay adjacent and in order in the output are
 * merged; when that leaves at most 4 axes it runs as RESHAPE -> TRANSPOSE -> RESHAPE.
 */
import { transpose } from "../../../kernels/shape_transform.ts";
import type { BuiltOperand } from "../../graph_builder.ts";
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
    const n = normalizeTranspose(dims, perm);
    const output = { spec, dims: perm.map((axis) => dims[axis]) };
    let result: BuiltOperand;
    if (n.perm.every((p, i) => p === i)) {
      // Only unit axes move: a reshape.
      result = reshapeOperand(ctx, ctx.operand(x), { ...output, sources: perm });
    } else if (n.perm.length > MAX_RANK) {
      throw new Error(
        `the permutation [${perm}] of [${dims}] still has ${n.perm.length} axes after unit ` +
          `axes are dropped and axes that stay adjacent are merged; NNAPI's TRANSPOSE takes ` +
          `at most ${MAX_RANK}`,
      );
    } else {
      try {
        const merged = reshapeOperand(ctx, ctx.operand(x), {
          spec,
          dims: n.dims,
          sources: n.inputSources,
        });
        const [moved] = ctx.emit("TRANSPOSE", [merged, int32Vector(ctx, n.perm)], [spec]);
        result = reshapeOperand(ctx, moved, { ...output, sources: n.outputSources });
      } catch (error) {
        throw new Error(
          `a rank-${dims.length} transpose runs as RESHAPE to [${n.dims}] -> TRANSPOSE ` +
            `[${n.perm}] -> RESHAPE: ${error instanceof Error ? error.message : error}`,
        );
      }
    }
    ctx.setOperand(node.outputs[0], result, spec.elementType);
  },
};

export const TRANSPOSE_RULES: Record<string, Rule> = { Transpose: transposeRule };
