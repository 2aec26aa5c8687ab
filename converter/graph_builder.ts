/**
 * Builds an NNAPI model from a framework graph, for every front end (ONNX today, TFLite
 * later): operands with their types and shapes, constants, scalar parameters and operations,
 * then the wire model `POST /v1/models` takes. Front ends speak in tensors; this module
 * owns the NNAPI bookkeeping (operand indexes, lifetimes, constant encoding).
 */
import type {
  GraphJson,
  ModelJson,
  OperandJson,
  OperationJson,
} from "../driver/model/model_schema.ts";
import { DriverError } from "../nnapi/errors.ts";
import { type ChannelQuant, type TensorData, toBytes } from "../nnapi/tensor.ts";
import type { OperandType, OperationType } from "../nnapi/types.ts";

/**
 * NNAPI's `ANEURALNETWORKS_MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES`: larger constants are
 * CONSTANT_REFERENCE, smaller ones CONSTANT_COPY.
 */
const MAX_COPIED_BYTES = 128;

/** Quantization parameters of a quantized operand. */
export interface Quantization {
  scale: number;
  zeroPoint: number;
  /** A TENSOR_QUANT8_SYMM_PER_CHANNEL operand's scales (its scale and zero point are 0). */
  channelQuant?: ChannelQuant;
}

/** An operand of the model under construction, as front-end rules see it. */
export interface BuiltOperand {
  readonly index: number;
  readonly type: OperandType;
  /** 0 marks an extent known only at execution. */
  readonly dimensions: readonly number[];
  readonly scale: number;
  readonly zeroPoint: number;
  readonly channelQuant?: ChannelQuant;
  readonly lifetime: OperandJson["lifetime"];
  /** The data of a constant (tensors and scalar parameters), for shape inference. */
  readonly value?: TensorData;
}

/** Operations added to a model's graphs so far, shared by their builders. */
interface OperationCount {
  added: number;
  max: number;
  /** How the refusal names the limit. */
  limitName: string;
}

/**
 * An NNAPI model under construction: the main graph, or a subgraph an IF or WHILE
 * references. Every graph of one model shares the model's `referenced` list.
 */
export class GraphBuilder {
  readonly #operands: OperandJson[] = [];
  readonly #operations: OperationJson[] = [];
  readonly #inputs: number[] = [];
  readonly #outputs: number[] = [];
  readonly #scalars = new Map<string, BuiltOperand>();

  readonly #referenced: GraphJson[];
  /** Operations added to every graph of the model, and how many may be. */
  readonly #count: OperationCount;

  /**
   * A builder of a model's main graph; past `maxOperations` operations over all its graphs
   * the building stops with a RESOURCE_EXHAUSTED_PERSISTENT naming `limitName`.
   */
  constructor(
    options: { maxOperations?: number; limitName?: string } = {},
    referenced: GraphJson[] = [],
    count?: OperationCount,
  ) {
    this.#referenced = referenced;
    this.#count = count ?? {
      added: 0,
      max: options.maxOperations ?? Infinity,
      limitName: options.limitName ?? "maxOperations",
    };
  }

  /** A builder for a subgraph of the same model (an IF branch, a WHILE condition or body). */
  subgraphBuilder(): GraphBuilder {
    return new GraphBuilder({}, this.#referenced, this.#count);
  }

  /**
   * Adds this builder's graph to the model's referenced subgraphs; returns its index. Call
   * once, when the subgraph is complete.
   */
  reference(): number {
    this.#referenced.push(this.#graph());
    return this.#referenced.length - 1;
  }

  /** How many subgraphs the model references so far: a mark to roll back to. */
  get referencedCount(): number {
    return this.#referenced.length;
  }

  /** Forgets the subgraphs referenced since `mark` (a conversion attempt to be redone). */
  dropReferenced(mark: number): void {
    this.#referenced.length = mark;
  }

  /** A SUBGRAPH operand standing for referenced subgraph `index`. */
  subgraph(index: number): BuiltOperand {
    const operand = this.#add("SUBGRAPH", [], "SUBGRAPH");
    this.#operands[operand.index].subgraph = index;
    return operand;
  }

  /** A model input. */
  input(type: OperandType, dimensions: readonly number[], quant?: Quantization): BuiltOperand {
    const operand = this.#add(type, dimensions, "MODEL_INPUT", quant);
    this.#inputs.push(operand.index);
    return operand;
  }

  /**
   * Operand `index` of this graph as a non-constant operand (what an operation reading only
   * its type and shape, SHAPE, needs).
   */
  operandAt(index: number): BuiltOperand {
    const operand = this.#operands[index];
    if (!operand) throw new Error(`operand ${index} is not in this graph`);
    const { type, dimensions, scale, zeroPoint, lifetime } = operand;
    return { index, type, dimensions: [...dimensions], scale, zeroPoint, lifetime };
  }

  /** The operands so far. */
  get operandCount(): number {
    return this.#operands.length;
  }

  /** A value computed by one operation and read by others (or made an output later). */
  temporary(type: OperandType, dimensions: readonly number[], quant?: Quantization): BuiltOperand {
    return this.#add(type, dimensions, "TEMPORARY_VARIABLE", quant);
  }

  /** A constant tensor; `data` is copied into the model. */
  constant(
    type: OperandType,
    dimensions: readonly number[],
    data: TensorData,
    quant?: Quantization,
  ): BuiltOperand {
    const bytes = toBytes(data);
    const lifetime = bytes.byteLength > MAX_COPIED_BYTES ? "CONSTANT_REFERENCE" : "CONSTANT_COPY";
    return this.#add(type, dimensions, lifetime, quant, data);
  }

  /** An INT32 scalar parameter (shared between operations that pass the same value). */
  int32(value: number): BuiltOperand {
    return this.#scalar("INT32", value, new Int32Array([value]));
  }

  /** A FLOAT32 scalar parameter. */
  float32(value: number): BuiltOperand {
    return this.#scalar("FLOAT32", value, new Float32Array([value]));
  }

  /** A BOOL scalar parameter. */
  bool(value: boolean): BuiltOperand {
    return this.#scalar("BOOL", value ? 1 : 0, new Uint8Array([value ? 1 : 0]));
  }

  /** An omitted optional input. */
  noValue(type: OperandType): BuiltOperand {
    return this.#add(type, [], "NO_VALUE");
  }

  /** Appends an operation; operations must be added in an order that runs. */
  operation(
    type: OperationType,
    inputs: readonly BuiltOperand[],
    outputs: readonly BuiltOperand[],
  ): void {
    if (++this.#count.added > this.#count.max) {
      throw new DriverError(
        "RESOURCE_EXHAUSTED_PERSISTENT",
        `the converted model passes ${this.#count.max} operations (${this.#count.limitName}); ` +
          "the conversion was stopped there",
        { limit: "model_size" },
      );
    }
    this.#operations.push({
      type,
      inputs: inputs.map((o) => o.index),
      outputs: outputs.map((o) => o.index),
    });
  }

  /**
   * Makes an operand a model output. A temporary becomes MODEL_OUTPUT; an input, a
   * constant or an output already cannot be an NNAPI output, so it is copied through a
   * no-op first.
   */
  output(operand: BuiltOperand): BuiltOperand {
    const json = this.#operands[operand.index];
    if (json.lifetime === "TEMPORARY_VARIABLE") {
      json.lifetime = "MODEL_OUTPUT";
      this.#outputs.push(operand.index);
      return { ...operand, lifetime: "MODEL_OUTPUT" };
    }
    const copy = this.#add(operand.type, operand.dimensions, "MODEL_OUTPUT", operand);
    this.#outputs.push(copy.index);
    if (operand.type === "TENSOR_BOOL8") {
      // RESHAPE takes no booleans; AND with true copies them.
      const yes = this.constant("TENSOR_BOOL8", [1], new Uint8Array([1]));
      this.operation("LOGICAL_AND", [operand, yes], [copy]);
      return copy;
    }
    if (operand.type === "TENSOR_INT32") {
      // Nor integers; adding 0 copies them (NNAPI 1.3's ADD takes TENSOR_INT32).
      const zero = this.constant("TENSOR_INT32", [1], new Int32Array([0]));
      this.operation("ADD", [operand, zero, this.int32(0)], [copy]);
      return copy;
    }
    if (operand.dimensions.filter((d) => d === 0).length > 1) {
      if (operand.type !== "TENSOR_FLOAT32" && operand.type !== "TENSOR_FLOAT16") {
        throw new Error("an output that is a graph input or constant has several unknown extents");
      }
      // RESHAPE would need its target at execution; multiplying by 1 copies any shape.
      const one = operand.type === "TENSOR_FLOAT32" ? Float32Array.of(1) : Float16Array.of(1);
      this.operation("MUL", [operand, this.constant(operand.type, [1], one), this.int32(0)], [
        copy,
      ]);
      return copy;
    }
    const shape = this.constant(
      "TENSOR_INT32",
      [operand.dimensions.length],
      new Int32Array(operand.dimensions.map((d) => d === 0 ? -1 : d)),
    );
    this.operation("RESHAPE", [operand, shape], [copy]);
    return copy;
  }

  /** The wire model: this graph as the main one, with every referenced subgraph. */
  build(): ModelJson {
    return {
      ...this.#graph(),
      relaxComputationFloat32toFloat16: false,
      ...(this.#referenced.length > 0 ? { referenced: this.#referenced } : {}),
    };
  }

  #graph(): GraphJson {
    return {
      operands: this.#operands,
      operations: this.#operations,
      inputIndexes: this.#inputs,
      outputIndexes: this.#outputs,
    };
  }

  #scalar(type: "INT32" | "FLOAT32" | "BOOL", value: number, data: TensorData): BuiltOperand {
    const key = `${type}:${Object.is(value, -0) ? "-0" : value}`;
    let operand = this.#scalars.get(key);
    if (!operand) {
      operand = this.#add(type, [], "CONSTANT_COPY", undefined, data);
      this.#scalars.set(key, operand);
    }
    return operand;
  }

  #add(
    type: OperandType,
    dimensions: readonly number[],
    lifetime: OperandJson["lifetime"],
    quant?: Quantization,
    value?: TensorData,
  ): BuiltOperand {
    const index = this.#operands.length;
    const channelQuant = quant?.channelQuant;
    const perChannel = channelQuant ? { channelQuant } : {};
    const operand: OperandJson = {
      type,
      dimensions: [...dimensions],
      scale: quant?.scale ?? 0,
      zeroPoint: quant?.zeroPoint ?? 0,
      lifetime,
      ...(value === undefined ? {} : { value: { base64: toBytes(value).toBase64() } }),
      ...perChannel,
    };
    this.#operands.push(operand);
    return {
      index,
      type,
      dimensions: [...dimensions],
      scale: operand.scale,
      zeroPoint: operand.zeroPoint,
      ...perChannel,
      lifetime,
      ...(value === undefined ? {} : { value }),
    };
  }
}
