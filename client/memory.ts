/**
 * `Memory`: a shared memory pool of the service (`ANeuralNetworksMemory`, docs/api.md
 * "Memories"): bytes uploaded once and referenced by `{memory, offset, length}` as model
 * constants (`Model.setOperandValueFromMemory`) and as execution inputs and outputs
 * (`Execution.setInputFromMemory` / `setOutputFromMemory`).
 */
import { parseAnswer, type Transport } from "./http.ts";

/** What the service reports of a memory. */
export interface MemoryInfo {
  /** The memory's id, which models and executions refer to it by. */
  id: string;
  /** Size in bytes. */
  size: number;
  /** When it was created (ISO 8601). */
  createdAt?: string;
  /** Fields this SDK does not type (later versions of the service may add more). */
  [field: string]: unknown;
}

/** A byte range of a memory: `length` bytes from `offset`. */
export interface MemoryRange {
  /** First byte of the range. */
  offset: number;
  /** Bytes in the range. */
  length: number;
}

/** What `NnClient.createMemory` takes: the initial bytes, or a size to zero-fill. */
export type MemorySource = Uint8Array | { size: number };

/** Where a CONSTANT_REFERENCE operand's bytes are in a model's `pools` (docs/api.md "Models"). */
export interface LocationJson {
  /** The pool's position in the model's `pools` (memory ids). */
  poolIndex: number;
  /** First byte of the value in the pool. */
  offset: number;
  /** Bytes of the value. */
  length: number;
}

/**
 * Checks that [offset, offset + length) is a region of a memory of `size` bytes; throws a
 * RangeError naming `what` otherwise (before anything is sent).
 */
export function checkMemoryRegion(
  what: string,
  size: number,
  offset: number,
  length: number,
): void {
  if (!Number.isSafeInteger(offset) || offset < 0) {
    throw new RangeError(`${what}: offset ${offset} is not a non-negative integer`);
  }
  if (!Number.isSafeInteger(length) || length < 0) {
    throw new RangeError(`${what}: length ${length} is not a non-negative integer`);
  }
  if (offset + length > size) {
    throw new RangeError(
      `${what}: region [${offset}, ${offset + length}) is outside the memory of ${size} bytes`,
    );
  }
}

/** A memory pool of the service, owned by the client that created it. */
export class Memory {
  readonly #transport: Transport;
  /** The service's answer, with any fields beyond those typed here. */
  readonly info: MemoryInfo;

  /** Use `NnClient.createMemory`. */
  constructor(transport: Transport, info: MemoryInfo) {
    this.#transport = transport;
    this.info = info;
  }

  /** What models (`pools`) and executions (`{memory}` arguments) refer to the memory by. */
  get id(): string {
    return this.info.id;
  }

  /** Size in bytes (fixed at creation). */
  get size(): number {
    return this.info.size;
  }

  #path(): string {
    return `/v1/memories/${encodeURIComponent(this.id)}`;
  }

  /**
   * Reads the memory's bytes: all of them, or `length` bytes from `offset` (sent as
   * `Range: bytes=a-b`).
   */
  async read(range?: MemoryRange): Promise<Uint8Array> {
    if (range === undefined) {
      return new Uint8Array(await (await this.#transport.send("GET", this.#path())).arrayBuffer());
    }
    checkMemoryRegion(`read of memory ${this.id}`, this.size, range.offset, range.length);
    if (range.length === 0) return new Uint8Array(0);
    const { offset, length } = range;
    const response = await this.#transport.send("GET", this.#path(), undefined, {
      range: `bytes=${offset}-${offset + length - 1}`,
    });
    const bytes = new Uint8Array(await response.arrayBuffer());
    // A 200 is the whole memory (a proxy may drop the Range): cut the range out of it.
    return response.status === 206 ? bytes : bytes.slice(offset, offset + length);
  }

  /** Writes `bytes` into the memory at `offset` (`PUT /v1/memories/{id}?offset=K`). */
  async write(offset: number, bytes: Uint8Array): Promise<void> {
    checkMemoryRegion(`write to memory ${this.id}`, this.size, offset, bytes.byteLength);
    const response = await this.#transport.send(
      "PUT",
      `${this.#path()}?offset=${offset}`,
      { bytes },
    );
    await response.body?.cancel();
  }

  /**
   * Deletes the memory. Models whose constants came from it keep them (the service copied
   * them when the model was registered).
   */
  async delete(): Promise<void> {
    await this.#transport.json("DELETE", this.#path());
  }
}

/** Creates a memory from bytes (`application/octet-stream`) or zero-filled of a size. */
export async function createMemory(transport: Transport, source: MemorySource): Promise<Memory> {
  let info: MemoryInfo;
  if (source instanceof Uint8Array) {
    const response = await transport.send("POST", "/v1/memories", { bytes: source });
    info = parseAnswer<MemoryInfo>(await response.text(), {
      what: "POST /v1/memories",
      httpStatus: response.status,
    });
  } else {
    if (!Number.isSafeInteger(source.size) || source.size < 0) {
      throw new RangeError(`createMemory: size ${source.size} is not a non-negative integer`);
    }
    info = await transport.json<MemoryInfo>("POST", "/v1/memories", { size: source.size });
  }
  return new Memory(transport, info);
}
