/**
 * `Model`: builds an NNAPI model operand by operand and operation by operation, as
 * `ANeuralNetworksModel_*` does, then registers it with the service (`finish`). The builder
 * owns the wire model until then; afterwards it is immutable and identified by its id.
 * Models that IF and WHILE run are built the same way and attached to a SUBGRAPH operand
 * (`setOperandValueFromModel`); they travel in the main model's `referenced` list.
 */
import type { Transport } from "./http.ts";
import { checkMemoryRegion, type LocationJson, type Memory } from "./memory.ts";
import { elementBytes, encodeBase64, type TensorValues, toTensorArray } from "./tensor.ts";
import type {
  ChannelQuant,
  DeviceSupport,
  Lifetime,
  ModelInfo,
  ModelJson,
  ModelNaming,
  ModelSignature,
  OperandJson,
  OperandType,
  OperationJson,
  OperationType,
  ValueJson,
} from "./types.ts";

/**
 * NNAPI's `ANEURALNETWORKS_MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES`: larger constants are
 * CONSTANT_REFERENCE, smaller ones CONSTANT_COPY.
 */
export const MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES = 128;

/** What `addOperand` takes (NNAPI `ANeuralNetworksOperandType`). */
export interface OperandOptions {
  /** Element type (tensors) or scalar type. */
  type: OperandType;
  /** Omit (or []) for scalars; 0 marks an extent known only at execution. */
  dimensions?: readonly number[];
  /** Quantization scale of quantized types (0 by default). */
  scale?: number;
  /** Quantization zero point of asymmetric quantized types (0 by default). */
  zeroPoint?: number;
  /** Only for TENSOR_QUANT8_SYMM_PER_CHANNEL. */
  channelQuant?: ChannelQuant;
}

interface Constant {
  lifetime: "CONSTANT_COPY" | "CONSTANT_REFERENCE" | "NO_VALUE" | "SUBGRAPH";
  value?: ValueJson;
  /** A value referenced in a memory pool (`setOperandValueFromMemory`). */
  region?: { memory: Memory; offset: number; length: number };
  /** The model a SUBGRAPH operand stands for (`setOperandValueFromModel`). */
  model?: Model;
}

/** An operand on the wire: a memory-pool `location`, or the `subgraph` a SUBGRAPH names. */
export type OperandWithPoolsJson = OperandJson & { location?: LocationJson; subgraph?: number };

/** One graph on the wire: the main graph's fields, or a referenced subgraph. */
export interface GraphWithPoolsJson {
  /** Every operand of the graph; its operations refer to them by index. */
  operands: OperandWithPoolsJson[];
  /** In an order where every operand is written before it is read. */
  operations: OperationJson[];
  /** Operands given values by the caller, or by the IF / WHILE operation running the graph. */
  inputIndexes: number[];
  /** Operands returned to the caller, or to the IF / WHILE operation running the graph. */
  outputIndexes: number[];
}

/**
 * The wire model with docs/api.md's memory pools (`pools`, and `location` on operands) and the
 * subgraphs its IF and WHILE operations reference (`referenced`, only when there are any).
 */
export type ModelWithPoolsJson = Omit<ModelJson, "operands"> & {
  operands: OperandWithPoolsJson[];
  referenced?: GraphWithPoolsJson[];
  pools?: string[];
};

/** A model under construction, then registered. */
export class Model {
  readonly #transport: Transport;
  readonly #operands: (OperandOptions & { constant?: Constant })[] = [];
  readonly #operations: OperationJson[] = [];
  #inputs: number[] | undefined;
  #outputs: number[] = [];
  #relaxed = false;
  #info: ModelInfo | undefined;
  #registering: Promise<ModelInfo> | undefined;

  /** Use `NnClient.model()`. */
  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** The service's id, once `finish` has registered the model. */
  get id(): string | undefined {
    return this.#info?.id;
  }

  /** The service's metadata, once registered. */
  get info(): ModelInfo | undefined {
    return this.#info;
  }

  /** Whether `finish` was called; the model cannot change any more. */
  get finished(): boolean {
    return this.#registering !== undefined;
  }

  #mutable(what: string): void {
    if (this.finished) throw new Error(`${what}: the model is finished and cannot change`);
  }

  #operand(index: number, what: string): OperandOptions & { constant?: Constant } {
    const operand = this.#operands[index];
    if (!Number.isInteger(index) || operand === undefined) {
      throw new RangeError(`${what}: no operand ${index} (the model has ${this.#operands.length})`);
    }
    return operand;
  }

  /** Adds an operand; returns its index (NNAPI numbers operands in the order they are added). */
  addOperand(options: OperandOptions): number {
    this.#mutable("addOperand");
    this.#operands.push({
      ...options,
      dimensions: [...(options.dimensions ?? [])],
      channelQuant: options.channelQuant && {
        channelDim: options.channelQuant.channelDim,
        scales: [...options.channelQuant.scales],
      },
    });
    return this.#operands.length - 1;
  }

  /**
   * Makes an operand a constant. As in NNAPI, a value of at most 128 bytes is copied into the
   * model (CONSTANT_COPY) and a larger one referenced (CONSTANT_REFERENCE); `null` marks an
   * omitted optional operand (NO_VALUE). Typed arrays are converted to the operand's type and
   * sent as little-endian bytes; number arrays are sent as they are. A number is a scalar.
   */
  setOperandValue(index: number, values: TensorValues | number | null): void {
    this.#mutable("setOperandValue");
    const operand = this.#operand(index, "setOperandValue");
    if (this.#inputs?.includes(index) || this.#outputs.includes(index)) {
      throw new Error(`setOperandValue: operand ${index} is a model input or output`);
    }
    if (operand.type === "SUBGRAPH") {
      throw new Error(
        `setOperandValue: operand ${index} is a SUBGRAPH; use setOperandValueFromModel`,
      );
    }
    if (values === null) {
      operand.constant = { lifetime: "NO_VALUE" };
      return;
    }
    const list = typeof values === "number" ? [values] : values;
    const byteLength = list.length * elementBytes(operand.type);
    const lifetime = byteLength <= MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES
      ? "CONSTANT_COPY"
      : "CONSTANT_REFERENCE";
    const value: ValueJson = Array.isArray(list)
      ? [...list]
      : { base64: encodeBase64(toTensorArray(operand.type, list)) };
    operand.constant = { lifetime, value };
  }

  /**
   * Makes an operand a CONSTANT_REFERENCE to the `length` bytes of `memory` from `offset`:
   * little-endian data of the operand's type (NNAPI
   * `ANeuralNetworksModel_setOperandValueFromMemory`). The service copies the bytes when the
   * model is registered (`finish`); writing or deleting the memory afterwards does not
   * change the model.
   */
  setOperandValueFromMemory(index: number, memory: Memory, offset: number, length: number): void {
    const what = "setOperandValueFromMemory";
    this.#mutable(what);
    const operand = this.#operand(index, what);
    if (this.#inputs?.includes(index) || this.#outputs.includes(index)) {
      throw new Error(`${what}: operand ${index} is a model input or output`);
    }
    checkMemoryRegion(`${what}(${index})`, memory.size, offset, length);
    const dimensions = operand.dimensions ?? [];
    if (!dimensions.includes(0)) {
      const count = dimensions.reduce((n, d) => n * d, 1);
      const bytes = count * elementBytes(operand.type);
      if (length !== bytes) {
        throw new RangeError(
          `${what}: operand ${index} has ${bytes} bytes (${operand.type} [${dimensions}]), not ${length}`,
        );
      }
    }
    operand.constant = { lifetime: "CONSTANT_REFERENCE", region: { memory, offset, length } };
  }

  /**
   * Makes a SUBGRAPH operand stand for another model (NNAPI
   * `ANeuralNetworksModel_setOperandValueFromModel`): an IF branch, a WHILE condition or
   * body. That model needs its inputs and outputs identified by the time this one is sent;
   * it is sent inside this one (`referenced`), never registered on its own.
   */
  setOperandValueFromModel(index: number, model: Model): void {
    const what = "setOperandValueFromModel";
    this.#mutable(what);
    const operand = this.#operand(index, what);
    if (operand.type !== "SUBGRAPH") {
      throw new Error(`${what}: operand ${index} has type ${operand.type}, not SUBGRAPH`);
    }
    if (model === this) throw new Error(`${what}: a model cannot reference itself`);
    operand.constant = { lifetime: "SUBGRAPH", model };
  }

  /** Adds an operation reading and writing operands by index; returns its index. */
  addOperation(type: OperationType, inputs: readonly number[], outputs: readonly number[]): number {
    this.#mutable("addOperation");
    for (const i of [...inputs, ...outputs]) this.#operand(i, `addOperation(${type})`);
    this.#operations.push({ type, inputs: [...inputs], outputs: [...outputs] });
    return this.#operations.length - 1;
  }

  /**
   * Declares the model's inputs and outputs, in the order executions give them; every other
   * operand without a value is a temporary.
   */
  identifyInputsAndOutputs(inputs: readonly number[], outputs: readonly number[]): void {
    this.#mutable("identifyInputsAndOutputs");
    for (const i of [...inputs, ...outputs]) {
      if (this.#operand(i, "identifyInputsAndOutputs").constant) {
        throw new Error(`identifyInputsAndOutputs: operand ${i} already has a value`);
      }
    }
    this.#inputs = [...inputs];
    this.#outputs = [...outputs];
  }

  /** Allows float32 arithmetic to run with float16 range and precision. */
  relaxComputationFloat32toFloat16(allow: boolean): void {
    this.#mutable("relaxComputationFloat32toFloat16");
    this.#relaxed = allow;
  }

  #lifetime(index: number): Lifetime {
    const constant = this.#operands[index].constant;
    if (constant) return constant.lifetime;
    if (this.#inputs?.includes(index)) return "MODEL_INPUT";
    if (this.#outputs.includes(index)) return "MODEL_OUTPUT";
    return "TEMPORARY_VARIABLE";
  }

  /**
   * The wire model of `POST /v1/models`. Values set from memories are `location`s into
   * `pools`, which lists each memory once, in the order operands first use them; models set
   * on SUBGRAPH operands, and the models they reference in turn, are `referenced`, each once,
   * in the order they are first met.
   */
  toJSON(): ModelWithPoolsJson {
    const pools: string[] = [];
    const referenced: Model[] = [];
    const context = {
      location(region: NonNullable<Constant["region"]>): LocationJson {
        let poolIndex = pools.indexOf(region.memory.id);
        if (poolIndex < 0) poolIndex = pools.push(region.memory.id) - 1;
        return { poolIndex, offset: region.offset, length: region.length };
      },
      subgraph(model: Model): number {
        const known = referenced.indexOf(model);
        return known >= 0 ? known : referenced.push(model) - 1;
      },
    };
    const main = this.#graphJSON(context);
    // A referenced model may reference more: the list grows while it is walked.
    const graphs: GraphWithPoolsJson[] = [];
    for (let k = 0; k < referenced.length; k++) {
      const model = referenced[k];
      if (model.#inputs === undefined) {
        throw new Error(
          `toJSON: referenced model ${k} has no inputs and outputs; call its identifyInputsAndOutputs`,
        );
      }
      graphs.push(model.#graphJSON(context));
    }
    return {
      ...main,
      relaxComputationFloat32toFloat16: this.#relaxed,
      ...(graphs.length > 0 ? { referenced: graphs } : {}),
      ...(pools.length > 0 ? { pools } : {}),
    };
  }

  /** This model's own graph on the wire; pools and referenced models go to `context`. */
  #graphJSON(context: {
    location(region: NonNullable<Constant["region"]>): LocationJson;
    subgraph(model: Model): number;
  }): GraphWithPoolsJson {
    const operands = this.#operands.map((operand, i) => ({
      type: operand.type,
      dimensions: [...(operand.dimensions ?? [])],
      scale: operand.scale ?? 0,
      zeroPoint: operand.zeroPoint ?? 0,
      lifetime: this.#lifetime(i),
      ...(operand.constant?.value ? { value: operand.constant.value } : {}),
      ...(operand.constant?.region ? { location: context.location(operand.constant.region) } : {}),
      ...(operand.constant?.model ? { subgraph: context.subgraph(operand.constant.model) } : {}),
      ...(operand.channelQuant ? { channelQuant: operand.channelQuant } : {}),
    }));
    return {
      operands,
      operations: this.#operations.map((op) => ({ ...op })),
      inputIndexes: [...(this.#inputs ?? [])],
      outputIndexes: [...this.#outputs],
    };
  }

  /** The inputs and outputs as executions see them. */
  signature(): ModelSignature {
    const describe = (operand: number) => ({
      operand,
      type: this.#operands[operand].type,
      dimensions: [...(this.#operands[operand].dimensions ?? [])],
    });
    return {
      inputs: (this.#inputs ?? []).map(describe),
      outputs: this.#outputs.map(describe),
    };
  }

  /**
   * Registers the model with the service (it validates it), with a name and version when
   * given; returns its id. The model cannot change afterwards; calling again returns the
   * same id.
   */
  async finish(naming: ModelNaming = {}): Promise<string> {
    if (this.#inputs === undefined) {
      throw new Error("finish: call identifyInputsAndOutputs first");
    }
    const query = namingQuery(naming);
    const path = `/v1/models${query.size > 0 ? `?${query}` : ""}`;
    this.#registering ??= this.#transport.json<ModelInfo>("POST", path, this.toJSON());
    try {
      this.#info = await this.#registering;
    } catch (error) {
      // A rejected model can be corrected and finished again, as NNAPI's is not registered.
      this.#registering = undefined;
      throw error;
    }
    return this.#info.id;
  }

  /** Per device, which operations of the model it supports (model order); finishes first. */
  async supportedOperations(devices?: readonly string[]): Promise<DeviceSupport[]> {
    const id = await this.finish();
    const body = await this.#transport.json<{ devices: DeviceSupport[] }>(
      "POST",
      `/v1/models/${encodeURIComponent(id)}/supported-operations`,
      devices ? { devices: [...devices] } : {},
    );
    return body.devices;
  }

  /** Deletes the registered model (its compilations keep working). */
  async delete(): Promise<void> {
    if (this.#info === undefined) throw new Error("delete: the model was never registered");
    await this.#transport.json("DELETE", `/v1/models/${encodeURIComponent(this.#info.id)}`);
  }
}

/** `name` and `version` as query parameters. */
export function namingQuery(naming: ModelNaming): URLSearchParams {
  const query = new URLSearchParams();
  if (naming.name !== undefined) query.set("name", naming.name);
  if (naming.version !== undefined) query.set("version", naming.version);
  return query;
}
