/**
 * `DeviceBuffer`: a driver-managed buffer of the service (NNAPI memory domains,
 * `ANeuralNetworksMemory_createFromDesc`; docs/api.md "Memory domains"). It is allocated for
 * given inputs and outputs ("roles") of one compilation and stays on the service between
 * executions, so one execution's output can be the next one's input (recurrent state,
 * chained models) without the data leaving the service. Its bytes are reached only by
 * copying to or from a `Memory` of exactly its size.
 */
import type { ExecutionTarget } from "./execution.ts";
import type { Transport } from "./http.ts";
import type { Memory } from "./memory.ts";

/**
 * One use a buffer is allocated for (NNAPI `ANeuralNetworksMemoryDesc_addInputRole` /
 * `addOutputRole`): input or output `index` of the compilation, in model order.
 */
export interface BufferRole {
  /** Whether the buffer serves as an input or as an output. */
  io: "input" | "output";
  /** The input's or output's position in the model's order. */
  index: number;
  /** How often the buffer is expected to serve this role, in (0, 1]: a hint. */
  frequency?: number;
}

/** What `Compilation.allocateBuffer` takes: docs/api.md's `POST /v1/compilations/{id}/buffers`. */
export interface BufferRequest {
  /** At least one; every role's operand must have the same type and quantization. */
  roles: readonly BufferRole[];
  /**
   * Completes or narrows the roles' dimensions (0 marks an extent that each execution
   * writing the buffer decides).
   */
  dimensions?: readonly number[];
}

/** What the service reports of an allocated buffer. */
export interface BufferInfo {
  /** The unguessable name executions and copies refer to the buffer by. */
  token: string;
  /** The roles' dimensions merged with the requested ones; 0 where still unknown. */
  dimensions: number[];
  /** Fields this SDK does not type (later versions of the service may add more). */
  [field: string]: unknown;
}

/**
 * A buffer of the service, owned by the client that allocated it and tied to one
 * compilation (deleting the compilation frees it). Pass it to
 * `Execution.setInputFromBuffer` / `setOutputFromBuffer` in the roles it was allocated for;
 * any other use, or reading it before anything wrote it, fails with INVALID_ARGUMENT.
 */
export class DeviceBuffer {
  readonly #transport: Transport;
  /** The service's answer, with any fields beyond those typed here. */
  readonly info: BufferInfo;
  /** The id of the compilation the buffer serves. */
  readonly compilation: string;
  /** The roles it was allocated for (a copy of the request's). */
  readonly roles: readonly BufferRole[];

  /** Use `Compilation.allocateBuffer`. */
  constructor(
    transport: Transport,
    info: BufferInfo,
    allocation: { compilation: string; roles: readonly BufferRole[] },
  ) {
    this.#transport = transport;
    this.info = info;
    this.compilation = allocation.compilation;
    this.roles = allocation.roles.map((role) => ({ ...role }));
  }

  /** The token executions and copies name the buffer by. */
  get token(): string {
    return this.info.token;
  }

  /** Dimensions fixed at allocation; 0 marks an extent each writing execution decides. */
  get dimensions(): readonly number[] {
    return this.info.dimensions;
  }

  #path(action = ""): string {
    return `/v1/buffers/${encodeURIComponent(this.token)}${action}`;
  }

  /**
   * Fills the buffer with a copy of `memory`'s bytes (NNAPI `ANeuralNetworksMemory_copy`
   * into device memory). The buffer's dimensions must be fully known and the memory exactly
   * its size; otherwise INVALID_ARGUMENT.
   */
  async copyFrom(memory: Memory): Promise<void> {
    await this.#transport.json("POST", this.#path("/copy-from"), { memory: memory.id });
  }

  /**
   * Copies the buffer's contents into `memory`, which must be exactly their size (read it
   * with `memory.read()`). A buffer nothing wrote yet fails with INVALID_ARGUMENT.
   */
  async copyTo(memory: Memory): Promise<void> {
    await this.#transport.json("POST", this.#path("/copy-to"), { memory: memory.id });
  }

  /**
   * Frees the buffer (NNAPI `ANeuralNetworksMemory_free`); executions already running with
   * it finish, later uses fail with NOT_FOUND.
   */
  async free(): Promise<void> {
    await this.#transport.json("DELETE", this.#path());
  }
}

/**
 * Allocates a buffer for roles of the compilation `target`. Roles are checked against the
 * model's inputs and outputs before anything is sent (RangeError); types, quantization and
 * dimensions are the service's to check.
 */
export async function allocateBuffer(
  transport: Transport,
  target: ExecutionTarget,
  request: BufferRequest,
): Promise<DeviceBuffer> {
  if (request.roles.length === 0) {
    throw new RangeError("allocateBuffer: a buffer needs at least one role");
  }
  request.roles.forEach((role, k) => {
    if (role.io !== "input" && role.io !== "output") {
      throw new RangeError(`allocateBuffer: roles[${k}].io ${role.io} is not input or output`);
    }
    const count = target.signature[`${role.io}s`].length;
    if (!Number.isInteger(role.index) || role.index < 0 || role.index >= count) {
      throw new RangeError(
        `allocateBuffer: roles[${k}]: no ${role.io} ${role.index} (the model has ${count})`,
      );
    }
  });
  const roles = request.roles.map((role) => ({ ...role }));
  const info = await transport.json<BufferInfo>(
    "POST",
    `/v1/compilations/${encodeURIComponent(target.id)}/buffers`,
    {
      roles,
      ...(request.dimensions ? { dimensions: [...request.dimensions] } : {}),
    },
  );
  return new DeviceBuffer(transport, info, { compilation: target.id, roles });
}
