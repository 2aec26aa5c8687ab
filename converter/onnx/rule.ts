/**
 * The shape of a conversion rule: one ONNX op type turned into NNAPI operations (or folded
 * on the host when its inputs are constants). Rules are registered in `rules/index.ts`.
 */
import type { ConversionContext } from "./context.ts";
import type { NodeView } from "./node_view.ts";
import type { HostTensor } from "./tensors.ts";

export interface Rule {
  /**
   * Computes the node's outputs at conversion when every given input is a constant
   * (constant folding, Shape-driven subgraphs included); undefined where a partial input
   * cannot fold (the node is converted instead). Omitted: never folded.
   */
  fold?(
    node: NodeView,
    inputs: readonly (HostTensor | undefined)[],
    ctx: ConversionContext,
  ): HostTensor[] | undefined;
  /**
   * The inputs whose values `fold` only moves (gathers, slices, concatenates, reshapes), so
   * a partial tensor (extents known only at execution) may pass through them; "all" for
   * every input. Omitted: a partial input is never folded.
   */
  moves?: readonly number[] | "all";
  /** Appends the NNAPI operations computing the node's outputs. */
  convert(node: NodeView, ctx: ConversionContext): void;
}
