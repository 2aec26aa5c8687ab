/** The one table of ONNX op types the converter handles. */
import type { Rule } from "../rule.ts";
import { CONV_RULES } from "./conv.ts";
import { ELEMENTWISE_RULES } from "./elementwise.ts";
import { MATMUL_RULES } from "./matmul.ts";
import { POOL_RULES } from "./pool.ts";
import { SHAPE_RULES } from "./shape.ts";
import { SOFTMAX_RULES } from "./softmax.ts";

export const RULES: Readonly<Record<string, Rule>> = {
  ...ELEMENTWISE_RULES,
  ...CONV_RULES,
  ...POOL_RULES,
  ...MATMUL_RULES,
  ...SHAPE_RULES,
  ...SOFTMAX_RULES,
};
