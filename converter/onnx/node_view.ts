/** One ONNX node as the conversion rules read it: inputs, outputs and typed attributes. */
import {
  type AttributeProto,
  type GraphProto,
  type Int64,
  int64,
  list,
  type NodeProto,
  onnx,
} from "./decode.ts";
import { type HostTensor, tensorFromProto } from "./tensors.ts";

const AttributeType = onnx.AttributeProto.AttributeType;

/** One ONNX node with typed attribute access. */
export class NodeView {
  readonly name: string;
  readonly opType: string;
  readonly domain: string;
  /** Input names; "" marks an omitted optional input. */
  readonly inputs: string[];
  readonly outputs: string[];
  readonly #attributes: Map<string, AttributeProto>;

  constructor(readonly proto: NodeProto, readonly index: number) {
    this.name = proto.name ?? "";
    this.opType = proto.opType ?? "";
    this.domain = proto.domain ?? "";
    this.inputs = list(proto.input);
    this.outputs = list(proto.output);
    this.#attributes = new Map(list(proto.attribute).map((a) => [a.name ?? "", a]));
  }

  /** Whether the attribute is present. */
  has(name: string): boolean {
    return this.#attributes.has(name);
  }

  /** An INT attribute. */
  int(name: string, fallback?: number): number {
    const a = this.#attribute(name, AttributeType.INT, fallback);
    return a === undefined ? fallback! : int64(a.i as Int64);
  }

  /** An INTS attribute. */
  ints(name: string, fallback?: number[]): number[] {
    const a = this.#attribute(name, AttributeType.INTS, fallback);
    return a === undefined ? fallback! : list(a.ints).map((v) => int64(v as Int64));
  }

  /** A FLOAT attribute. */
  float(name: string, fallback?: number): number {
    const a = this.#attribute(name, AttributeType.FLOAT, fallback);
    return a === undefined ? fallback! : a.f ?? 0;
  }

  /** A FLOATS attribute. */
  floats(name: string, fallback?: number[]): number[] {
    const a = this.#attribute(name, AttributeType.FLOATS, fallback);
    return a === undefined ? fallback! : list(a.floats);
  }

  /** A STRING attribute. */
  string(name: string, fallback?: string): string {
    const a = this.#attribute(name, AttributeType.STRING, fallback);
    return a === undefined ? fallback! : new TextDecoder().decode(a.s ?? new Uint8Array());
  }

  /** A STRINGS attribute. */
  strings(name: string, fallback?: string[]): string[] {
    const a = this.#attribute(name, AttributeType.STRINGS, fallback);
    return a === undefined ? fallback! : list(a.strings).map((b) => new TextDecoder().decode(b));
  }

  /** A TENSOR attribute. */
  tensor(name: string): HostTensor {
    const a = this.#attribute(name, AttributeType.TENSOR, undefined)!;
    return tensorFromProto(a.t ?? {});
  }

  /** A GRAPH attribute (If's branches, Loop's body). */
  graph(name: string): GraphProto {
    return this.#attribute(name, AttributeType.GRAPH, undefined)!.g ?? {};
  }

  /** Every GRAPH attribute's graph. */
  subgraphs(): GraphProto[] {
    return [...this.#attributes.values()].flatMap((a) => a.g ? [a.g] : []);
  }

  /** Input `i` if given (not omitted). */
  input(i: number): string | undefined {
    const name = this.inputs[i];
    return name ? name : undefined;
  }

  #attribute(name: string, type: number, fallback: unknown): AttributeProto | undefined {
    const a = this.#attributes.get(name);
    if (a === undefined) {
      if (fallback === undefined) throw new Error(`attribute '${name}' is required`);
      return undefined;
    }
    if (a.type !== type) {
      throw new Error(
        `attribute '${name}' has type ${AttributeType[a.type ?? 0]}, expected ${
          AttributeType[type]
        }`,
      );
    }
    return a;
  }
}
