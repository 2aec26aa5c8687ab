/**
 * MatMul of two runtime tensors [..., m, k] x [..., k, n] (attention's Q.K^T and P.V): one
 * BATCH_MATMUL (NNAPI feature level 6) for ranks 2 to 4 with equal leading extents, any of
 * them known only at execution (attention over a text line of any width). Higher ranks with
 * leading extents known at conversion are folded to rank 3 around it.
 */
import type { BuiltOperand } from "../../graph_builder.ts";
import type { ConversionContext } from "../context.ts";
import { sameTypeAs } from "./common.ts";

/** The highest rank BATCH_MATMUL takes. */
const MAX_BATCH_RANK = 4;

/** Converts `name = MatMul(a, b)` for runtime `a` and `b` of equal leading extents. */
export function runtimeMatMul(ctx: ConversionContext, name: string, a: string, b: string): void {
  const [aDims, bDims] = [ctx.dims(a), ctx.dims(b)];
  const rank = aDims.length;
  if (rank < 2 || rank !== bDims.length) {
    throw new Error(
      `MatMul of runtime tensors of ranks ${rank} and ${bDims.length} is not supported`,
    );
  }
  const lead = aDims.slice(0, -2);
  if (lead.some((d, i) => d !== bDims[i])) {
    throw new Error(
      `MatMul of runtime tensors [${aDims}] x [${bDims}] needs equal leading extents`,
    );
  }
  const [ka, kb] = [aDims[rank - 1], bDims[rank - 2]];
  if (ka !== 0 && kb !== 0 && ka !== kb) {
    throw new Error(`inner extents of [${aDims}] x [${bDims}] do not match`);
  }
  const spec = sameTypeAs(ctx, a);
  if (rank <= MAX_BATCH_RANK) {
    ctx.emitAs(name, "BATCH_MATMUL", [ctx.operand(a), ctx.operand(b)], spec);
    return;
  }
  // Rank 5 and up: the leading extents as one, then back.
  const batches = lead.reduce((p, d) => p * d, 1);
  const [m, n] = [aDims[rank - 2], bDims[rank - 1]];
  const unknown = (dims: readonly number[]) => dims.slice(-2).filter((d) => d === 0).length;
  if (batches === 0 || unknown(aDims) > 1 || unknown(bDims) > 1 || (m === 0 && n === 0)) {
    throw new Error(
      `MatMul of [${aDims}] x [${bDims}]: above rank ${MAX_BATCH_RANK}, the leading extents, ` +
        `m or n, and all but one of each input's last two extents must be known at conversion`,
    );
  }
  const reshape = (operand: BuiltOperand, dims: number[]) => {
    const shape = ctx.builder.constant("TENSOR_INT32", [dims.length], new Int32Array(dims));
    return ctx.emit("RESHAPE", [operand, shape], [spec])[0];
  };
  const folded = (name: string, dims: readonly number[]) =>
    reshape(ctx.operand(name), [batches, ...dims.slice(-2).map((d) => d || -1)]);
  const product = ctx.emit("BATCH_MATMUL", [folded(a, aDims), folded(b, bDims)], [spec])[0];
  ctx.setOperand(name, reshape(product, [...lead, m || -1, n || -1]), spec.elementType);
}
