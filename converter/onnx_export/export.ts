/**
 * NNAPI -> ONNX (#31): a run of NNAPI steps written as an ONNX model, for a device that hands
 * its part of a plan to onnxruntime (TVM's BYOC, the other way round). One rule per NNAPI
 * operation (`rules/`), each writing the ONNX nodes that compute exactly what the operation
 * means (fused activations, NHWC layouts, implicit padding resolved against the shapes of
 * the execution). It shares the ONNX importer's protobuf schema (`../onnx/decode.ts`).
 */
import { type NodeProto, onnx, type TensorProto } from "../onnx/decode.ts";
import type { OperandType, OperationType } from "../../nnapi/types.ts";
import type { SubgraphOperand, SubgraphStep } from "../../driver/devices/device.ts";
import { EXPORT_RULES } from "./rules/index.ts";

const DataType = onnx.TensorProto.DataType;
const A = onnx.AttributeProto.AttributeType;

/** The ONNX opset the exporter writes (Clip's bounds are inputs, ReduceMean's axes attributes). */
export const EXPORT_OPSET = 17;

/** ONNX element types of the NNAPI operand types the exporter writes. */
const ELEMENT_TYPES: Partial<Record<OperandType, number>> = {
  TENSOR_FLOAT32: DataType.FLOAT,
  TENSOR_INT32: DataType.INT32,
  TENSOR_BOOL8: DataType.BOOL,
};

/** A typed array's bytes as ONNX's raw data (little-endian, as this machine and every x86/Arm). */
function littleEndianBytes(data: ArrayBufferView): Uint8Array {
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength).slice();
}

/** A constant operand as an initializer (its values as raw bytes). */
function initializer(name: string, operand: SubgraphOperand): TensorProto {
  const type = ELEMENT_TYPES[operand.type];
  if (type === undefined) throw new Error(`a constant ${operand.type} is not written as a tensor`);
  const value = operand.value as ArrayLike<number>;
  const data = type === DataType.FLOAT
    ? (value instanceof Float32Array ? value : Float32Array.from(value))
    : type === DataType.INT32
    ? (value instanceof Int32Array ? value : Int32Array.from(value))
    : Uint8Array.from(value);
  return { name, dims: [...operand.shape], dataType: type, rawData: littleEndianBytes(data) };
}

/** An attribute value as rules give it. */
export type ExportAttribute = number | number[] | { float: number } | { text: string };

/** How an NNAPI operation is written as ONNX nodes. */
export interface ExportRule {
  /** Whether this form (operand types, constants) is written exactly; absent: always. */
  supports?(step: SubgraphStep, ctx: ExportContext): boolean;
  /** Writes the step's nodes. */
  write(step: SubgraphStep, ctx: ExportContext): void;
}

/** What rules write with: operands by index, names, nodes and initializers. */
export class ExportContext {
  readonly nodes: NodeProto[] = [];
  readonly initializers: TensorProto[] = [];
  /** The operator domains besides ONNX's own that nodes use (onnxruntime's "com.microsoft"). */
  readonly domains = new Set<string>();
  #names = 0;
  readonly #written = new Set<number>();

  constructor(readonly operands: readonly SubgraphOperand[]) {}

  /**
   * The ONNX value name of operand `index` ("" for an omitted one); a constant tensor becomes
   * an initializer when first named (a rule that re-lays it out never names it).
   */
  name(index: number): string {
    const operand = this.operands[index];
    if (operand?.value === null) return "";
    const name = `o${index}`;
    if (operand?.value && !this.#written.has(index)) {
      this.#written.add(index);
      this.initializers.push(initializer(name, operand));
    }
    return name;
  }

  /** Input `j` of the step by name. */
  input(step: SubgraphStep, j: number): string {
    return j < step.inputs.length ? this.name(step.inputs[j]) : "";
  }

  /** The constant value of input `j` of the step (a scalar parameter: one number). */
  scalar(step: SubgraphStep, j: number): number {
    const value = this.operands[step.inputs[j]]?.value;
    if (!value || value.length !== 1) throw new Error(`input ${j} is not a constant scalar`);
    return Number(value[0]);
  }

  /** Whether input `j` of the step is a constant (its values known when writing). */
  isConstant(step: SubgraphStep, j: number): boolean {
    return j < step.inputs.length && !!this.operands[step.inputs[j]]?.value;
  }

  /** A new value name. */
  temporary(label: string): string {
    return `t${this.#names++}_${label}`;
  }

  /** Appends a node (of ONNX's default domain unless `domain` names another). */
  node(
    opType: string,
    inputs: readonly string[],
    outputs: readonly string[],
    attributes: Record<string, ExportAttribute> = {},
    domain = "",
  ): void {
    if (domain) this.domains.add(domain);
    this.nodes.push({
      name: `n${this.nodes.length}_${opType}`,
      opType,
      ...(domain ? { domain } : {}),
      input: [...inputs],
      output: [...outputs],
      attribute: Object.entries(attributes).map(([name, v]) =>
        typeof v === "number"
          ? { name, type: A.INT, i: v }
          : Array.isArray(v)
          ? { name, type: A.INTS, ints: v }
          : "text" in v
          ? { name, type: A.STRING, s: new TextEncoder().encode(v.text) }
          : { name, type: A.FLOAT, f: v.float }
      ),
    });
  }

  /** A constant tensor as an initializer; returns its name. */
  constant(
    label: string,
    dims: readonly number[],
    values: ArrayLike<number>,
    type: "float32" | "int64" | "uint8" = "float32",
  ): string {
    const name = this.temporary(label);
    const data = type === "float32"
      ? Float32Array.from(values)
      : type === "uint8"
      ? Uint8Array.from(values)
      : BigInt64Array.from(Array.from(values, (v) => BigInt(v)));
    const dataType =
      { float32: DataType.FLOAT, uint8: DataType.UINT8, int64: DataType.INT64 }[type];
    this.initializers.push({ name, dims: [...dims], dataType, rawData: littleEndianBytes(data) });
    return name;
  }

  /**
   * `from` through NNAPI's fused activation `code` into `to` (RELU, RELU1 and RELU6 as Relu
   * and Clip; none as Identity).
   */
  activate(from: string, code: number, to: string): void {
    if (code === 0) return this.node("Identity", [from], [to]);
    if (code === 1) return this.node("Relu", [from], [to]);
    const [low, high] = code === 2 ? [-1, 1] : [0, 6];
    this.node("Clip", [from, this.constant("low", [], [low]), this.constant("high", [], [high])], [
      to,
    ]);
  }
}

/** Whether the exporter writes this step exactly (its rule, the operand types it takes). */
export function exportsStep(step: SubgraphStep, operands: readonly SubgraphOperand[]): boolean {
  const rule = EXPORT_RULES[step.type];
  if (!rule) return false;
  const ctx = new ExportContext(operands);
  const tensors = [...step.inputs, ...step.outputs]
    .map((i) => operands[i])
    .filter((o) => o && o.type.startsWith("TENSOR_"));
  // 8-bit weights are constants a rule re-lays out; no unit takes or gives an 8-bit tensor.
  const written = (o: SubgraphOperand) =>
    ELEMENT_TYPES[o.type] !== undefined || (o.type === "TENSOR_QUANT8_ASYMM" && !!o.value);
  if (!tensors.every(written)) return false;
  try {
    return rule.supports?.(step, ctx) ?? true;
  } catch {
    return false;
  }
}

/**
 * The ONNX model of `steps` over `operands` (every shape known): `inputs` become graph
 * inputs, `outputs` graph outputs, constants initializers.
 */
export function exportSteps(
  steps: readonly SubgraphStep[],
  operands: readonly SubgraphOperand[],
  io: { inputs: readonly number[]; outputs: readonly number[] },
): Uint8Array {
  const ctx = new ExportContext(operands);
  for (const step of steps) {
    const rule = EXPORT_RULES[step.type as OperationType];
    if (!rule) throw new Error(`${step.type} has no ONNX export rule`);
    rule.write(step, ctx);
  }
  const info = (i: number) => ({
    name: ctx.name(i),
    type: {
      tensorType: {
        elemType: ELEMENT_TYPES[operands[i].type],
        shape: { dim: operands[i].shape.map((d) => ({ dimValue: d })) },
      },
    },
  });
  const model = onnx.ModelProto.create({
    irVersion: 8,
    producerName: "nnserve",
    opsetImport: [
      { domain: "", version: EXPORT_OPSET },
      ...[...ctx.domains].map((domain) => ({ domain, version: 1 })),
    ],
    graph: {
      name: "nnserve",
      node: ctx.nodes,
      initializer: ctx.initializers,
      input: io.inputs.map(info),
      output: io.outputs.map(info),
    },
  });
  return onnx.ModelProto.encode(model).finish();
}
