/**
 * The gRPC service's messages as the rest of nnserve takes them: a ModelInferRequest as
 * `/v2`'s JSON request (typed contents as `data`, raw contents as binary sections, parameters
 * as plain values), the driver's errors as gRPC statuses, and requests that do not decode
 * answered INVALID_ARGUMENT rather than grpc-js's INTERNAL.
 */
import type { Buffer } from "node:buffer";
import * as grpc from "@grpc/grpc-js";
import { DriverError, type ErrorStatus, invalid } from "../../nnapi/errors.ts";
import { BinarySections } from "../binary_tensors.ts";
import type { InferRequest } from "../v2/infer.ts";

/** The driver's statuses as gRPC codes (the rest: INTERNAL). */
const CODES: Partial<Record<ErrorStatus, grpc.status>> = {
  INVALID_ARGUMENT: grpc.status.INVALID_ARGUMENT,
  OUTPUT_INSUFFICIENT_SIZE: grpc.status.INVALID_ARGUMENT,
  NOT_FOUND: grpc.status.NOT_FOUND,
  UNAUTHORIZED: grpc.status.UNAUTHENTICATED,
  RESOURCE_EXHAUSTED_TRANSIENT: grpc.status.RESOURCE_EXHAUSTED,
  RESOURCE_EXHAUSTED_PERSISTENT: grpc.status.RESOURCE_EXHAUSTED,
  MISSED_DEADLINE_TRANSIENT: grpc.status.DEADLINE_EXCEEDED,
  MISSED_DEADLINE_PERSISTENT: grpc.status.DEADLINE_EXCEEDED,
  DEVICE_UNAVAILABLE: grpc.status.UNAVAILABLE,
};

/** A failure as gRPC answers it: the driver's status as a code, its message as details. */
export function grpcError(error: unknown): Partial<grpc.StatusObject> {
  if (error instanceof DriverError) {
    const metadata = new grpc.Metadata();
    metadata.set("nnserve-status", error.status);
    if (error.details.retryAfterSeconds !== undefined) {
      metadata.set("retry-after", String(error.details.retryAfterSeconds));
    }
    return {
      code: CODES[error.status] ?? grpc.status.INTERNAL,
      details: error.message,
      metadata,
    };
  }
  return { code: grpc.status.INTERNAL, details: (error as Error).message ?? String(error) };
}

/** A request protobuf could not decode: what the tolerant deserializer gives instead. */
export const MALFORMED = Symbol("malformed");

/**
 * `service` with deserializers that do not throw: a message that does not decode becomes a
 * marker the handler answers INVALID_ARGUMENT to (grpc-js itself would answer INTERNAL,
 * which says the server failed).
 */
export function tolerantService(service: grpc.ServiceDefinition): grpc.ServiceDefinition {
  return Object.fromEntries(
    Object.entries(service).map(([name, method]) => [name, {
      ...method,
      requestDeserialize: (bytes: Buffer) => {
        try {
          return method.requestDeserialize(bytes);
        } catch (error) {
          return { [MALFORMED]: (error as Error).message };
        }
      },
    }]),
  ) as grpc.ServiceDefinition;
}

/** The request, or INVALID_ARGUMENT for one that did not decode. */
export function checked<T extends { request: Record<string | symbol, unknown> }>(call: T): T {
  const malformed = call.request[MALFORMED];
  if (malformed !== undefined) {
    throw invalid(`the request is not a valid protobuf message: ${String(malformed)}`);
  }
  return call;
}

/** An InferParameter as protobuf.js decodes it (`parameter_choice` names the one set). */
type GrpcParameter = Record<string, unknown> & { parameter_choice?: string };

/** A parameters map as plain values (`/v2`'s JSON form). */
export function plainParameters(
  map: Record<string, GrpcParameter> | undefined,
): Record<string, string | number | boolean> | undefined {
  const entries = Object.entries(map ?? {});
  if (entries.length === 0) return undefined;
  return Object.fromEntries(entries.map(([name, parameter]) => {
    const value = parameter.parameter_choice ? parameter[parameter.parameter_choice] : undefined;
    return [
      name,
      typeof value === "string" && /_param$/.test(parameter.parameter_choice!) &&
        parameter.parameter_choice !== "string_param"
        ? Number(value)
        : value as string | number | boolean,
    ];
  }));
}

/** Plain parameter values as InferParameters. */
export function grpcParameters(
  parameters: Record<string, string | number | boolean> | undefined,
): Record<string, Record<string, unknown>> {
  return Object.fromEntries(
    Object.entries(parameters ?? {}).map(([name, value]) => [
      name,
      typeof value === "boolean"
        ? { bool_param: value }
        : typeof value === "number"
        ? { int64_param: value }
        : { string_param: value },
    ]),
  );
}

/** One tensor of a ModelInferRequest, as protobuf.js decodes it. */
interface GrpcInput {
  name: string;
  datatype: string;
  shape: (number | string)[];
  parameters?: Record<string, GrpcParameter>;
  contents?: Record<string, unknown[]>;
}

/** The `contents` field that carries a datatype's values (the protocol's table). */
const CONTENTS_FIELD: Record<string, string> = {
  BOOL: "bool_contents",
  INT8: "int_contents",
  INT16: "int_contents",
  INT32: "int_contents",
  INT64: "int64_contents",
  UINT8: "uint_contents",
  UINT16: "uint_contents",
  UINT32: "uint_contents",
  UINT64: "uint64_contents",
  FP32: "fp32_contents",
  FP64: "fp64_contents",
};

/**
 * A ModelInferRequest as `/v2`'s JSON request: typed `contents` become `data`, and
 * `raw_input_contents` (one per input, in request order) become binary sections.
 */
export function inferRequestOf(
  message: Record<string, unknown>,
): { request: InferRequest; binary?: BinarySections } {
  const inputs = (message.inputs ?? []) as GrpcInput[];
  const raw = (message.raw_input_contents ?? []) as Uint8Array[];
  // Raw contents go, in order, to the inputs not in a shared-memory region (Triton's rule).
  const inShared = (input: GrpcInput) =>
    plainParameters(input.parameters)?.shared_memory_region !== undefined;
  const rawTaking = inputs.filter((input) => !inShared(input)).length;
  if (raw.length > 0 && raw.length !== rawTaking) {
    throw invalid(
      `raw_input_contents has ${raw.length} entries for ${rawTaking} inputs not in shared ` +
        "memory: give one per such input, or none and each input's contents",
      { path: ["raw_input_contents"] },
    );
  }
  let nextRaw = 0;
  const request: InferRequest = {
    ...(message.id ? { id: String(message.id) } : {}),
    inputs: inputs.map((input) => {
      const parameters = plainParameters(input.parameters);
      const head = {
        name: input.name,
        datatype: input.datatype,
        shape: input.shape.map(Number),
        ...(parameters ? { parameters } : {}),
      };
      // An input in a shared-memory region carries no contents.
      if (parameters?.shared_memory_region !== undefined) return head;
      if (raw.length > 0) {
        const bytes = raw[nextRaw++].byteLength;
        return { ...head, parameters: { ...parameters, binary_data_size: bytes } };
      }
      const values = input.contents?.[CONTENTS_FIELD[input.datatype] ?? ""] ?? [];
      return { ...head, data: values.map((v) => typeof v === "string" ? Number(v) : v) };
    }),
    outputs:
      ((message.outputs ?? []) as { name: string; parameters?: Record<string, GrpcParameter> }[])
        .map((o) => {
          const parameters = plainParameters(o.parameters);
          return { name: o.name, ...(parameters ? { parameters } : {}) };
        }),
  } as InferRequest;
  if (request.outputs?.length === 0) delete request.outputs;
  if (raw.length === 0) return { request };
  const bytes = new Uint8Array(raw.reduce((n, r) => n + r.byteLength, 0));
  let offset = 0;
  for (const r of raw) {
    bytes.set(r, offset);
    offset += r.byteLength;
  }
  return { request, binary: new BinarySections(bytes) };
}
