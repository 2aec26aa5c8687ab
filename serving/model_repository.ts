/**
 * The model repository (`NNSERVE_MODEL_REPOSITORY`, as Triton's): a directory of
 * `<name>/<version>/model.json` (an NNAPI model) or `<name>/<version>/model.onnx`, with an
 * optional `<name>/config.json`, registered and compiled at start for every client, before
 * the service reports ready. The repository is the source of truth for the models it
 * registered: an unchanged entry keeps its model and compilation across restarts, a changed
 * one replaces them, a removed one is deleted. A broken entry is reported by name and does
 * not stop the others. Only regular files are read (a FIFO would block, `/dev/zero` never
 * ends), each up to a size cap, and a reason never quotes a file's content: a symlink may
 * point anywhere.
 */
import { z } from "@hono/zod-openapi";
import { byteSize } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
import { sha256Hex } from "../store/bytes.ts";
import type { Service } from "./service.ts";
import { ModelSchema } from "../driver/model/model_schema.ts";
import { BatchingSchema } from "../driver/execution/dynamic_batcher.ts";
import { parseJsonFile, readRepositoryFile, schemaFault, shownReason } from "./repository_files.ts";

/** What `<name>/config.json` may say (every field optional). */
const RepositoryConfig = z.object({
  preference: z.enum(["LOW_POWER", "FAST_SINGLE_ANSWER", "SUSTAINED_SPEED"]).optional(),
  priority: z.enum(["LOW", "MEDIUM", "HIGH"]).optional(),
  devices: z.array(z.string()).min(1).optional(),
  /** The compilation cache token: base64 of 32 bytes. */
  cacheToken: z.string().refine((t) => {
    try {
      return Uint8Array.fromBase64(t).length === 32;
    } catch {
      return false;
    }
  }, "must be the base64 of exactly 32 bytes").optional(),
  /** Dynamic batching of the entry's compilation, as on `POST /v1/compilations`. */
  batching: BatchingSchema.optional(),
  /** Executions on zero inputs after compiling (inputs of unknown extent skip it). */
  warmup: z.number().int().min(0).max(100).optional(),
  /** ONNX imports: input shapes and values fixed at conversion, by input name. */
  shapes: z.record(z.string(), z.array(z.number().int().nonnegative())).optional(),
  values: z.record(z.string(), z.array(z.number())).optional(),
}).strict();

type RepositoryConfig = z.infer<typeof RepositoryConfig>;

/**
 * Default of the largest file the repository reads: the default largest request body
 * (NNSERVE_MAX_BODY_BYTES), as a model posted to `/v1/models` may be.
 */
export const DEFAULT_REPOSITORY_MAX_FILE_BYTES = 1024 * 1024 * 1024;

/** How one `<name>/<version>` fared at start. */
export interface RepositoryEntry {
  name: string;
  version: string;
  state: "ready" | "failed";
  /** Why it failed. */
  error?: string;
  /** Per client: its model and compilation of this entry. */
  clients: { client: string; model: string; compilation: string }[];
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;
const VERSION = /^[1-9][0-9]{0,8}$/;

/** One version's files as found on disk. */
interface Found {
  name: string;
  version: string;
  file: { kind: "json" | "onnx"; bytes: Uint8Array };
  config: RepositoryConfig;
  /** SHA-256 of the model file and the config: what decides whether it changed. */
  source: string;
}

/** Whether `path` is a directory this process can read. */
export async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await Deno.stat(path)).isDirectory;
  } catch {
    return false;
  }
}

/**
 * The readable entries of the repository (of one name when given); unreadable ones are
 * reported as failed.
 */
async function scan(
  dir: string,
  failed: RepositoryEntry[],
  options: { only?: string; maxFileBytes: number },
): Promise<Found[]> {
  const found: Found[] = [];
  const names = [];
  for await (const entry of Deno.readDir(dir)) if (entry.isDirectory) names.push(entry.name);
  const only = options.only;
  for (const name of names.sort().filter((n) => only === undefined || n === only)) {
    const fail = (version: string, error: unknown) =>
      failed.push({ name, version, state: "failed", error: shownReason(error), clients: [] });
    if (!NAME.test(name)) {
      fail("", "a name is 1-200 letters, digits, '.', '_' or '-'");
      continue;
    }
    let config: RepositoryConfig = {};
    try {
      const bytes = await readRepositoryFile(`${dir}/${name}`, "config.json", options.maxFileBytes);
      const parsed = RepositoryConfig.safeParse(bytes ? parseJsonFile("config.json", bytes) : {});
      if (!parsed.success) throw schemaFault("config.json", parsed.error.issues[0]);
      config = parsed.data;
    } catch (error) {
      fail("", error);
      continue;
    }
    const versions = [];
    try {
      for await (const entry of Deno.readDir(`${dir}/${name}`)) {
        if (entry.isDirectory) versions.push(entry.name);
      }
    } catch (error) {
      fail("", `the folder cannot be read (${(error as Error).name})`);
      continue;
    }
    for (const version of versions.sort((a, b) => Number(a) - Number(b))) {
      if (!VERSION.test(version)) {
        fail(version, "a version folder is a positive integer");
        continue;
      }
      const base = `${dir}/${name}/${version}`;
      let file: Found["file"] | undefined;
      try {
        for (const kind of ["json", "onnx"] as const) {
          const bytes = await readRepositoryFile(base, `model.${kind}`, options.maxFileBytes);
          if (bytes) {
            file = { kind, bytes };
            break;
          }
        }
      } catch (error) {
        fail(version, error);
        continue;
      }
      if (!file) {
        fail(version, "no model.json or model.onnx in it");
        continue;
      }
      const configBytes = new TextEncoder().encode(JSON.stringify(config));
      const source = await sha256Hex(new TextEncoder().encode(file.kind), file.bytes, configBytes);
      found.push({ name, version, file, config, source });
    }
  }
  return found;
}

/** A `model.json` as a model document; its faults name the file and the field. */
function parseModelJson(bytes: Uint8Array) {
  const parsed = ModelSchema.safeParse(parseJsonFile("model.json", bytes));
  if (!parsed.success) throw schemaFault("model.json", parsed.error.issues[0]);
  return parsed.data;
}

/** Zero-filled inputs of a model whose input shapes are all known; undefined otherwise. */
function zeroInputs(inputs: { type: string; dimensions: number[] }[]) {
  if (inputs.some((p) => p.dimensions.some((d) => d === 0))) return undefined;
  return inputs.map((p) => ({
    value: {
      kind: "bytes" as const,
      bytes: new Uint8Array(byteSize(p.type as OperandType, p.dimensions)),
    },
  }));
}

/**
 * Registers, compiles and warms up one found entry for `client`, reusing the model and
 * compilation an earlier start made from the same files; returns their ids.
 */
async function loadFor(
  service: Service,
  client: string,
  entry: Found,
): Promise<{ model: string; compilation: string }> {
  const { name, version, config } = entry;
  const existing = (await service.driver.listModels(client, { name, version, limit: 1000 })).models
    .filter((m) => m.repository !== undefined);
  let model = existing.find((m) => m.repository === entry.source);
  for (const stale of existing) {
    if (stale !== model) await service.driver.deleteModel(client, stale.id);
  }
  if (!model) {
    const source = { name, version, repository: entry.source };
    model = entry.file.kind === "json"
      ? await service.driver.registerModel(client, parseModelJson(entry.file.bytes), source)
      : await service.importOnnx(client, entry.file.bytes, {
        ...source,
        shapes: config.shapes,
        values: config.values,
      });
  }
  const compilations = await service.driver.listCompilations(client, { model: model.id, limit: 1 });
  let compilation = compilations.compilations[0]?.id;
  if (compilation) {
    await service.driver.describeCompilation(client, compilation); // prepared again after a restart
  } else {
    compilation = (await service.driver.createCompilation(client, {
      model: model.id,
      preference: config.preference,
      priority: config.priority,
      devices: config.devices,
      batching: config.batching,
      cacheToken: config.cacheToken ? Uint8Array.fromBase64(config.cacheToken) : undefined,
    })).id;
  }
  for (let i = 0; i < (config.warmup ?? 0); i++) {
    // Fresh inputs each time: an execution may hand its input bytes over to a worker.
    const inputs = zeroInputs(model.inputs);
    if (!inputs) break;
    await service.driver.execute(client, compilation, { inputs });
  }
  return { model: model.id, compilation };
}

/** Options of {@link loadModelRepository}. */
export interface RepositoryLoadOptions {
  /** The clients each entry is registered and compiled for. */
  clients: readonly string[];
  /** Hears one line per entry. */
  log: (line: string) => void;
  /** Only this entry (as `/v2/repository/models/{name}/load`). */
  name?: string;
  /**
   * The largest file read (NNSERVE_REPOSITORY_MAX_FILE_BYTES); default
   * {@link DEFAULT_REPOSITORY_MAX_FILE_BYTES}.
   */
  maxFileBytes?: number;
}

/**
 * Loads the repository at `dir` (a directory), or only its entry `name`, for every client in
 * `clients`; models the repository registered earlier and no longer holds are deleted.
 */
export async function loadModelRepository(
  service: Service,
  dir: string,
  options: RepositoryLoadOptions,
): Promise<RepositoryEntry[]> {
  const entries: RepositoryEntry[] = [];
  const found = await scan(dir, entries, {
    only: options.name,
    maxFileBytes: options.maxFileBytes ?? DEFAULT_REPOSITORY_MAX_FILE_BYTES,
  });
  for (const entry of found) {
    const clients = [];
    try {
      for (const client of options.clients) {
        clients.push({ client, ...(await loadFor(service, client, entry)) });
      }
      entries.push({ name: entry.name, version: entry.version, state: "ready", clients });
    } catch (error) {
      entries.push({
        name: entry.name,
        version: entry.version,
        state: "failed",
        error: shownReason(error),
        clients,
      });
    }
  }
  // Models the repository registered (under the name asked for) that it no longer holds.
  const kept = new Set(found.map((f) => f.source));
  for (const client of options.clients) {
    for (const model of await repositoryModels(service, client)) {
      if (options.name !== undefined && model.name !== options.name) continue;
      if (!kept.has(model.repository!)) await service.driver.deleteModel(client, model.id);
    }
  }
  for (const e of entries) {
    const where = `${e.name}${e.version ? `/${e.version}` : ""}`;
    options.log(
      e.state === "ready"
        ? `nnserve: repository model ${where} ready`
        : `nnserve: repository model ${where} failed: ${e.error}`,
    );
  }
  return entries;
}

/** Every model of `client` that the repository registered. */
async function repositoryModels(service: Service, client: string) {
  const all = [];
  let cursor: string | undefined;
  do {
    const page = await service.driver.listModels(client, { limit: 1000, cursor });
    all.push(...page.models.filter((m) => m.repository !== undefined));
    cursor = page.next;
  } while (cursor);
  return all;
}
