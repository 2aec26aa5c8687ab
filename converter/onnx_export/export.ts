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

/** Raw data made from a constant, and the number that names it in an export's key. */
interface MadeFromConstant {
  token: number;
  rawData: Uint8Array;
}

/** Raw data made from constants, per constant and per way of making it (this thread's). */
const madeFromConstants = new WeakMap<object, Map<string, MadeFromConstant>>();
let lastToken = 0;

/**
 * The raw data `make` makes from the constant `source` in the way `variant` names; with
 * `keep`, made once per thread and kept while the constant lives: a plan whose extents come
 * at execution exports its units again for each new signature, and most of a unit's bytes
 * are weights made from its constants. Without, made now and not kept (no token).
 */
function fromConstant(
  source: object,
  variant: string,
  make: () => ArrayBufferView,
  keep: boolean,
): Partial<MadeFromConstant> & { rawData: Uint8Array } {
  if (!keep) return { rawData: littleEndianBytes(make()) };
  let made = madeFromConstants.get(source);
  if (!made) madeFromConstants.set(source, made = new Map());
  let entry = made.get(variant);
  if (!entry) made.set(variant, entry = { token: ++lastToken, rawData: littleEndianBytes(make()) });
  return entry;
}

/** A constant operand's values as ONNX's raw data of its element type. */
function constantData(operand: SubgraphOperand, type: number): ArrayBufferView {
  const value = operand.value as ArrayLike<number>;
  return type === DataType.FLOAT
    ? (value instanceof Float32Array ? value : Float32Array.from(value))
    : type === DataType.INT32
    ? (value instanceof Int32Array ? value : Int32Array.from(value))
    : Uint8Array.from(value);
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
  /** Initializers made from constants ({@link fromConstant}), by the token naming their data. */
  readonly tokens = new Map<TensorProto, number>();
  /** The operator domains besides ONNX's own that nodes use (onnxruntime's "com.microsoft"). */
  readonly domains = new Set<string>();
  #names = 0;
  readonly #written = new Set<number>();
  #open?: boolean;

  constructor(readonly operands: readonly SubgraphOperand[]) {}

  /** Whether some extents come at execution: exported again per signature, keyed. */
  get open(): boolean {
    return this.#open ??= this.operands.some((o) =>
      o?.declaredShape?.some((d) => !(d > 0)) ?? false
    );
  }

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
      const type = ELEMENT_TYPES[operand.type];
      if (type === undefined) {
        throw new Error(`a constant ${operand.type} is not written as a tensor`);
      }
      const { token, rawData } = fromConstant(
        operand.value,
        `as ${type}`,
        () => constantData(operand, type),
        this.open,
      );
      this.#initializer({ name, dims: [...operand.shape], dataType: type, rawData }, token);
    }
    return name;
  }

  #initializer(tensor: TensorProto, token?: number): void {
    this.initializers.push(tensor);
    if (token !== undefined) this.tokens.set(tensor, token);
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

  /**
   * An initializer of `type` that `make` makes from the constant `source` (a filter re-laid
   * out), made once per thread for each `variant`; returns its name.
   */
  madeFrom(
    label: string,
    dims: readonly number[],
    source: object,
    variant: string,
    make: () => ArrayBufferView,
    type: "float32" | "uint8" = "float32",
  ): string {
    const name = this.temporary(label);
    const dataType = type === "uint8" ? DataType.UINT8 : DataType.FLOAT;
    const { token, rawData } = fromConstant(source, `${variant} as ${type}`, make, this.open);
    this.#initializer({ name, dims: [...dims], dataType, rawData }, token);
    return name;
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

/** An exported model: its bytes (encoded when first read), and for an open one a key. */
export interface ExportedModel {
  readonly bytes: Uint8Array;
  /**
   * Where some extents come at execution: the model with its weights named by the constants
   * they were made from ({@link fromConstant}) rather than written out, cheap to make, and
   * equal for two exports in this thread exactly when their bytes are.
   */
  readonly key?: string;
}

/**
 * The ONNX model of `steps` over `operands` (every shape known): `inputs` become graph
 * inputs, `outputs` graph outputs, constants initializers. Their extents that the plan leaves
 * to execution (`declaredShape`) are written symbolic; everything the rules derive from
 * shapes (padding, slice windows) is written for `shape`.
 */
export function exportSteps(
  steps: readonly SubgraphStep[],
  operands: readonly SubgraphOperand[],
  io: { inputs: readonly number[]; outputs: readonly number[] },
): ExportedModel {
  const ctx = new ExportContext(operands);
  for (const step of steps) {
    const rule = EXPORT_RULES[step.type as OperationType];
    if (!rule) throw new Error(`${step.type} has no ONNX export rule`);
    rule.write(step, ctx);
  }
  // An extent the plan leaves to execution is symbolic (one name per operand and axis, so
  // onnxruntime assumes no two equal): the model is then the same for every signature whose
  // nodes and initializers are, and one session runs them all.
  const info = (i: number) => {
    const { shape, declaredShape } = operands[i];
    const open = (k: number) => declaredShape !== undefined && !(declaredShape[k] > 0);
    return {
      name: ctx.name(i),
      type: {
        tensorType: {
          elemType: ELEMENT_TYPES[operands[i].type],
          shape: {
            dim: shape.map((d, k) => open(k) ? { dimParam: `o${i}_${k}` } : { dimValue: d }),
          },
        },
      },
    };
  };
  const model = (initializer: TensorProto[]) =>
    onnx.ModelProto.create({
      irVersion: 8,
      producerName: "nnserve",
      opsetImport: [
        { domain: "", version: EXPORT_OPSET },
        ...[...ctx.domains].map((domain) => ({ domain, version: 1 })),
      ],
      graph: {
        name: "nnserve",
        node: ctx.nodes,
        initializer,
        input: io.inputs.map(info),
        output: io.outputs.map(info),
      },
    });
  // Weights made from constants are named by their token, not written out.
  const key = () => {
    const named = ctx.initializers.map((t) => {
      const token = ctx.tokens.get(t);
      return token === undefined
        ? t
        : { name: t.name, dims: t.dims, dataType: t.dataType, docString: `#${token}` };
    });
    return onnx.ModelProto.encode(model(named)).finish().toBase64();
  };
  let bytes: Uint8Array | undefined;
  return {
    ...(ctx.open ? { key: key() } : {}),
    get bytes() {
      return bytes ??= onnx.ModelProto.encode(model(ctx.initializers)).finish();
    },
  };
}
