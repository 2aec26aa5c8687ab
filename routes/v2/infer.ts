/**
 * An Open Inference Protocol inference request as a driver execution, and its result as the
 * protocol's response: inputs matched by name (JSON `data`, binary data after the JSON
 * header, or a registered shared-memory region), the outputs asked for (all by default) as
 * JSON, binary, or written into a region. Tensor sizes and shapes are checked by the driver,
 * once, as for `/v1` executions.
 */
import { z } from "@hono/zod-openapi";
import type {
  ExecutionResult,
  InputArgument,
  OutputArgument,
} from "../../driver/execution/request.ts";
import type { ModelPort } from "../../store/model_store.ts";
import { invalid } from "../../nnapi/errors.ts";
import { toBytes } from "../../nnapi/tensor.ts";
import { BinarySections } from "../binary_tensors.ts";
import { jsonData, jsonElements, oipDatatype } from "./datatypes.ts";

/** A parameter value of the protocol. */
const Parameter = z.union([z.string(), z.number(), z.boolean()]);

const TensorParameters = z.object({
  binary_data_size: z.number().int().nonnegative().optional(),
  binary_data: z.boolean().optional(),
  shared_memory_region: z.string().min(1).optional(),
  shared_memory_byte_size: z.number().int().nonnegative().optional(),
  shared_memory_offset: z.number().int().nonnegative().optional(),
}).catchall(Parameter);

/** The JSON of an inference request (`$inference_request`). */
export const InferRequest = z.object({
  id: z.string().optional(),
  parameters: z.object({ binary_data_output: z.boolean().optional() }).catchall(Parameter)
    .optional(),
  inputs: z.array(z.object({
    name: z.string(),
    shape: z.array(z.number().int().nonnegative()),
    datatype: z.string(),
    parameters: TensorParameters.optional(),
    data: z.array(z.unknown()).optional(),
  })).min(1),
  outputs: z.array(z.object({ name: z.string(), parameters: TensorParameters.optional() }))
    .optional(),
}).openapi("V2InferRequest");

export type InferRequest = z.infer<typeof InferRequest>;

/**
 * Validates an inference request. The commonest form, `{"id"?, "inputs": [{"name", "shape",
 * "datatype", "data"}, ...]}` with nothing else, is recognized by hand (zod's output would
 * equal it): its zod parse was about a twentieth of a tiny inference's serving thread. Every
 * other body gets zod's full check.
 */
export function parseInferRequest(value: unknown): ReturnType<typeof InferRequest.safeParse> {
  if (isPlainInferRequest(value)) return { success: true, data: value };
  return InferRequest.safeParse(value);
}

/** Whether every key of a JSON object is one of `allowed` (its own keys only, as parsed). */
function keysWithin(value: object, allowed: readonly string[]): boolean {
  for (const key in value) if (!allowed.includes(key)) return false;
  return true;
}

const PLAIN_INPUT_KEYS = ["name", "shape", "datatype", "data"] as const;

/** `{"id"?: string, "inputs": [plain inputs, at least one]}` and nothing else. */
function isPlainInferRequest(value: unknown): value is InferRequest {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  if (!keysWithin(value, ["id", "inputs"])) return false;
  const { id, inputs } = value as { id?: unknown; inputs?: unknown };
  if (id !== undefined && typeof id !== "string") return false;
  if (!Array.isArray(inputs) || inputs.length === 0) return false;
  for (const input of inputs) {
    if (typeof input !== "object" || input === null || Array.isArray(input)) return false;
    const { name, shape, datatype, data } = input as Record<string, unknown>;
    if (typeof name !== "string" || typeof datatype !== "string" || !Array.isArray(data)) {
      return false;
    }
    if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0)) return false;
    if (!keysWithin(input, PLAIN_INPUT_KEYS)) return false;
  }
  return true;
}

/** A registered shared-memory region: a span of one of the client's memories. */
export interface Region {
  name: string;
  memory: string;
  offset: number;
  byteSize: number;
}

/** The protocol's name of a model input or output: its own, else `input0`, `output1`, ... */
export function portName(port: ModelPort, kind: "input" | "output", index: number): string {
  return port.name ?? `${kind}${index}`;
}

/** The span of a region a tensor's `shared_memory_*` parameters name, as a memory region. */
async function regionSpan(
  parameters: z.infer<typeof TensorParameters>,
  regions: (name: string) => Promise<Region>,
  path: (string | number)[],
) {
  const region = await regions(parameters.shared_memory_region!);
  const size = parameters.shared_memory_byte_size;
  if (size === undefined) {
    throw invalid(`${path.join(".")}: shared_memory_region needs shared_memory_byte_size`, {
      path,
    });
  }
  const offset = parameters.shared_memory_offset ?? 0;
  if (offset + size > region.byteSize) {
    throw invalid(
      `${path.join(".")}: [${offset}, ${offset + size}) is outside shared memory region ` +
        `'${region.name}' of ${region.byteSize} bytes`,
      { path },
    );
  }
  return { memory: region.memory, offset: region.offset + offset, length: size };
}

/** What an inference request asks of the driver, and how to answer it. */
export interface DecodedInference {
  inputs: InputArgument[];
  outputs: OutputArgument[];
  /** Per model output: returned as JSON, binary, in a region, or not at all. */
  delivery: ({ kind: "json" | "binary" } | { kind: "region"; name: string; size: number } | {
    kind: "none";
  })[];
}

/** Matches a request to the model's ports and builds the driver's arguments. */
export async function decodeInference(
  request: InferRequest,
  ports: { inputs: ModelPort[]; outputs: ModelPort[] },
  binary: BinarySections | undefined,
  regions: (name: string) => Promise<Region>,
): Promise<DecodedInference> {
  const inputNames = ports.inputs.map((p, k) => portName(p, "input", k));
  const given = new Map<string, number>();
  for (const [k, input] of request.inputs.entries()) {
    if (!inputNames.includes(input.name)) {
      throw invalid(
        `the model has no input '${input.name}' (its inputs: ${inputNames.join(", ")})`,
        {
          path: ["inputs", k, "name"],
        },
      );
    }
    if (given.has(input.name)) {
      throw invalid(`input '${input.name}' is given twice`, { path: ["inputs", k, "name"] });
    }
    given.set(input.name, k);
  }
  const inputs: InputArgument[] = [];
  // Binary data follow the JSON in the request's input order, not the model's.
  const bytesByInput = new Map<number, Uint8Array>();
  for (const [k, input] of request.inputs.entries()) {
    const size = input.parameters?.binary_data_size;
    if (size === undefined) continue;
    if (!binary) {
      throw invalid(
        `inputs.${k}: binary_data_size needs a body of JSON then binary data, with ` +
          "Inference-Header-Content-Length",
        { path: ["inputs", k, "parameters", "binary_data_size"] },
      );
    }
    bytesByInput.set(k, binary.take(size, ["inputs", k, "parameters", "binary_data_size"]));
  }
  binary?.finish();
  for (const [index, port] of ports.inputs.entries()) {
    const name = inputNames[index];
    const k = given.get(name);
    if (k === undefined) throw invalid(`input '${name}' is missing`, { path: ["inputs"] });
    const input = request.inputs[k];
    const path = ["inputs", k];
    const datatype = oipDatatype(port.type);
    if (input.datatype !== datatype) {
      throw invalid(`input '${name}' is ${datatype}, not ${input.datatype}`, {
        path: [...path, "datatype"],
      });
    }
    const dimensions = input.shape;
    const bytes = bytesByInput.get(k);
    const sources = [bytes, input.parameters?.shared_memory_region, input.data]
      .filter((s) => s !== undefined).length;
    if (sources !== 1) {
      throw invalid(
        `input '${name}' needs exactly one of data, binary_data_size or shared_memory_region`,
        { path },
      );
    }
    if (bytes) inputs.push({ value: { kind: "bytes", bytes }, dimensions });
    else if (input.data) {
      const values = jsonElements(input.data, datatype, [...path, "data"]);
      inputs.push({ value: { kind: "numbers", values }, dimensions });
    } else {
      const span = await regionSpan(input.parameters!, regions, [...path, "parameters"]);
      inputs.push({ value: { kind: "memory", ...span }, dimensions });
    }
  }

  const outputNames = ports.outputs.map((p, k) => portName(p, "output", k));
  const binaryByDefault = request.parameters?.binary_data_output === true;
  const requested = new Map((request.outputs ?? []).map((o, k) => [o.name, { ...o, k }]));
  for (const [name, { k }] of requested) {
    if (!outputNames.includes(name)) {
      throw invalid(
        `the model has no output '${name}' (its outputs: ${outputNames.join(", ")})`,
        { path: ["outputs", k, "name"] },
      );
    }
  }
  const outputs: OutputArgument[] = [];
  const delivery: DecodedInference["delivery"] = [];
  for (const name of outputNames) {
    const asked = requested.get(name);
    if (request.outputs && !asked) {
      outputs.push({});
      delivery.push({ kind: "none" });
    } else if (asked?.parameters?.shared_memory_region) {
      const path = ["outputs", asked.k, "parameters"];
      const span = await regionSpan(asked.parameters, regions, path);
      outputs.push({ target: { kind: "memory", ...span } });
      delivery.push({
        kind: "region",
        name: asked.parameters.shared_memory_region,
        size: span.length,
      });
    } else {
      outputs.push({});
      const binaryOut = asked?.parameters?.binary_data ?? binaryByDefault;
      delivery.push({ kind: binaryOut ? "binary" : "json" });
    }
  }
  return { inputs, outputs, delivery };
}

/** One output of an inference response. */
export interface ResponseOutput {
  name: string;
  datatype: string;
  shape: number[];
  parameters?: Record<string, string | number | boolean>;
  data?: unknown[];
}

/** The response's JSON and the bytes of its binary outputs, in output order. */
export function encodeInference(
  result: ExecutionResult,
  ports: ModelPort[],
  delivery: DecodedInference["delivery"],
): { outputs: ResponseOutput[]; binary: Uint8Array[] } {
  const outputs: ResponseOutput[] = [];
  const binary: Uint8Array[] = [];
  for (const [k, port] of ports.entries()) {
    const how = delivery[k];
    if (how.kind === "none") continue;
    const output = result.outputs[k];
    const head = {
      name: portName(port, "output", k),
      datatype: oipDatatype(port.type),
      shape: output.shape,
    };
    if (how.kind === "region") {
      outputs.push({
        ...head,
        parameters: { shared_memory_region: how.name, shared_memory_byte_size: how.size },
      });
    } else if (how.kind === "binary") {
      const bytes = toBytes(output.data!);
      binary.push(bytes);
      outputs.push({ ...head, parameters: { binary_data_size: bytes.byteLength } });
    } else {
      outputs.push({ ...head, data: jsonData(head.datatype, output.data!) });
    }
  }
  return { outputs, binary };
}
