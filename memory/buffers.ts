/**
 * Driver-managed buffers (NNAPI memory domains, HAL 1.3 `IBuffer`): device-side tensors
 * allocated for given roles of a compilation, referenced by an unguessable token, kept
 * between executions (e.g. recurrent state) and never persisted (like device memory).
 * This module owns storage and the reader/writer bookkeeping; role and shape rules are
 * the driver's (`driver/execution/memory_domain.ts`).
 */
import { DriverError, notFound } from "../nnapi/errors.ts";
import type { TensorData } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";

/** One use a buffer was allocated for: an input or output of its compilation. */
export interface BufferRole {
  io: "input" | "output";
  index: number;
  frequency?: number;
}

/** A driver-managed buffer. */
export interface DeviceBuffer {
  readonly token: string;
  readonly owner: string;
  readonly compilation: string;
  readonly type: OperandType;
  /** Allocation dimensions; 0 marks an extent each writing execution decides. */
  readonly dimensions: readonly number[];
  readonly roles: readonly BufferRole[];
  /** Current contents and their shape; undefined until something wrote the buffer. */
  contents?: { shape: number[]; data: TensorData };
  /** Executions currently reading / writing it. */
  readers: number;
  writing: boolean;
}

/** All clients' driver-managed buffers. */
export class BufferRegistry {
  readonly #buffers = new Map<string, DeviceBuffer>();

  /** Number of live buffers and the bytes their contents take, for metrics. */
  stats(): { count: number; bytes: number } {
    let bytes = 0;
    for (const b of this.#buffers.values()) bytes += b.contents?.data.byteLength ?? 0;
    return { count: this.#buffers.size, bytes };
  }

  /** Registers a new buffer with validated type, dimensions and roles. */
  allocate(
    owner: string,
    compilation: string,
    description: { type: OperandType; dimensions: number[]; roles: BufferRole[] },
  ): DeviceBuffer {
    const buffer: DeviceBuffer = {
      // Starts with its compilation's id: a balancer routes the buffer where the compilation is.
      token: `${compilation}.${crypto.randomUUID()}`,
      owner,
      compilation,
      ...description,
      readers: 0,
      writing: false,
    };
    this.#buffers.set(buffer.token, buffer);
    return buffer;
  }

  /** The client's buffer; another client's token is answered as unknown. */
  get(owner: string, token: string): DeviceBuffer {
    const buffer = this.#buffers.get(token);
    if (!buffer || buffer.owner !== owner) throw notFound(`no buffer ${token}`);
    return buffer;
  }

  /** Frees a buffer; executions already using it keep their own references. */
  delete(owner: string, token: string): void {
    this.get(owner, token);
    this.#buffers.delete(token);
  }

  /** Frees every buffer allocated for a compilation (it is being deleted). */
  deleteForCompilation(compilation: string): void {
    for (const [token, buffer] of this.#buffers) {
      if (buffer.compilation === compilation) this.#buffers.delete(token);
    }
  }

  /**
   * Marks buffers as read and written by one execution; fails at once (never waits) when
   * a buffer is being written, or is to be written while others read it. Returns the
   * release function.
   */
  acquire(reads: readonly DeviceBuffer[], writes: readonly DeviceBuffer[]): () => void {
    const readSet = new Set(reads);
    const writeSet = new Set(writes);
    for (const b of [...readSet, ...writeSet]) {
      if (b.writing) {
        throw new DriverError(
          "INVALID_ARGUMENT",
          `buffer ${b.token} is being written by another execution`,
        );
      }
    }
    for (const b of writeSet) {
      if (b.readers > 0) {
        throw new DriverError(
          "INVALID_ARGUMENT",
          `buffer ${b.token} is being read by another execution and cannot be written`,
        );
      }
    }
    for (const b of readSet) b.readers++;
    for (const b of writeSet) b.writing = true;
    return () => {
      for (const b of readSet) b.readers--;
      for (const b of writeSet) b.writing = false;
    };
  }
}
