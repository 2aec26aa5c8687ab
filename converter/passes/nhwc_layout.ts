/**
 * Runs a model's NCHW image operations in NHWC, the layout the optimized kernels compute in:
 * NNAPI's NCHW mode (the layout flag) makes every convolution transpose its input in and its
 * output back. Rank-4 values are instead stored NHWC from the first image operation on, and
 * stay so through everything that does not care about the layout (element-wise operations,
 * with constants permuted to match; concatenation and reductions with their axes remapped),
 * so transposes remain only where the graph needs NCHW: at its inputs and outputs and in
 * front of operations that see the layout (a reshape that flattens channels and pixels).
 * The caller keeps the rewrite only when it removes transposes.
 */
import type { OperandJson, OperationJson } from "../../driver/model/model_schema.ts";
import type { OperationType } from "../../nnapi/types.ts";
import type { ModelGraph } from "./model_graph.ts";

/** Operations with NNAPI's optional NCHW layout flag (a BOOL input) that this pass rewrites. */
const LAYOUT_OPERATIONS = new Set<OperationType>([
  "CONV_2D",
  "DEPTHWISE_CONV_2D",
  "GROUPED_CONV_2D",
  "AVERAGE_POOL_2D",
  "MAX_POOL_2D",
  "L2_POOL_2D",
  "RESIZE_BILINEAR",
  "RESIZE_NEAREST_NEIGHBOR",
  "TRANSPOSE_CONV_2D",
]);

/** TRANSPOSE_CONV_2D's form with explicit padding (the other has an output shape in layout order). */
const EXPLICIT_TRANSPOSE_CONV_INPUTS = 11;

/** Element-wise operations of one tensor (input 0; any other inputs are scalars). */
const UNARY = new Set<OperationType>([
  "RELU",
  "RELU1",
  "RELU6",
  "LOGISTIC",
  "TANH",
  "HARD_SWISH",
  "ABS",
  "NEG",
  "EXP",
  "LOG",
  "SQRT",
  "RSQRT",
  "SIN",
  "FLOOR",
  "CAST",
  "QUANTIZE",
  "DEQUANTIZE",
  "ELU",
]);

/** Element-wise operations of two broadcasting tensors (inputs 0 and 1). */
const BINARY = new Set<OperationType>([
  "ADD",
  "SUB",
  "MUL",
  "DIV",
  "MAXIMUM",
  "MINIMUM",
  "POW",
  "PRELU",
]);

/** Reductions `(input, axes, keepDims)`. */
const REDUCTIONS = new Set<OperationType>([
  "MEAN",
  "REDUCE_SUM",
  "REDUCE_MAX",
  "REDUCE_MIN",
  "REDUCE_PROD",
]);

const TO_NHWC = [0, 2, 3, 1];
const TO_NCHW = [0, 3, 1, 2];
/** Where NCHW axis `a` lies in NHWC. */
const AXIS_IN_NHWC = [0, 3, 1, 2];

const permute = <T>(values: readonly T[], perm: readonly number[]) => perm.map((p) => values[p]);

/** Bytes per element of the operand types constants are permuted for. */
const ELEMENT_BYTES: Partial<Record<OperandJson["type"], number>> = {
  TENSOR_FLOAT32: 4,
  TENSOR_INT32: 4,
  TENSOR_FLOAT16: 2,
  TENSOR_QUANT8_ASYMM: 1,
  TENSOR_QUANT8_ASYMM_SIGNED: 1,
  TENSOR_BOOL8: 1,
};

/** What the rewrite did: layout operations moved to NHWC and transposes it had to add. */
export interface NhwcRewrite {
  layoutOperations: number;
  transposes: number;
}

/** Rewrites the graph in place (call on a copy: the caller may discard it). */
export function rewriteToNhwc(graph: ModelGraph): NhwcRewrite {
  return new NhwcRewriter(graph).run();
}

class NhwcRewriter {
  readonly #graph: ModelGraph;
  /** Operands stored NHWC (their dimensions already permuted). */
  readonly #nhwc = new Set<number>();
  /** NHWC and NCHW copies made so far, by operand. */
  readonly #toNhwc = new Map<number, number>();
  readonly #toNchw = new Map<number, number>();
  readonly #out: OperationJson[] = [];
  #perms = new Map<string, number>();
  #layoutOperations = 0;
  #transposes = 0;

  constructor(graph: ModelGraph) {
    this.#graph = graph;
  }

  run(): NhwcRewrite {
    const operations = this.#graph.operations.filter((o): o is OperationJson => o !== undefined);
    for (const operation of operations) this.#rewrite(operation);
    this.#graph.replaceAll(this.#out);
    return { layoutOperations: this.#layoutOperations, transposes: this.#transposes };
  }

  #operand(i: number): OperandJson {
    return this.#graph.operands[i];
  }

  #isTensor(i: number): boolean {
    return this.#operand(i).dimensions.length > 0 && this.#operand(i).type.startsWith("TENSOR");
  }

  #isConstant(i: number): boolean {
    const lifetime = this.#operand(i).lifetime;
    return lifetime === "CONSTANT_COPY" || lifetime === "CONSTANT_REFERENCE";
  }

  #rewrite(operation: OperationJson): void {
    const { type } = operation;
    const flag = operation.inputs.findIndex((i) => this.#operand(i).type === "BOOL");
    const x = operation.inputs[0];
    if (
      LAYOUT_OPERATIONS.has(type) && flag > 0 &&
      (type !== "TRANSPOSE_CONV_2D" ||
        operation.inputs.length === EXPLICIT_TRANSPOSE_CONV_INPUTS) &&
      this.#graph.constantValues(operation.inputs[flag])?.[0] === 1 &&
      this.#operand(x).dimensions.length === 4
    ) {
      operation.inputs[0] = this.#nhwcOf(x);
      operation.inputs[flag] = this.#bool(false);
      this.#layoutOperations++;
      return this.#emit(operation, [0]);
    }
    if (UNARY.has(type) && this.#nhwc.has(x)) return this.#emit(operation, [0]);
    if (BINARY.has(type) && this.#rewriteBinary(operation)) return this.#emit(operation, [0]);
    if (type === "CONCATENATION" && this.#rewriteConcatenation(operation)) {
      return this.#emit(operation, [0]);
    }
    if (REDUCTIONS.has(type) && this.#rewriteReduction(operation)) {
      return this.#emit(operation, [0]);
    }
    if (type === "RESHAPE" && this.#nhwc.has(x) && this.#sameMemoryOrder(x)) {
      return this.#emit(operation, []);
    }
    // Everything else sees NCHW values.
    operation.inputs = operation.inputs.map((i) => this.#nhwc.has(i) ? this.#nchwOf(i) : i);
    this.#emit(operation, []);
  }

  /** Both tensors NHWC (one already, the other made so), rank-4 output. */
  #rewriteBinary(operation: OperationJson): boolean {
    const [a, b] = operation.inputs;
    if (!this.#nhwc.has(a) && !this.#nhwc.has(b)) return false;
    const output = this.#operand(operation.outputs[0]);
    if (output.dimensions.length !== 4) return false;
    const other = this.#nhwc.has(a) ? b : a;
    const converted = this.#nhwc.has(other) ? other : this.#nhwcOfBroadcast(other);
    if (converted === undefined) return false;
    operation.inputs[operation.inputs.indexOf(other)] = converted;
    return true;
  }

  #rewriteConcatenation(operation: OperationJson): boolean {
    const tensors = operation.inputs.slice(0, -1);
    const axisOperand = operation.inputs[operation.inputs.length - 1];
    const axis = this.#graph.constantValues(axisOperand)?.[0];
    if (axis === undefined || !tensors.some((t) => this.#nhwc.has(t))) return false;
    if (!tensors.every((t) => this.#nhwc.has(t) || this.#operand(t).dimensions.length === 4)) {
      return false;
    }
    operation.inputs = [
      ...tensors.map((t) => this.#nhwcOf(t)),
      this.#graph.int32Scalar(AXIS_IN_NHWC[(axis + 4) % 4]),
    ];
    return true;
  }

  /** A reduction that keeps its rank: its axes remapped. */
  #rewriteReduction(operation: OperationJson): boolean {
    const [x, axesOperand, keep] = operation.inputs;
    if (!this.#nhwc.has(x) || this.#graph.constantValues(keep)?.[0] !== 1) return false;
    const axes = this.#graph.constantValues(axesOperand);
    if (!axes) return false;
    const remapped = axes.map((a) => AXIS_IN_NHWC[(a + 4) % 4]);
    operation.inputs[1] = this.#graph.addOperand({
      ...this.#operand(axesOperand),
      lifetime: "CONSTANT_COPY",
      value: remapped,
    });
    return true;
  }

  /** Whether a rank-4 value's bytes read the same in both layouts (C = 1 or H x W = 1). */
  #sameMemoryOrder(i: number): boolean {
    const [, h, w, c] = this.#operand(i).dimensions;
    return c === 1 || (h === 1 && w === 1);
  }

  /** Appends the operation; its outputs at `nhwcOutputs` become NHWC values. */
  #emit(operation: OperationJson, nhwcOutputs: number[]): void {
    const after: OperationJson[] = [];
    for (const j of nhwcOutputs) {
      const out = operation.outputs[j];
      const operand = this.#operand(out);
      const nhwcDims = permute(operand.dimensions, TO_NHWC);
      if (this.#graph.isOutput(out)) {
        // The model's output keeps its NCHW shape: the NHWC value is transposed into it.
        const inner = this.#graph.addOperand({
          ...operand,
          dimensions: nhwcDims,
          lifetime: "TEMPORARY_VARIABLE",
        });
        operation.outputs[j] = inner;
        this.#nhwc.add(inner);
        after.push({ type: "TRANSPOSE", inputs: [inner, this.#perm(TO_NCHW)], outputs: [out] });
        this.#transposes++;
      } else {
        operand.dimensions = nhwcDims;
        this.#nhwc.add(out);
      }
    }
    this.#out.push(operation, ...after);
  }

  /** The NHWC version of a rank-4 NCHW value. */
  #nhwcOf(i: number): number {
    if (this.#nhwc.has(i)) return i;
    const made = this.#toNhwc.get(i);
    if (made !== undefined) return made;
    const operand = this.#operand(i);
    const dims = permute(operand.dimensions, TO_NHWC);
    let result: number;
    const permuted = this.#isConstant(i)
      ? this.#permutedConstant(i, operand.dimensions)
      : undefined;
    if (permuted !== undefined) {
      result = permuted;
    } else {
      result = this.#graph.addOperand({
        ...operand,
        dimensions: dims,
        lifetime: "TEMPORARY_VARIABLE",
        value: undefined,
        location: undefined,
      });
      this.#out.push({ type: "TRANSPOSE", inputs: [i, this.#perm(TO_NHWC)], outputs: [result] });
      this.#transposes++;
    }
    this.#nhwc.add(result);
    this.#toNhwc.set(i, result);
    return result;
  }

  /**
   * The NHWC version of the other operand of a broadcasting operation: a constant of rank at
   * most 4, aligned to rank 4 and permuted; a rank-4 value, transposed; undefined otherwise.
   */
  #nhwcOfBroadcast(i: number): number | undefined {
    const operand = this.#operand(i);
    const rank = operand.dimensions.length;
    if (rank === 4) return this.#nhwcOf(i);
    if (!this.#isConstant(i) || rank > 4) return undefined;
    if (operand.dimensions.reduce((a, b) => a * b, 1) === 1) return i; // a scalar-like value
    const aligned = [...Array(4 - rank).fill(1), ...operand.dimensions];
    return this.#permutedConstant(i, aligned);
  }

  /** A constant's data permuted to NHWC as a new operand, or undefined (unknown encoding). */
  #permutedConstant(i: number, nchwDims: readonly number[]): number | undefined {
    const operand = this.#operand(i);
    const size = ELEMENT_BYTES[operand.type];
    const bytes = constantBytes(operand, size);
    if (size === undefined || bytes === undefined || operand.channelQuant) return undefined;
    const [n, c, h, w] = nchwDims;
    const out = new Uint8Array(bytes.length);
    for (let b = 0; b < n; b++) {
      for (let ch = 0; ch < c; ch++) {
        for (let y = 0; y < h; y++) {
          for (let x = 0; x < w; x++) {
            const from = (((b * c + ch) * h + y) * w + x) * size;
            const to = (((b * h + y) * w + x) * c + ch) * size;
            out.set(bytes.subarray(from, from + size), to);
          }
        }
      }
    }
    return this.#graph.addOperand({
      ...operand,
      dimensions: permute(nchwDims, TO_NHWC),
      lifetime: bytes.length > 128 ? "CONSTANT_REFERENCE" : "CONSTANT_COPY",
      value: { base64: out.toBase64() },
      location: undefined,
    });
  }

  /** The NCHW version of an NHWC value (a reshape when the bytes read the same). */
  #nchwOf(i: number): number {
    const made = this.#toNchw.get(i);
    if (made !== undefined) return made;
    const operand = this.#operand(i);
    const dims = permute(operand.dimensions, TO_NCHW);
    const result = this.#graph.addOperand({ ...operand, dimensions: dims });
    if (this.#sameMemoryOrder(i) && dims.every((d) => d > 0)) {
      const shape = this.#graph.addOperand({
        type: "TENSOR_INT32",
        dimensions: [4],
        scale: 0,
        zeroPoint: 0,
        lifetime: "CONSTANT_COPY",
        value: dims,
      });
      this.#out.push({ type: "RESHAPE", inputs: [i, shape], outputs: [result] });
    } else {
      this.#out.push({ type: "TRANSPOSE", inputs: [i, this.#perm(TO_NCHW)], outputs: [result] });
      this.#transposes++;
    }
    this.#toNchw.set(i, result);
    return result;
  }

  #perm(perm: readonly number[]): number {
    const key = perm.join(",");
    let operand = this.#perms.get(key);
    if (operand === undefined) {
      operand = this.#graph.addOperand({
        type: "TENSOR_INT32",
        dimensions: [4],
        scale: 0,
        zeroPoint: 0,
        lifetime: "CONSTANT_COPY",
        value: [...perm],
      });
      this.#perms.set(key, operand);
    }
    return operand;
  }

  #bool(value: boolean): number {
    return this.#graph.addOperand({
      type: "BOOL",
      dimensions: [],
      scale: 0,
      zeroPoint: 0,
      lifetime: "CONSTANT_COPY",
      value: [value ? 1 : 0],
    });
  }
}

/** A constant's little-endian bytes, or undefined when its encoding is not known here. */
function constantBytes(operand: OperandJson, size: number | undefined): Uint8Array | undefined {
  const { value } = operand;
  if (!value || size === undefined) return undefined;
  if (!Array.isArray(value)) return Uint8Array.fromBase64(value.base64);
  const count = value.length;
  const bytes = new Uint8Array(count * size);
  const view = new DataView(bytes.buffer);
  value.forEach((v, k) => {
    const n = Number(v);
    if (operand.type === "TENSOR_FLOAT32") view.setFloat32(4 * k, n, true);
    else if (operand.type === "TENSOR_INT32") view.setInt32(4 * k, n, true);
    else if (operand.type === "TENSOR_FLOAT16") view.setFloat16(2 * k, n, true);
    else view.setUint8(k, n);
  });
  return bytes;
}
