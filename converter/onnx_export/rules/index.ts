/** The NNAPI -> ONNX rules, one per operation type, in one typed table. */
import type { OperationType } from "../../../nnapi/types.ts";
import type { ExportRule } from "../export.ts";
import { ELEMENTWISE_EXPORTS } from "./elementwise.ts";
import { LAYER_EXPORTS } from "./layers.ts";
import { SHAPE_EXPORTS } from "./shape.ts";

export const EXPORT_RULES: { readonly [T in OperationType]?: ExportRule } = {
  ...ELEMENTWISE_EXPORTS,
  ...LAYER_EXPORTS,
  ...SHAPE_EXPORTS,
};
