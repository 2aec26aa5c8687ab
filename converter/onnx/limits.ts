/**
 * What one ONNX conversion may take, checked before the work it bounds is done: the graph's
 * size (nodes and initializers, counted before any node is converted) and the host memory of
 * the tensors the conversion computes (each tensor's elements, checked before it is
 * allocated, and the bytes of all folded tensors together). A 187-byte file can otherwise ask
 * for a ConstantOfShape of 2^31 elements, or a Range of 2^30.
 */
import { DriverError } from "../../nnapi/errors.ts";
import { ConversionLimitError } from "../errors.ts";
import { type GraphProto, list } from "./decode.ts";

/** The limits of one conversion; the service passes its own (`server_config.ts`). */
export interface OnnxImportLimits {
  /**
   * The model limit NNSERVE_MAX_OPERATIONS: the graph's nodes (every subgraph's included)
   * count against it before conversion; the conversion stops past twice as many operations
   * (an RNN unrolled over a long sequence; the passes remove some afterwards).
   */
  maxOperations: number;
  /** The model limit NNSERVE_MAX_OPERANDS: the graph's initializers count against it. */
  maxOperands: number;
  /** Elements of any one tensor the conversion holds (NNSERVE_MAX_TENSOR_ELEMENTS). */
  maxTensorElements: number;
  /** Bytes of every tensor folded at conversion, together (NNSERVE_MAX_IMPORT_FOLDED_BYTES). */
  maxFoldedBytes: number;
}

/** Default of {@link OnnxImportLimits.maxFoldedBytes}: 1 GiB. */
export const DEFAULT_MAX_FOLDED_BYTES = 1024 ** 3;

/**
 * Limits of a conversion that is given none (tools, tests): tensors as large as the model
 * limit's default (2^28 elements), the default fold budget, any number of nodes.
 */
export const DEFAULT_IMPORT_LIMITS: OnnxImportLimits = {
  maxOperations: Infinity,
  maxOperands: Infinity,
  maxTensorElements: 2 ** 28,
  maxFoldedBytes: DEFAULT_MAX_FOLDED_BYTES,
};

/** Counts the graph's nodes and initializers (subgraphs included) against the limits: 413. */
export function checkGraphSize(graph: GraphProto, limits: OnnxImportLimits): void {
  let nodes = 0;
  let initializers = 0;
  // A stack, not recursion: nesting depth is the file's to choose.
  const pending = [graph];
  for (let g = pending.pop(); g !== undefined; g = pending.pop()) {
    initializers += list(g.initializer).length + list(g.sparseInitializer).length;
    for (const node of list(g.node)) {
      nodes++;
      for (const attribute of list(node.attribute)) {
        if (attribute.g) pending.push(attribute.g);
        pending.push(...list(attribute.graphs));
      }
    }
  }
  const refuse = (what: string, limit: string) => {
    throw new DriverError(
      "RESOURCE_EXHAUSTED_PERSISTENT",
      `ONNX model: the graph has ${what}, over this service's limit (${limit}); nothing was ` +
        "converted",
      { limit: "model_size" },
    );
  };
  if (nodes > limits.maxOperations) {
    refuse(`${nodes} nodes`, `NNSERVE_MAX_OPERATIONS=${limits.maxOperations}`);
  }
  if (initializers > limits.maxOperands) {
    refuse(`${initializers} initializers`, `NNSERVE_MAX_OPERANDS=${limits.maxOperands}`);
  }
}

/**
 * The host memory one conversion has used so far: every tensor it computes is checked here
 * before it is allocated.
 */
export class HostTensorBudget {
  readonly #limits: OnnxImportLimits;
  #foldedBytes = 0;

  constructor(limits: OnnxImportLimits) {
    this.#limits = limits;
  }

  /**
   * Checks a tensor of `dims` (elements of `bytesPerElement` bytes) and, when `folded`,
   * counts its bytes against the conversion's budget; throws a {@link ConversionLimitError}
   * past either limit. Returns the element count.
   */
  reserve(dims: readonly number[], bytesPerElement: number, folded: boolean): number {
    for (const d of dims) {
      if (!Number.isSafeInteger(d) || d < 0) {
        throw new Error(`a tensor of shape [${dims}]: extents must be integers >= 0`);
      }
    }
    let elements = 1;
    for (const d of dims) elements *= d;
    const { maxTensorElements, maxFoldedBytes } = this.#limits;
    if (elements > maxTensorElements) {
      throw new ConversionLimitError(
        `a tensor of ${elements} elements (shape [${dims}]) is over this service's limit of ` +
          `${maxTensorElements} elements per tensor (NNSERVE_MAX_TENSOR_ELEMENTS); nothing was ` +
          "allocated",
      );
    }
    if (folded) {
      const bytes = elements * bytesPerElement;
      if (this.#foldedBytes + bytes > maxFoldedBytes) {
        throw new ConversionLimitError(
          `a tensor of ${bytes} bytes (shape [${dims}]) would take the tensors computed at ` +
            `conversion to ${this.#foldedBytes + bytes} bytes, over this service's budget of ` +
            `${maxFoldedBytes} bytes for one import (NNSERVE_MAX_IMPORT_FOLDED_BYTES)`,
        );
      }
      this.#foldedBytes += bytes;
    }
    return elements;
  }
}

/**
 * Why a conversion stopped before its end: whoever asked for it (`stop` set) no longer wants
 * it (its client left, its time ran out) and has its own answer.
 */
export class ConversionStopped extends Error {
  override name = "ConversionStopped";
}

/** The conversion running on this thread (conversions are synchronous): its budget and stop. */
interface ConversionScope {
  budget: HostTensorBudget;
  /** Set to 1 (by another thread) when the conversion should stop. */
  stop?: Int32Array;
}

let current: ConversionScope = { budget: new HostTensorBudget(DEFAULT_IMPORT_LIMITS) };

/** The budget of the conversion running now. */
export function hostTensorBudget(): HostTensorBudget {
  return current.budget;
}

/**
 * Throws {@link ConversionStopped} once the conversion's stop flag is set. The converter
 * calls it between nodes and within folds whose work is not bounded by their tensors' sizes
 * (a MatMul's rows): a worker busy in JavaScript is not stopped by terminating it in Deno
 * 2.9, so a conversion must stop itself.
 */
export function checkNotStopped(): void {
  const { stop } = current;
  if (stop && Atomics.load(stop, 0) !== 0) {
    throw new ConversionStopped("the conversion was stopped by its caller");
  }
}

/**
 * Runs `convert` with a fresh budget under `limits`, stopping at the first check after
 * `stop[0]` is set; the earlier scope comes back after.
 */
export function withConversionScope<T>(
  limits: OnnxImportLimits,
  stop: Int32Array | undefined,
  convert: () => T,
): T {
  const earlier = current;
  current = { budget: new HostTensorBudget(limits), stop };
  try {
    return convert();
  } finally {
    current = earlier;
  }
}
