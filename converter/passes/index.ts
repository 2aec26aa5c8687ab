/**
 * The optimization passes every front end runs on a converted model before it is
 * registered: semantics-preserving rewrites of the NNAPI graph (see each pass).
 */
import type { ModelJson } from "../../driver/model/model_schema.ts";
import { foldScaleShift } from "./fold_scale_shift.ts";
import { fuseActivations } from "./fuse_activations.ts";
import { fuseHardSwish } from "./hard_swish.ts";
import { ModelGraph } from "./model_graph.ts";
import { rewriteToNhwc } from "./nhwc_layout.ts";

/** The image layout a converted model's operations run in. */
export type ImageLayout = "NCHW" | "NHWC";

/** The model after the passes, and the layout it runs in. */
export function optimizeModel(model: ModelJson): { model: ModelJson; layout: ImageLayout } {
  const fused = new ModelGraph(model);
  // Scale and shift first: an activation after them then fuses into the convolution.
  foldScaleShift(fused);
  fuseActivations(fused);
  fuseHardSwish(fused);
  const nchw = fused.toJson();
  // NHWC when it pays: NCHW mode transposes twice per image operation; the rewrite adds
  // transposes only where the graph needs NCHW.
  const nhwc = new ModelGraph(nchw);
  const { layoutOperations, transposes } = rewriteToNhwc(nhwc);
  if (layoutOperations === 0 || transposes >= 2 * layoutOperations) {
    return { model: nchw, layout: "NCHW" };
  }
  return { model: nhwc.toJson(), layout: "NHWC" };
}
