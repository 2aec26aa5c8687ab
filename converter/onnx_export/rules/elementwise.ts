/**
 * Element-wise NNAPI operations as ONNX: ADD, SUB, MUL, DIV (NNAPI broadcasts as ONNX does;
 * the fused activation after), RELU, RELU1, RELU6, LOGISTIC, TANH, LOG_SOFTMAX, ARGMAX and
 * ARGMIN, the comparisons, SELECT and the logical operations. float32, and int32 ADD, SUB and
 * MUL (shape arithmetic); quantized forms are not claimed.
 */
import type { SubgraphStep } from "../../../driver/devices/device.ts";
import type { OperationType } from "../../../nnapi/types.ts";
import type { ExportContext, ExportRule } from "../export.ts";

/**
 * Whether every tensor the step reads or writes is float32, but for the inputs at
 * `parameters` (constant int32 shapes, permutations, axes).
 */
export function float32Only(
  step: SubgraphStep,
  ctx: ExportContext,
  parameters: readonly number[] = [],
): boolean {
  const tensors = [...step.inputs.filter((_, j) => !parameters.includes(j)), ...step.outputs];
  return tensors.every((i) => {
    const type = ctx.operands[i]?.type;
    return !type || !type.startsWith("TENSOR_") || type === "TENSOR_FLOAT32";
  });
}

/** Whether every tensor the step reads or writes is int32. */
export function int32Only(step: SubgraphStep, ctx: ExportContext): boolean {
  return [...step.inputs, ...step.outputs].every((i) => {
    const type = ctx.operands[i]?.type;
    return !type || !type.startsWith("TENSOR_") || type === "TENSOR_INT32";
  });
}

/**
 * ADD, SUB, MUL with their fused activation; int32 too (shape arithmetic), where NNAPI takes
 * no activation and keeps the low 32 bits as onnxruntime's int32 arithmetic does.
 */
function binary(op: string): ExportRule {
  return {
    supports: (step, ctx) =>
      ctx.isConstant(step, 2) &&
      (float32Only(step, ctx) || (int32Only(step, ctx) && ctx.scalar(step, 2) === 0)),
    write(step, ctx) {
      const out = ctx.name(step.outputs[0]);
      const activation = ctx.scalar(step, 2);
      const result = activation === 0 ? out : ctx.temporary(op);
      ctx.node(op, [ctx.input(step, 0), ctx.input(step, 1)], [result]);
      if (activation !== 0) ctx.activate(result, activation, out);
    },
  };
}

function unary(write: (from: string, to: string, ctx: ExportContext) => void): ExportRule {
  return {
    supports: float32Only,
    write: (step, ctx) => write(ctx.input(step, 0), ctx.name(step.outputs[0]), ctx),
  };
}

/** A binary operation without a fused activation (ONNX broadcasts as NNAPI does). */
function plainBinary(op: string): ExportRule {
  return {
    supports: float32Only,
    write: (step, ctx) =>
      ctx.node(op, [ctx.input(step, 0), ctx.input(step, 1)], [ctx.name(step.outputs[0])]),
  };
}

/** PRELU where alpha broadcasts onto the input (ONNX's PRelu keeps the input's shape). */
const prelu: ExportRule = {
  supports(step, ctx) {
    const x = ctx.operands[step.inputs[0]].shape;
    const alpha = ctx.operands[step.inputs[1]].shape;
    return float32Only(step, ctx) && alpha.length <= x.length &&
      alpha.every((d, i) => {
        const xd = x[i + x.length - alpha.length];
        return d === 1 || (d !== 0 && d === xd);
      });
  },
  write: (step, ctx) =>
    ctx.node("PRelu", [ctx.input(step, 0), ctx.input(step, 1)], [ctx.name(step.outputs[0])]),
};

/** One ONNX operator of the same name's meaning. */
const same = (op: string) => unary((from, to, ctx) => ctx.node(op, [from], [to]));

/** Whether the step's inputs are float32 tensors (its outputs booleans, or as the inputs). */
function floatInputs(step: SubgraphStep, ctx: ExportContext): boolean {
  return step.inputs.every((i) => ctx.operands[i]?.type === "TENSOR_FLOAT32");
}

/** A comparison of float32 tensors into a TENSOR_BOOL8 (broadcasting as ONNX does). */
function comparison(write: (a: string, b: string, to: string, ctx: ExportContext) => void) {
  return {
    supports: floatInputs,
    write: (step: SubgraphStep, ctx: ExportContext) =>
      write(ctx.input(step, 0), ctx.input(step, 1), ctx.name(step.outputs[0]), ctx),
  } satisfies ExportRule;
}

const compare = (op: string) => comparison((a, b, to, ctx) => ctx.node(op, [a, b], [to]));

/** SELECT: NNAPI's three tensors have one shape; ONNX's Where takes them as they are. */
const select: ExportRule = {
  supports: (step, ctx) =>
    ctx.operands[step.inputs[0]]?.type === "TENSOR_BOOL8" &&
    float32Only(step, ctx, [0]),
  write: (step, ctx) =>
    ctx.node(
      "Where",
      [ctx.input(step, 0), ctx.input(step, 1), ctx.input(step, 2)],
      [ctx.name(step.outputs[0])],
    ),
};

/** Whether every tensor the step reads or writes is boolean. */
function booleanOnly(step: SubgraphStep, ctx: ExportContext): boolean {
  return [...step.inputs, ...step.outputs].every((i) => ctx.operands[i]?.type === "TENSOR_BOOL8");
}

/** LOGICAL_AND, LOGICAL_OR (broadcasting as ONNX does) and LOGICAL_NOT on booleans. */
function logical(op: "And" | "Or" | "Not"): ExportRule {
  return {
    supports: booleanOnly,
    write: (step, ctx) =>
      ctx.node(op, step.inputs.map((_, j) => ctx.input(step, j)), [ctx.name(step.outputs[0])]),
  };
}

/**
 * ARGMAX and ARGMIN of float32 or int32 along a constant axis (the first index wins ties in
 * both): ONNX's int64 indices cast to NNAPI's int32, the axis dropped.
 */
function argExtreme(op: "ArgMax" | "ArgMin"): ExportRule {
  return {
    supports: (step, ctx) =>
      ["TENSOR_FLOAT32", "TENSOR_INT32"].includes(ctx.operands[step.inputs[0]]?.type) &&
      ctx.isConstant(step, 1) && ctx.operands[step.outputs[0]]?.type === "TENSOR_INT32",
    write(step, ctx) {
      const indices = ctx.temporary(op);
      ctx.node(op, [ctx.input(step, 0)], [indices], {
        axis: ctx.scalar(step, 1),
        keepdims: 0,
        select_last_index: 0,
      });
      ctx.node("Cast", [indices], [ctx.name(step.outputs[0])], { to: 6 /* INT32 */ });
    },
  };
}

/** LOG_SOFTMAX: beta a Mul before ONNX's LogSoftmax along the constant axis. */
const logSoftmax: ExportRule = {
  supports: (step, ctx) =>
    float32Only(step, ctx) && ctx.isConstant(step, 1) && ctx.isConstant(step, 2),
  write(step, ctx) {
    const beta = ctx.scalar(step, 1);
    let input = ctx.input(step, 0);
    if (beta !== 1) {
      const scaled = ctx.temporary("beta");
      ctx.node("Mul", [input, ctx.constant("beta", [], [beta])], [scaled]);
      input = scaled;
    }
    ctx.node("LogSoftmax", [input], [ctx.name(step.outputs[0])], { axis: ctx.scalar(step, 2) });
  },
};

export const ELEMENTWISE_EXPORTS: { readonly [T in OperationType]?: ExportRule } = {
  LOGICAL_AND: logical("And"),
  LOGICAL_OR: logical("Or"),
  LOGICAL_NOT: logical("Not"),
  ARGMAX: argExtreme("ArgMax"),
  ARGMIN: argExtreme("ArgMin"),
  LOG_SOFTMAX: logSoftmax,
  LESS: compare("Less"),
  LESS_EQUAL: compare("LessOrEqual"),
  GREATER: compare("Greater"),
  GREATER_EQUAL: compare("GreaterOrEqual"),
  EQUAL: compare("Equal"),
  NOT_EQUAL: comparison((a, b, to, ctx) => {
    const equal = ctx.temporary("equal");
    ctx.node("Equal", [a, b], [equal]);
    ctx.node("Not", [equal], [to]);
  }),
  SELECT: select,
  FLOOR: same("Floor"),
  MAXIMUM: plainBinary("Max"),
  MINIMUM: plainBinary("Min"),
  POW: plainBinary("Pow"),
  PRELU: prelu,
  ABS: same("Abs"),
  EXP: same("Exp"),
  ERF: same("Erf"),
  LOG: same("Log"),
  SQRT: same("Sqrt"),
  NEG: same("Neg"),
  SIN: same("Sin"),
  HARD_SWISH: same("HardSwish"),
  RSQRT: unary((from, to, ctx) => {
    const root = ctx.temporary("sqrt");
    ctx.node("Sqrt", [from], [root]);
    ctx.node("Reciprocal", [root], [to]);
  }),
  ADD: binary("Add"),
  SUB: binary("Sub"),
  MUL: binary("Mul"),
  // NNAPI's int32 division floors, ONNX's truncates: float32 only.
  DIV: {
    ...binary("Div"),
    supports: (step, ctx) => float32Only(step, ctx) && ctx.isConstant(step, 2),
  },
  RELU: unary((from, to, ctx) => ctx.activate(from, 1, to)),
  RELU1: unary((from, to, ctx) => ctx.activate(from, 2, to)),
  RELU6: unary((from, to, ctx) => ctx.activate(from, 3, to)),
  LOGISTIC: unary((from, to, ctx) => ctx.node("Sigmoid", [from], [to])),
  TANH: unary((from, to, ctx) => ctx.node("Tanh", [from], [to])),
};
