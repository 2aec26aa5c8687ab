/**
 * The optimization passes every front end runs on a converted model before it is
 * registered: semantics-preserving rewrites of the NNAPI graph (see each pass).
 */
import type { ModelJson } from "../../driver/model_schema.ts";
import { fuseActivations } from "./fuse_activations.ts";
import { ModelGraph } from "./model_graph.ts";

/** The model after the passes. */
export function optimizeModel(model: ModelJson): ModelJson {
  const graph = new ModelGraph(model);
  fuseActivations(graph);
  return graph.toJson();
}
