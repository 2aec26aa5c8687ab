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
  #names = 0;

  constructor(readonly operands: readonly SubgraphOperand[]) {}

  /** The ONNX value name of operand `index` ("" for an omitted one). */
  name(index: number): string {
    return this.operands[index]?.value === null ? "" : `o${index}`;
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

  /** Appends a node. */
  node(
    opType: string,
    inputs: readonly string[],
    outputs: readonly string[],
    attributes: Record<string, ExportAttribute> = {},
  ): void {
    this.nodes.push({
      name: `n${this.nodes.length}_${opType}`,
      opType,
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
    type: "float32" | "int64" = "float32",
  ): string {
    const name = this.temporary(label);
    this.initializers.push(
      type === "float32"
        ? { name, dims: [...dims], dataType: DataType.FLOAT, floatData: Array.from(values) }
        : { name, dims: [...dims], dataType: DataType.INT64, int64Data: Array.from(values) },
    );
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
  if (!tensors.every((o) => ELEMENT_TYPES[o.type] !== undefined)) return false;
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
  const written = new Set<number>();
  const constant = (i: number) => {
    if (written.has(i)) return;
    written.add(i);
    const o = operands[i];
    const type = ELEMENT_TYPES[o.type];
    if (type === undefined) return; // scalars are read by the rules
    const values = Array.from(o.value as ArrayLike<number>);
    ctx.initializers.push(
      type === DataType.FLOAT
        ? { name: ctx.name(i), dims: [...o.shape], dataType: type, floatData: values }
        : { name: ctx.name(i), dims: [...o.shape], dataType: type, int32Data: values },
    );
  };
  for (const step of steps) {
    const rule = EXPORT_RULES[step.type as OperationType];
    if (!rule) throw new Error(`${step.type} has no ONNX export rule`);
    for (const i of step.inputs) if (operands[i]?.value) constant(i);
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
    opsetImport: [{ domain: "", version: EXPORT_OPSET }],
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
