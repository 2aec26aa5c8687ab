/**
 * Resize (opsets 10+) and Upsample (7-9) of the two spatial axes of an NCHW tensor onto
 * RESIZE_NEAREST_NEIGHBOR / RESIZE_BILINEAR in NCHW mode. ONNX coordinate modes map onto
 * NNAPI's align_corners / half_pixel_centers flags (HAL 1.3) where they compute the same
 * source index; any other combination is refused rather than approximated.
 */
import type { BuiltOperand } from "../../graph_builder.ts";
import type { ConversionContext } from "../context.ts";
import type { NodeView } from "../node_view.ts";
import type { Rule } from "../rule.ts";
import { NCHW, requireFloat, sameTypeAs } from "./common.ts";

/** NNAPI's (align_corners, half_pixel_centers) for an ONNX mode combination. */
function coordinateFlags(node: NodeView, mode: string, opset: number): [boolean, boolean] {
  if (opset < 11) return [false, false]; // Upsample and Resize-10 are asymmetric
  const transform = node.string("coordinate_transformation_mode", "half_pixel");
  if (mode === "nearest") {
    const rounding = node.string("nearest_mode", "round_prefer_floor");
    if (transform === "asymmetric" && rounding === "floor") return [false, false];
    if (transform === "align_corners" && rounding === "round_prefer_ceil") return [true, false];
    if (transform === "half_pixel" && rounding === "round_prefer_ceil") return [false, true];
    if (transform === "tf_half_pixel_for_nn" && rounding === "floor") return [false, true];
    throw new Error(
      `nearest resize with coordinate_transformation_mode '${transform}' and nearest_mode ` +
        `'${rounding}' has no NNAPI equivalent`,
    );
  }
  if (transform === "asymmetric") return [false, false];
  if (transform === "align_corners") return [true, false];
  if (transform === "half_pixel" || transform === "pytorch_half_pixel") return [false, true];
  throw new Error(
    `linear resize with coordinate_transformation_mode '${transform}' is not supported`,
  );
}

/** The scales (or sizes) input by opset: Upsample-9/Resize-10 input 1; Resize-11+ 2 or 3. */
function spatialTarget(node: NodeView, ctx: ConversionContext, dims: readonly number[]) {
  if (node.opType === "Upsample" && ctx.opset < 9) {
    const scales = node.floats("scales");
    return { scales };
  }
  const scalesName = ctx.opset >= 11 ? node.input(2) : node.input(1);
  const sizesName = ctx.opset >= 11 ? node.input(3) : undefined;
  if (sizesName) {
    const sizes = [...ctx.requireConstant(sizesName, "Resize's sizes").data];
    return { sizes };
  }
  if (!scalesName) throw new Error("neither scales nor sizes is given");
  const scales = [...ctx.requireConstant(scalesName, "Resize's scales").data];
  if (scales.length !== dims.length) {
    throw new Error(`scales has ${scales.length} values for rank ${dims.length}`);
  }
  return { scales };
}

const resize: Rule = {
  convert(node, ctx) {
    const x = node.inputs[0];
    requireFloat(ctx, x);
    const dims = ctx.dims(x);
    if (dims.length !== 4) {
      throw new Error(`only 4-D (NCHW) inputs are supported (rank ${dims.length})`);
    }
    const mode = node.string("mode", "nearest");
    if (mode !== "nearest" && mode !== "linear") throw new Error(`mode '${mode}' is not supported`);
    const target = spatialTarget(node, ctx, dims);
    const s = ctx.builder;
    let size: BuiltOperand[];
    if (target.sizes) {
      if (target.sizes[0] !== dims[0] || target.sizes[1] !== dims[1]) {
        throw new Error("only the spatial axes may be resized");
      }
      size = [s.int32(target.sizes[3]), s.int32(target.sizes[2])];
    } else {
      const scales = target.scales!;
      if (scales[0] !== 1 || scales[1] !== 1) {
        throw new Error("only the spatial axes may be resized");
      }
      size = dims[2] && dims[3]
        ? [s.int32(Math.floor(dims[3] * scales[3])), s.int32(Math.floor(dims[2] * scales[2]))]
        : [s.float32(scales[3]), s.float32(scales[2])];
    }
    const [alignCorners, halfPixel] = coordinateFlags(node, mode, ctx.opset);
    const flags = alignCorners || halfPixel ? [s.bool(alignCorners), s.bool(halfPixel)] : [];
    const type = mode === "nearest" ? "RESIZE_NEAREST_NEIGHBOR" : "RESIZE_BILINEAR";
    ctx.emitAs(
      node.outputs[0],
      type,
      [ctx.operand(x), ...size, s.bool(NCHW), ...flags],
      sameTypeAs(ctx, x),
    );
  },
};

export const RESIZE_RULES: Record<string, Rule> = { Resize: resize, Upsample: resize };
