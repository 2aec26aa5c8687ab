/**
 * NNAPI operations that move elements, as ONNX: RESHAPE (to a shape constant or computed),
 * SHAPE, RANGE, CAST (int32 to float32), BATCH_MATMUL, CONCATENATION (float32 or int32),
 * TRANSPOSE (its permutation a constant, or the reversed axes), MEAN (constant axes), PAD and
 * PAD_V2, SQUEEZE, EXPAND_DIMS, SLICE (constant window), GATHER, SPLIT (equal parts).
 */
import type { OperationType } from "../../../nnapi/types.ts";
import type { SubgraphStep } from "../../../driver/devices/device.ts";
import { sliceWindow } from "../../../operations/strided_slice.ts";
import type { ExportContext, ExportRule } from "../export.ts";
import { float32Only, int32Only } from "./elementwise.ts";

/** ONNX's element types a Cast names. */
const FLOAT = 1;
const INT32 = 6;
const INT64 = 7;

/**
 * RESHAPE to a constant shape, or to one computed at execution (cast to ONNX's int64; a 0
 * kept as an extent of 0, as NNAPI reads it).
 */
const reshape: ExportRule = {
  supports: (step, ctx) =>
    float32Only(step, ctx, [1]) && ctx.operands[step.inputs[1]]?.type === "TENSOR_INT32",
  write(step, ctx) {
    const given = ctx.operands[step.inputs[1]].value;
    let shape: string;
    if (given) {
      const target = Array.from(given as ArrayLike<number>);
      shape = ctx.constant("shape", [target.length], target, "int64");
    } else {
      shape = ctx.temporary("shape");
      ctx.node("Cast", [ctx.input(step, 1)], [shape], { to: INT64 });
    }
    ctx.node("Reshape", [ctx.input(step, 0), shape], [ctx.name(step.outputs[0])], {
      allowzero: 1,
    });
  },
};

/** SHAPE: ONNX's int64 shape cast to NNAPI's int32. */
const shapeOf: ExportRule = {
  supports: (step, ctx) =>
    ctx.operands[step.outputs[0]]?.type === "TENSOR_INT32" &&
    ["TENSOR_FLOAT32", "TENSOR_INT32", "TENSOR_BOOL8"].includes(
      ctx.operands[step.inputs[0]]?.type,
    ),
  write(step, ctx) {
    const shape = ctx.temporary("shape");
    ctx.node("Shape", [ctx.input(step, 0)], [shape]);
    ctx.node("Cast", [shape], [ctx.name(step.outputs[0])], { to: INT32 });
  },
};

/** RANGE (float32 or int32): ONNX's Range of its three one-element inputs as scalars. */
const range: ExportRule = {
  supports: (step, ctx) => float32Only(step, ctx) || int32Only(step, ctx),
  write(step, ctx) {
    const scalar = ctx.constant("scalar", [0], [], "int64");
    const bounds = [0, 1, 2].map((j) => {
      const one = ctx.temporary("bound");
      ctx.node("Reshape", [ctx.input(step, j), scalar], [one]);
      return one;
    });
    ctx.node("Range", bounds, [ctx.name(step.outputs[0])]);
  },
};

/** CAST of int32 to float32 (both round to the nearest float). */
const cast: ExportRule = {
  supports: (step, ctx) =>
    ctx.operands[step.inputs[0]]?.type === "TENSOR_INT32" &&
    ctx.operands[step.outputs[0]]?.type === "TENSOR_FLOAT32",
  write(step, ctx) {
    ctx.node("Cast", [ctx.input(step, 0)], [ctx.name(step.outputs[0])], { to: FLOAT });
  },
};

/** BATCH_MATMUL: MatMul, each adjoint input's last two extents swapped first. */
const batchMatmul: ExportRule = {
  supports: (step, ctx) =>
    float32Only(step, ctx) && step.inputs.slice(2).every((_, j) => ctx.isConstant(step, j + 2)),
  write(step, ctx) {
    const operand = (j: number) => {
      const name = ctx.input(step, j);
      if (step.inputs.length <= j + 2 || ctx.scalar(step, j + 2) === 0) return name;
      const rank = ctx.operands[step.inputs[j]].shape.length;
      const perm = [...Array(rank).keys()];
      [perm[rank - 2], perm[rank - 1]] = [rank - 1, rank - 2];
      const swapped = ctx.temporary("adjoint");
      ctx.node("Transpose", [name], [swapped], { perm });
      return swapped;
    };
    ctx.node("MatMul", [operand(0), operand(1)], [ctx.name(step.outputs[0])]);
  },
};

const concatenation: ExportRule = {
  supports: (step, ctx) =>
    (float32Only(step, ctx) || int32Only(step, ctx)) &&
    ctx.isConstant(step, step.inputs.length - 1),
  write(step, ctx) {
    const count = step.inputs.length - 1;
    const axis = ctx.scalar(step, count);
    const parts = step.inputs.slice(0, count).map((_, j) => ctx.input(step, j));
    ctx.node("Concat", parts, [ctx.name(step.outputs[0])], { axis });
  },
};

const transpose: ExportRule = {
  supports: (step, ctx) =>
    float32Only(step, ctx, [1]) && (step.inputs.length < 2 || ctx.isConstant(step, 1) ||
      ctx.operands[step.inputs[1]]?.value === null),
  write(step, ctx) {
    const given = step.inputs.length > 1 ? ctx.operands[step.inputs[1]]?.value : null;
    const rank = ctx.operands[step.inputs[0]].shape.length;
    const perm = given
      ? Array.from(given as ArrayLike<number>)
      : Array.from({ length: rank }, (_, i) => rank - 1 - i);
    ctx.node("Transpose", [ctx.input(step, 0)], [ctx.name(step.outputs[0])], { perm });
  },
};

/**
 * MEAN and REDUCE_SUM/PROD/MIN/MAX over constant axes. NNAPI gives [1] where every axis is
 * reduced and none kept, ONNX a scalar: reshaped to NNAPI's [1].
 */
function reduce(op: string): ExportRule {
  return {
    supports: (step, ctx) =>
      float32Only(step, ctx, [1]) && ctx.isConstant(step, 1) && ctx.isConstant(step, 2),
    write(step, ctx) {
      const rank = ctx.operands[step.inputs[0]].shape.length;
      const axes = [...new Set(values(ctx, step, 1).map((a) => a < 0 ? a + rank : a))];
      const keep = ctx.scalar(step, 2) > 0 ? 1 : 0;
      const out = ctx.name(step.outputs[0]);
      const scalar = !keep && axes.length === rank;
      const reduced = scalar ? ctx.temporary(op) : out;
      if (op === "ReduceSum") {
        const list = ctx.constant("axes", [axes.length], axes, "int64");
        ctx.node(op, [ctx.input(step, 0), list], [reduced], { keepdims: keep });
      } else {
        ctx.node(op, [ctx.input(step, 0)], [reduced], { axes, keepdims: keep });
      }
      if (scalar) ctx.node("Reshape", [reduced, ctx.constant("one", [1], [1], "int64")], [out]);
    },
  };
}

/** The int32 values of a constant input of the step. */
function values(ctx: ExportContext, step: SubgraphStep, j: number): number[] {
  return Array.from(ctx.operands[step.inputs[j]].value as ArrayLike<number>);
}

/** PAD (zeros) and PAD_V2 (a given value): ONNX's pads are all begins, then all ends. */
const pad: ExportRule = {
  supports: (step, ctx) =>
    float32Only(step, ctx, [1]) && ctx.isConstant(step, 1) &&
    (step.inputs.length < 3 || ctx.isConstant(step, 2)),
  write(step, ctx) {
    const pairs = values(ctx, step, 1);
    const pads = [...pairs.filter((_, i) => i % 2 === 0), ...pairs.filter((_, i) => i % 2 === 1)];
    const inputs = [ctx.input(step, 0), ctx.constant("pads", [pads.length], pads, "int64")];
    if (step.inputs.length > 2) inputs.push(ctx.constant("value", [], [ctx.scalar(step, 2)]));
    ctx.node("Pad", inputs, [ctx.name(step.outputs[0])]);
  },
};

/** SQUEEZE of the given axes, or of every extent of 1 (the shapes are known at export). */
const squeeze: ExportRule = {
  supports: (step, ctx) =>
    float32Only(step, ctx, [1]) &&
    (step.inputs.length < 2 || ctx.isConstant(step, 1) ||
      ctx.operands[step.inputs[1]]?.value === null),
  write(step, ctx) {
    const shape = ctx.operands[step.inputs[0]].shape;
    const given = step.inputs.length > 1 ? ctx.operands[step.inputs[1]]?.value : null;
    const axes = given
      ? Array.from(given as ArrayLike<number>, (a) => a < 0 ? a + shape.length : a)
      : shape.flatMap((d, i) => d === 1 ? [i] : []);
    const name = ctx.name(step.outputs[0]);
    if (axes.length === 0) return ctx.node("Identity", [ctx.input(step, 0)], [name]);
    const list = ctx.constant("axes", [axes.length], axes, "int64");
    ctx.node("Squeeze", [ctx.input(step, 0), list], [name]);
  },
};

const expandDims: ExportRule = {
  supports: (step, ctx) =>
    (float32Only(step, ctx) || int32Only(step, ctx)) && ctx.isConstant(step, 1),
  write(step, ctx) {
    const rank = ctx.operands[step.inputs[0]].shape.length + 1;
    const axis = ctx.scalar(step, 1);
    const axes = ctx.constant("axes", [1], [axis < 0 ? axis + rank : axis], "int64");
    ctx.node("Unsqueeze", [ctx.input(step, 0), axes], [ctx.name(step.outputs[0])]);
  },
};

/**
 * An end past every extent: ONNX's Slice clamps it to the axis, so "to the end" is written
 * without the extent and the model stays the same whatever extents come at execution.
 */
const TO_THE_END = Number.MAX_SAFE_INTEGER;

/** SLICE: begin and size (-1: to the end) as ONNX's starts and ends over every axis. */
const slice: ExportRule = {
  supports: (step, ctx) =>
    (float32Only(step, ctx, [1, 2]) || int32Only(step, ctx)) && ctx.isConstant(step, 1) &&
    ctx.isConstant(step, 2),
  write(step, ctx) {
    const begin = values(ctx, step, 1);
    const size = values(ctx, step, 2);
    const ends = begin.map((b, i) => size[i] === -1 ? TO_THE_END : b + size[i]);
    ctx.node("Slice", [
      ctx.input(step, 0),
      ctx.constant("starts", [begin.length], begin, "int64"),
      ctx.constant("ends", [ends.length], ends, "int64"),
    ], [ctx.name(step.outputs[0])]);
  },
};

/** GATHER of float32 or int32 along an axis by int32 indices (constant or at execution). */
const gather: ExportRule = {
  supports: (step, ctx) =>
    (float32Only(step, ctx, [2]) || int32Only(step, ctx)) && ctx.isConstant(step, 1) &&
    ctx.operands[step.inputs[2]]?.type === "TENSOR_INT32",
  write(step, ctx) {
    ctx.node("Gather", [ctx.input(step, 0), ctx.input(step, 2)], [ctx.name(step.outputs[0])], {
      axis: ctx.scalar(step, 1),
    });
  },
};

/** SPLIT into equal parts along an axis. */
const split: ExportRule = {
  supports: (step, ctx) =>
    float32Only(step, ctx) && ctx.isConstant(step, 1) && ctx.isConstant(step, 2),
  write(step, ctx) {
    const shape = ctx.operands[step.inputs[0]].shape;
    const axis = ctx.scalar(step, 1);
    const at = axis < 0 ? axis + shape.length : axis;
    const parts = ctx.scalar(step, 2);
    const sizes = new Array(parts).fill(shape[at] / parts);
    ctx.node(
      "Split",
      [ctx.input(step, 0), ctx.constant("sizes", [parts], sizes, "int64")],
      step.outputs.map((i) => ctx.name(i)),
      { axis: at },
    );
  },
};

/**
 * STRIDED_SLICE: NNAPI's window (masks and clamping resolved by its own rule against the
 * execution's shapes) as ONNX's Slice over every axis, then the shrunk axes squeezed.
 */
const stridedSliceRule: ExportRule = {
  supports: (step, ctx) =>
    float32Only(step, ctx, [1, 2, 3]) &&
    step.inputs.slice(1).every((_, j) => ctx.isConstant(step, j + 1)),
  write(step, ctx) {
    const inputs = step.inputs.map((i) => ({ ...ctx.operands[i], value: ctx.operands[i].value }));
    const window = sliceWindow(inputs);
    const shape = ctx.operands[step.inputs[0]].shape;
    // ONNX reads a negative end as counted from the end: "before index 0" is far below. A
    // forward window whose next element would be past the axis runs to its end (the same
    // elements, written without the extent).
    const ends = window.begin.map((b, d) => {
      const end = b + window.counts[d] * window.step[d];
      if (window.step[d] > 0 && end >= shape[d]) return TO_THE_END;
      return end < 0 ? -(2 ** 31) : end;
    });
    const shrunk = shape.flatMap((_, d) => ctx.scalar(step, 6) & (1 << d) ? [d] : []);
    const out = ctx.name(step.outputs[0]);
    const sliced = shrunk.length > 0 ? ctx.temporary("strided") : out;
    ctx.node("Slice", [
      ctx.input(step, 0),
      ctx.constant("starts", [shape.length], window.begin, "int64"),
      ctx.constant("ends", [shape.length], ends, "int64"),
      ctx.constant("axes", [shape.length], shape.map((_, d) => d), "int64"),
      ctx.constant("steps", [shape.length], window.step, "int64"),
    ], [sliced]);
    if (shrunk.length > 0) {
      const axes = ctx.constant("shrunk", [shrunk.length], shrunk, "int64");
      ctx.node("Squeeze", [sliced, axes], [out]);
    }
  },
};

export const SHAPE_EXPORTS: { readonly [T in OperationType]?: ExportRule } = {
  STRIDED_SLICE: stridedSliceRule,
  SPLIT: split,
  PAD: pad,
  PAD_V2: pad,
  SQUEEZE: squeeze,
  EXPAND_DIMS: expandDims,
  SLICE: slice,
  GATHER: gather,
  RESHAPE: reshape,
  SHAPE: shapeOf,
  RANGE: range,
  CAST: cast,
  BATCH_MATMUL: batchMatmul,
  CONCATENATION: concatenation,
  TRANSPOSE: transpose,
  MEAN: reduce("ReduceMean"),
  REDUCE_SUM: reduce("ReduceSum"),
  REDUCE_PROD: reduce("ReduceProd"),
  REDUCE_MIN: reduce("ReduceMin"),
  REDUCE_MAX: reduce("ReduceMax"),
};
