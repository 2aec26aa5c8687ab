/**
 * The server's configuration: what an instance needs to know, read from the environment by
 * `main.ts` (PORT, HOST, NNSERVE_*) with one clear StartupError per bad value.
 */
import type { BurstOptions } from "./driver/burst/session.ts";
import type { DeviceCosts } from "./driver/devices/device.ts";
import { DEVICE_NAMES } from "./driver/devices/device_list.ts";
import { DEFAULT_QUEUE_LIMITS, type QueueLimits } from "./driver/execution/executors/pool.ts";
import { DEFAULT_MODEL_LIMITS, type ModelLimits } from "./driver/model/models.ts";
import { DEFAULT_MEMORY_LIMITS, type MemoryLimits } from "./memory/pools.ts";
import { type ApiKeys, ApiKeysError, parseApiKeys } from "./routes/auth.ts";
import { LOG_LEVELS, type LogLevel, type LogSink } from "./routes/access_log.ts";
import type { S3BlobConfig } from "./store/s3_blob_store.ts";
import { DEFAULT_IMPORT_LIMITS, type ImportLimits } from "./serving/onnx_imports.ts";

/** Everything a server instance needs to know. */
export interface ServerConfig {
  hostname: string;
  /** 0 picks a free port. */
  port: number;
  dataDir: string;
  /** A KV path or KV Connect URL; defaults to `<dataDir>/nnserve.kv`. */
  kvPath?: string;
  /** PostgreSQL for the state instead of Deno KV (NNSERVE_DATABASE_URL): shared by replicas. */
  databaseUrl?: string;
  /** This replica's name in metrics, logs and answers (NNSERVE_REPLICA; the host name). */
  replica?: string;
  /**
   * Where model blobs go (default `<data dir>/blobs`): a directory every replica mounts
   * (NNSERVE_BLOB_DIR) or an S3 bucket (NNSERVE_S3_BUCKET, NNSERVE_S3_ENDPOINT,
   * NNSERVE_S3_PREFIX; region and credentials from the usual AWS variables).
   */
  blobs?: { dir: string } | { s3: S3BlobConfig };
  /** Client name by API key; empty means the open single-client mode. */
  apiKeys?: ApiKeys;
  workers?: number;
  /** Kernel threads shared by all executions (NNSERVE_THREADS; default the CPU count). */
  threads?: number;
  /** Plans up to this many estimated multiply-adds run inline (NNSERVE_INLINE_WORK). */
  inlineWork?: number;
  /** Memory pool limits (NNSERVE_MAX_MEMORY_BYTES, NNSERVE_CLIENT_MEMORY_BUDGET). */
  memoryLimits?: MemoryLimits;
  /** Executions waiting for a worker (NNSERVE_MAX_QUEUED, NNSERVE_MAX_QUEUED_PER_CLIENT). */
  queueLimits?: QueueLimits;
  /** How large a model may be (NNSERVE_MAX_OPERANDS, ..._OPERATIONS, ..._TENSOR_ELEMENTS). */
  modelLimits?: Partial<ModelLimits>;
  /**
   * ONNX imports: conversions at once (NNSERVE_MAX_CONCURRENT_IMPORTS), seconds each
   * (NNSERVE_IMPORT_TIMEOUT), bytes each may fold into constants
   * (NNSERVE_MAX_IMPORT_FOLDED_BYTES).
   */
  imports?: Partial<ImportLimits>;
  /**
   * Seconds one operation on PostgreSQL may wait before it is refused with 503 and
   * Retry-After (NNSERVE_STATE_TIMEOUT, default 5).
   */
  stateTimeoutSeconds?: number;
  /** Bursts one client may hold open (NNSERVE_MAX_BURSTS_PER_CLIENT). */
  maxBurstsPerClient?: number;
  /** Compilations one client may have (NNSERVE_MAX_COMPILATIONS_PER_CLIENT). */
  maxCompilationsPerClient?: number;
  /** Compilation cache budget in bytes (NNSERVE_CACHE_BYTES), LRU-evicted past it. */
  cacheBytes?: number;
  /** Overrides the driver version the cache is bound to (tests of version changes). */
  driverVersion?: string;
  /** Seconds a burst peer may stay silent to pings (NNSERVE_BURST_IDLE_TIMEOUT, default 4). */
  burstIdleTimeoutSeconds?: number;
  /** µs the service polls for a burst's next request (NNSERVE_BURST_POLLING_WINDOW). */
  burstPollingWindowUs?: number;
  /** Burst limits (in-flight window, slot callback time, unread bytes). */
  burst?: Partial<BurstOptions>;
  /** Largest request body in bytes (NNSERVE_MAX_BODY_BYTES). */
  maxBodyBytes?: number;
  /** Largest JSON request body in bytes (NNSERVE_MAX_JSON_BYTES). */
  maxJsonBytes?: number;
  /**
   * Seconds a new connection has to complete its first request head once it has begun
   * sending it (NNSERVE_HEADER_TIMEOUT); one that has sent nothing yet may wait the longer
   * of this and the idle timeout.
   * With this or `idleTimeoutSeconds` set above 0 the connection guard (connection_guard/)
   * watches the connections; with neither they are untimed.
   * `configFromEnv` always sets both.
   */
  headerTimeoutSeconds?: number;
  /**
   * Seconds a connection may sit with no request in flight and nothing to send before it is
   * closed; this also bounds the wait for a kept-alive connection's next request head
   * (NNSERVE_IDLE_TIMEOUT).
   */
  idleTimeoutSeconds?: number;
  /**
   * Whether to look for a WebGPU adapter and offer the gpu device (NNSERVE_GPU, default
   * true; opening and calibrating it takes about a second once per process).
   */
  gpu?: boolean;
  /**
   * The devices the service offers, by name (NNSERVE_DEVICES, comma-separated; default every
   * device that loads here); a device named but not found here is left out with a log line.
   */
  devices?: readonly string[];
  /** Device costs that replace the measured ones (tests that force a partition). */
  deviceCosts?: Record<string, DeviceCosts>;
  /**
   * A model repository directory (NNSERVE_MODEL_REPOSITORY) registered and compiled for
   * every client at start; `/readyz` answers 200 once it is.
   */
  modelRepository?: string;
  /**
   * The largest file the model repository reads (NNSERVE_REPOSITORY_MAX_FILE_BYTES);
   * default `maxBodyBytes` (as large as a model a client may post). Larger files, and any
   * that is not a regular file, fail their entry by name.
   */
  modelRepositoryMaxFileBytes?: number;
  /**
   * Seconds `close` waits for in-flight requests and burst requests to finish before it cuts
   * them (NNSERVE_SHUTDOWN_TIMEOUT, default 30).
   */
  shutdownTimeoutSeconds?: number;
  /**
   * The port of the Open Inference Protocol's gRPC endpoint (NNSERVE_GRPC_PORT; 8001 is
   * Triton's); none when unset, a free one for 0.
   */
  grpcPort?: number;
  /** Logs start-up notes when true. */
  verbose?: boolean;
  /** The access log's level (NNSERVE_LOG_LEVEL; default info, or off without `verbose`). */
  logLevel?: LogLevel;
  /** Where access log lines go (default: stdout). */
  logSink?: LogSink;
  /** Origins browser apps may call from (NNSERVE_CORS_ORIGINS, comma-separated, or `*`). */
  corsOrigins?: string[];
}

/** Default of {@link ServerConfig.shutdownTimeoutSeconds}. */
export const DEFAULT_SHUTDOWN_TIMEOUT_SECONDS = 30;

/**
 * Seconds past the shutdown timeout after which `main.ts` exits even though `close` has not
 * finished (a request nothing can end, a store that does not close), saying what was left.
 */
export const SHUTDOWN_EXIT_MARGIN_SECONDS = 5;

/**
 * The server cannot start: a configuration error, the data directory held by another
 * process, the port taken. Its message is one line that says what and where; `main.ts`
 * prints it alone, without a stack trace.
 */
export class StartupError extends Error {
  override name = "StartupError";
}

/** Header-read timeout of `main.ts` (seconds): a real client sends its head in milliseconds. */
export const DEFAULT_HEADER_TIMEOUT_SECONDS = 5;
/** Idle keep-alive timeout of `main.ts` (seconds). */
export const DEFAULT_IDLE_TIMEOUT_SECONDS = 30;

/** Reads the server configuration from the environment (PORT, HOST, NNSERVE_*). */
export function configFromEnv(): ServerConfig {
  const env = (name: string) => Deno.env.get(name) || undefined;
  /** A number variable, or undefined when unset; anything else is a StartupError. */
  const number = (name: string, rule: { integer?: boolean; min: number; max?: number }) => {
    const text = env(name);
    if (text === undefined) return undefined;
    const value = Number(text);
    if (
      text.trim() === "" || !Number.isFinite(value) || value < rule.min ||
      (rule.max !== undefined && value > rule.max) || (rule.integer && !Number.isInteger(value))
    ) {
      const range = rule.max === undefined ? `>= ${rule.min}` : `${rule.min}..${rule.max}`;
      const kind = rule.integer ? "an integer" : "a number";
      throw new StartupError(`${name} must be ${kind} ${range}, not "${text}"`);
    }
    return value;
  };
  const bytes = (name: string) => number(name, { integer: true, min: 1 });
  /** A yes/no variable (1/0, true/false, yes/no), or undefined when unset. */
  const flag = (name: string) => {
    const text = env(name)?.toLowerCase();
    if (text === undefined) return undefined;
    if (["1", "true", "yes"].includes(text)) return true;
    if (["0", "false", "no"].includes(text)) return false;
    throw new StartupError(`${name} must be 1 or 0 (true/false, yes/no), not "${env(name)}"`);
  };
  return {
    hostname: env("HOST") ?? "0.0.0.0",
    port: number("PORT", { integer: true, min: 0, max: 65535 }) ?? 8080,
    dataDir: env("NNSERVE_DATA_DIR") ?? "./data",
    kvPath: env("NNSERVE_KV_URL") ?? env("NNSERVE_KV_PATH"),
    databaseUrl: env("NNSERVE_DATABASE_URL"),
    replica: env("NNSERVE_REPLICA"),
    blobs: blobsFromEnv(env),
    apiKeys: apiKeysFromEnv(),
    workers: number("NNSERVE_WORKERS", { integer: true, min: 1 }),
    threads: number("NNSERVE_THREADS", { integer: true, min: 1 }),
    maxBodyBytes: bytes("NNSERVE_MAX_BODY_BYTES"),
    maxJsonBytes: bytes("NNSERVE_MAX_JSON_BYTES"),
    headerTimeoutSeconds: number("NNSERVE_HEADER_TIMEOUT", { min: 0 }) ??
      DEFAULT_HEADER_TIMEOUT_SECONDS,
    idleTimeoutSeconds: number("NNSERVE_IDLE_TIMEOUT", { min: 0 }) ??
      DEFAULT_IDLE_TIMEOUT_SECONDS,
    cacheBytes: number("NNSERVE_CACHE_BYTES", { integer: true, min: 0 }),
    inlineWork: number("NNSERVE_INLINE_WORK", { min: 0 }),
    gpu: flag("NNSERVE_GPU"),
    devices: deviceNames(env("NNSERVE_DEVICES")),
    shutdownTimeoutSeconds: number("NNSERVE_SHUTDOWN_TIMEOUT", { min: 0 }),
    stateTimeoutSeconds: number("NNSERVE_STATE_TIMEOUT", { min: 0.1, max: 3600 }),
    logLevel: logLevel(env("NNSERVE_LOG_LEVEL")),
    corsOrigins: env("NNSERVE_CORS_ORIGINS")?.split(",").map((o) => o.trim()).filter(Boolean),
    modelRepository: env("NNSERVE_MODEL_REPOSITORY"),
    grpcPort: number("NNSERVE_GRPC_PORT", { integer: true, min: 0, max: 65535 }),
    modelRepositoryMaxFileBytes: bytes("NNSERVE_REPOSITORY_MAX_FILE_BYTES"),
    burstIdleTimeoutSeconds: number("NNSERVE_BURST_IDLE_TIMEOUT", { min: 0 }),
    burstPollingWindowUs: number("NNSERVE_BURST_POLLING_WINDOW", { min: 0, max: 1_000_000 }),
    maxBurstsPerClient: number("NNSERVE_MAX_BURSTS_PER_CLIENT", { integer: true, min: 1 }),
    maxCompilationsPerClient: number("NNSERVE_MAX_COMPILATIONS_PER_CLIENT", {
      integer: true,
      min: 1,
    }),
    modelLimits: {
      maxOperands: number("NNSERVE_MAX_OPERANDS", { integer: true, min: 1 }) ??
        DEFAULT_MODEL_LIMITS.maxOperands,
      maxOperations: number("NNSERVE_MAX_OPERATIONS", { integer: true, min: 1 }) ??
        DEFAULT_MODEL_LIMITS.maxOperations,
      maxTensorElements: number("NNSERVE_MAX_TENSOR_ELEMENTS", { integer: true, min: 1 }) ??
        DEFAULT_MODEL_LIMITS.maxTensorElements,
      maxModelsPerClient: number("NNSERVE_MAX_MODELS_PER_CLIENT", { integer: true, min: 1 }) ??
        DEFAULT_MODEL_LIMITS.maxModelsPerClient,
    },
    imports: {
      maxConcurrent: number("NNSERVE_MAX_CONCURRENT_IMPORTS", { integer: true, min: 1 }) ??
        DEFAULT_IMPORT_LIMITS.maxConcurrent,
      // Above 0 (0 would stop every conversion at once); at most a day (a timer's range).
      timeoutSeconds: number("NNSERVE_IMPORT_TIMEOUT", { min: 0.001, max: 86_400 }) ??
        DEFAULT_IMPORT_LIMITS.timeoutSeconds,
      maxFoldedBytes: bytes("NNSERVE_MAX_IMPORT_FOLDED_BYTES") ??
        DEFAULT_IMPORT_LIMITS.maxFoldedBytes,
    },
    queueLimits: {
      total: number("NNSERVE_MAX_QUEUED", { integer: true, min: 0 }) ??
        DEFAULT_QUEUE_LIMITS.total,
      perClient: number("NNSERVE_MAX_QUEUED_PER_CLIENT", { integer: true, min: 0 }) ??
        DEFAULT_QUEUE_LIMITS.perClient,
    },
    memoryLimits: {
      maxMemoryBytes: bytes("NNSERVE_MAX_MEMORY_BYTES") ?? DEFAULT_MEMORY_LIMITS.maxMemoryBytes,
      clientBudgetBytes: bytes("NNSERVE_CLIENT_MEMORY_BUDGET") ??
        DEFAULT_MEMORY_LIMITS.clientBudgetBytes,
    },
    verbose: true,
  };
}

/**
 * NNSERVE_DEVICES' names (comma-separated), or undefined when unset; a name no device of
 * nnserve has, or none at all, is a StartupError.
 */
function deviceNames(text: string | undefined): string[] | undefined {
  if (text === undefined) return undefined;
  const names = text.split(",").map((name) => name.trim()).filter(Boolean);
  const unknown = names.filter((name) => !DEVICE_NAMES.includes(name));
  if (names.length === 0 || unknown.length > 0) {
    throw new StartupError(
      `NNSERVE_DEVICES must name devices among ${DEVICE_NAMES.join(", ")}, not "${text}"`,
    );
  }
  return names;
}

/** NNSERVE_LOG_LEVEL's value (default info); anything else is a StartupError. */
function logLevel(text: string | undefined): LogLevel {
  if (text === undefined) return "info";
  const level = LOG_LEVELS.find((l) => l === text.toLowerCase());
  if (!level) {
    throw new StartupError(
      `NNSERVE_LOG_LEVEL must be one of ${LOG_LEVELS.join(", ")}, not "${text}"`,
    );
  }
  return level;
}

/** NNSERVE_API_KEYS plus the lines of NNSERVE_API_KEYS_FILE; a key names one client. */
function apiKeysFromEnv(): ApiKeys {
  const keys: ApiKeys = new Map();
  try {
    parseApiKeys(Deno.env.get("NNSERVE_API_KEYS") ?? "", {
      source: "NNSERVE_API_KEYS",
      into: keys,
    });
    const file = Deno.env.get("NNSERVE_API_KEYS_FILE");
    if (file) {
      let text: string;
      try {
        text = Deno.readTextFileSync(file);
      } catch (error) {
        throw new StartupError(
          `NNSERVE_API_KEYS_FILE ${file} cannot be read: ${(error as Error).message}`,
        );
      }
      const before = keys.size;
      parseApiKeys(text, { source: `NNSERVE_API_KEYS_FILE ${file}`, into: keys });
      // An empty key file must not quietly open the service to everyone.
      if (keys.size === before && !text.trim()) {
        throw new StartupError(`NNSERVE_API_KEYS_FILE ${file} holds no name:key lines`);
      }
    }
  } catch (error) {
    if (error instanceof ApiKeysError) throw new StartupError(error.message);
    throw error;
  }
  return keys;
}

/** The blob store the environment names; undefined for the data dir's. */
function blobsFromEnv(env: (name: string) => string | undefined): ServerConfig["blobs"] {
  const dir = env("NNSERVE_BLOB_DIR");
  const bucket = env("NNSERVE_S3_BUCKET");
  if (dir !== undefined && bucket !== undefined) {
    throw new StartupError("NNSERVE_BLOB_DIR and NNSERVE_S3_BUCKET name two blob stores: set one");
  }
  if (dir !== undefined) return { dir };
  if (bucket === undefined) {
    if (env("NNSERVE_S3_ENDPOINT") !== undefined) {
      throw new StartupError("NNSERVE_S3_ENDPOINT needs NNSERVE_S3_BUCKET");
    }
    return undefined;
  }
  return {
    s3: { bucket, endpoint: env("NNSERVE_S3_ENDPOINT"), prefix: env("NNSERVE_S3_PREFIX") },
  };
}
