/** The one table of ONNX op types the converter handles. */
import type { Rule } from "../rule.ts";
import { CONTROL_FLOW_RULES } from "./control_flow.ts";
import { CONV_RULES } from "./conv.ts";
import { CONV_TRANSPOSE_RULES } from "./conv_transpose.ts";
import { DYNAMIC_QUANTIZATION_RULES } from "./dynamic_quantization.ts";
import { ELEMENTWISE_RULES } from "./elementwise.ts";
import { ERF_RULES } from "./erf.ts";
import { EXPAND_RULES } from "./expand.ts";
import { LOGIC_RULES } from "./logic.ts";
import { MATMUL_RULES } from "./matmul.ts";
import { NORMALIZATION_RULES } from "./normalization.ts";
import { PAD_SPLIT_RULES } from "./pad_split.ts";
import { POOL_RULES } from "./pool.ts";
import { QLINEAR_RULES } from "./qlinear.ts";
import { QUANTIZATION_RULES } from "./quantization.ts";
import { RANGE_RULES } from "./range.ts";
import { RECURRENT_RULES } from "./recurrent.ts";
import { REDUCE_RULES } from "./reduce.ts";
import { RESHAPE_RULES } from "./reshape.ts";
import { RESIZE_RULES } from "./resize.ts";
import { SEQUENCE_RULES } from "./sequence.ts";
import { SHAPE_RULES } from "./shape.ts";
import { SOFTMAX_RULES } from "./softmax.ts";
import { SPECTRAL_RULES } from "./spectral.ts";
import { SPECTRAL_CONSTANT_RULES } from "./spectral_constants.ts";
import { TRANSPOSE_RULES } from "./transpose.ts";
import { TRILU_RULES } from "./trilu.ts";

export const RULES: Readonly<Record<string, Rule>> = {
  ...ELEMENTWISE_RULES,
  ...CONV_RULES,
  ...POOL_RULES,
  ...MATMUL_RULES,
  ...SHAPE_RULES,
  ...SEQUENCE_RULES,
  ...EXPAND_RULES,
  ...TRILU_RULES,
  ...RANGE_RULES,
  ...RESHAPE_RULES,
  ...TRANSPOSE_RULES,
  ...SOFTMAX_RULES,
  ...CONV_TRANSPOSE_RULES,
  ...REDUCE_RULES,
  ...LOGIC_RULES,
  ...NORMALIZATION_RULES,
  ...PAD_SPLIT_RULES,
  ...RESIZE_RULES,
  ...QUANTIZATION_RULES,
  ...QLINEAR_RULES,
  ...DYNAMIC_QUANTIZATION_RULES,
  ...ERF_RULES,
  ...CONTROL_FLOW_RULES,
  ...RECURRENT_RULES,
  ...SPECTRAL_RULES,
  ...SPECTRAL_CONSTANT_RULES,
};
