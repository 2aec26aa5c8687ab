/**
 * Builds and starts a complete nnserve instance (KV, driver, HTTP app). `main.ts` calls it
 * with the environment's configuration; tests and the conformance runner call it with a
 * temporary data directory and port 0.
 */
import { type BlobStore, DirectoryBlobStore } from "./store/blob_store.ts";
import { type S3BlobConfig, S3BlobStore } from "./store/s3_blob_store.ts";
import { PostgresStateStore } from "./store/postgres_state.ts";
import { KvStateStore, type StateStore } from "./store/state_store.ts";
import { CompilationCache, DEFAULT_CACHE_BUDGET } from "./cache/compilation_cache.ts";
import { type ConnectionGuard, guardConnections } from "./connection_guard.ts";
import { discoverDevices, DRIVER_VERSION } from "./driver/devices/registry.ts";
import type { BurstOptions } from "./driver/burst.ts";
import type { DeviceCosts } from "./driver/devices/device.ts";
import { Driver } from "./driver/driver.ts";
import { DEFAULT_QUEUE_LIMITS, type QueueLimits } from "./driver/executor_pool.ts";
import { DEFAULT_MODEL_LIMITS, type ModelLimits } from "./driver/model_registry.ts";
import { DEFAULT_MEMORY_LIMITS, type MemoryLimits } from "./memory/pools.ts";
import {
  isDirectory,
  loadModelRepository,
  type RepositoryEntry,
} from "./driver/model_repository.ts";
import { buildApp } from "./routes/app.ts";
import { ANONYMOUS_CLIENT, type ApiKeys, ApiKeysError, parseApiKeys } from "./routes/auth.ts";
import type { Readiness } from "./routes/health.ts";
import { LOG_LEVELS, type LogLevel, type LogSink } from "./routes/access_log.ts";
import { DataDirLockedError, lockDataDir } from "./store/data_dir_lock.ts";

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
  /** Burst limits (in-flight window, slot callback time, unread bytes). */
  burst?: Partial<BurstOptions>;
  /** Largest request body in bytes (NNSERVE_MAX_BODY_BYTES). */
  maxBodyBytes?: number;
  /** Largest JSON request body in bytes (NNSERVE_MAX_JSON_BYTES). */
  maxJsonBytes?: number;
  /**
   * Seconds a new connection has to deliver its first request head (NNSERVE_HEADER_TIMEOUT).
   * With this or `idleTimeoutSeconds` set above 0 the connections go through the connection
   * guard (connection_guard.ts); with neither, Deno.serve takes them directly, untimed.
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
  /** Device costs that replace the measured ones (tests that force a partition). */
  deviceCosts?: Record<string, DeviceCosts>;
  /**
   * A model repository directory (NNSERVE_MODEL_REPOSITORY) registered and compiled for
   * every client at start; `/readyz` answers 200 once it is.
   */
  modelRepository?: string;
  /**
   * Seconds `close` waits for in-flight requests and burst requests to finish before it cuts
   * them (NNSERVE_SHUTDOWN_TIMEOUT, default 30).
   */
  shutdownTimeoutSeconds?: number;
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

/** What a graceful shutdown had to cut at its deadline. */
export interface ShutdownReport {
  /** HTTP requests still running at the deadline. */
  requests: number;
  /** Burst requests still in flight at the deadline. */
  burstRequests: number;
}

/** A running server. */
export interface RunningServer {
  url: string;
  port: number;
  driver: Driver;
  /** Settles once the service is ready: the model repository (if any) loaded. */
  ready: Promise<RepositoryEntry[] | undefined>;
  /**
   * Graceful shutdown: stops accepting connections and reports not ready, lets in-flight
   * requests and burst requests finish until the shutdown timeout, closes bursts with 1001,
   * then releases everything; reports what it cut.
   */
  close(): Promise<ShutdownReport>;
}

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
    shutdownTimeoutSeconds: number("NNSERVE_SHUTDOWN_TIMEOUT", { min: 0 }),
    logLevel: logLevel(env("NNSERVE_LOG_LEVEL")),
    corsOrigins: env("NNSERVE_CORS_ORIGINS")?.split(",").map((o) => o.trim()).filter(Boolean),
    modelRepository: env("NNSERVE_MODEL_REPOSITORY"),
    burstIdleTimeoutSeconds: number("NNSERVE_BURST_IDLE_TIMEOUT", { min: 0 }),
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

/** Whether `error` is one of Deno's filesystem (or other OS) errors. */
function isOsError(error: unknown): error is Error {
  return Object.values(Deno.errors).some((kind) => error instanceof kind);
}

/**
 * Turns an OS error while opening the state at `path` (not a directory, no permission, ...)
 * into the start's one line; anything else passes.
 */
function unusableState(path: string): (error: unknown) => never {
  return (error) => {
    if (!isOsError(error)) throw error;
    throw new StartupError(`cannot use the data dir ${path}: ${error.message}`);
  };
}

/** Runs a synchronous step of opening the state, its OS errors as {@link unusableState}'s. */
function openingState<T>(path: string, open: () => T): T {
  try {
    return open();
  } catch (error) {
    return unusableState(path)(error);
  }
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

/** The configured blob store (the data dir's by default). */
export function openBlobs(config: ServerConfig): BlobStore {
  const blobs = config.blobs;
  if (blobs === undefined) return new DirectoryBlobStore(`${config.dataDir}/blobs`);
  return "dir" in blobs ? new DirectoryBlobStore(blobs.dir) : new S3BlobStore(blobs.s3);
}

/**
 * The state store: PostgreSQL when a database URL is configured, else the Deno KV file. Any
 * failure to open it is the start's (Deno's are plain Errors: "not a database").
 */
async function openState(config: ServerConfig): Promise<StateStore> {
  if (config.databaseUrl !== undefined) {
    // The URL may hold a password: the message names the host only.
    const where = URL.canParse(config.databaseUrl)
      ? new URL(config.databaseUrl).host
      : "(unparsable URL)";
    return await PostgresStateStore.open(config.databaseUrl).catch((error: Error) => {
      throw new StartupError(`cannot open the database at ${where}: ${error.message}`);
    });
  }
  const kvPath = config.kvPath ?? `${config.dataDir}/nnserve.kv`;
  return await KvStateStore.open(kvPath).catch((error: Error) => {
    throw new StartupError(`cannot open the KV store ${kvPath}: ${error.message}`);
  });
}

/** Opens state, starts the executor workers and serves HTTP. */
export async function startServer(config: ServerConfig): Promise<RunningServer> {
  await Deno.mkdir(config.dataDir, { recursive: true }).catch(unusableState(config.dataDir));
  const lock = await lockDataDir(config.dataDir).catch((error) => {
    throw error instanceof DataDirLockedError
      ? new StartupError(error.message)
      : unusableState(config.dataDir)(error);
  });
  // Whatever opened before a failure is closed again, the lock last.
  const opened: (() => void | Promise<void>)[] = [() => lock.release()];
  const undo = async () => {
    for (const close of opened.reverse()) await close();
  };
  try {
    const kv = await openState(config);
    opened.push(() => kv.close());
    const cache = await CompilationCache.open({
      kv,
      dir: `${config.dataDir}/cache`,
      budgetBytes: config.cacheBytes ?? DEFAULT_CACHE_BUDGET,
      version: config.driverVersion ?? DRIVER_VERSION,
    }).catch(unusableState(config.dataDir));
    const devices = await discoverDevices({ gpu: config.gpu ?? true });
    const driver = openingState(config.dataDir, () =>
      new Driver({
        kv,
        replica: config.replica,
        blobs: openBlobs(config),
        dataDir: config.dataDir,
        cache,
        workers: config.workers ?? Math.max(1, navigator.hardwareConcurrency),
        threads: config.threads ?? Math.max(1, navigator.hardwareConcurrency),
        memoryLimits: config.memoryLimits,
        queueLimits: config.queueLimits,
        modelLimits: config.modelLimits,
        maxBurstsPerClient: config.maxBurstsPerClient,
        maxCompilationsPerClient: config.maxCompilationsPerClient,
        inlineWork: config.inlineWork,
        devices,
        deviceCosts: config.deviceCosts,
      }));
    opened.push(() => driver.close());
    const apiKeys = config.apiKeys ?? new Map();
    if (config.verbose && apiKeys.size === 0) {
      console.log("nnserve: no API keys configured; running open as one anonymous client");
    }
    const repositoryDir = config.modelRepository;
    if (repositoryDir !== undefined && !(await isDirectory(repositoryDir))) {
      throw new StartupError(
        `NNSERVE_MODEL_REPOSITORY ${repositoryDir} is not a readable directory`,
      );
    }
    let readiness: Readiness = repositoryDir === undefined
      ? { ready: true }
      : { ready: false, waiting: `loading the model repository ${repositoryDir}` };
    const app = buildApp(driver, {
      apiKeys,
      maxBodyBytes: config.maxBodyBytes,
      maxJsonBytes: config.maxJsonBytes,
      bursts: { idleTimeoutSeconds: config.burstIdleTimeoutSeconds ?? 4, burst: config.burst },
      readiness: () => readiness,
      corsOrigins: config.corsOrigins,
      modelRepository: repositoryDir,
      log: {
        level: config.logLevel ?? (config.verbose ? "info" : "off"),
        sink: config.logSink ?? ((line) => console.log(line)),
      },
    });
    // Requests in flight, for the shutdown's drain.
    let active = 0;
    const http = serveHttp(config, async (request, info) => {
      active++;
      try {
        return await app.fetch(request, info);
      } finally {
        active--;
      }
    });
    const shownHost = config.hostname === "0.0.0.0" ? "127.0.0.1" : config.hostname;
    if (config.verbose) console.log(`nnserve: listening on http://${shownHost}:${http.port}`);
    // The repository loads while the service already answers (liveness; readiness says 503).
    const ready = repositoryDir === undefined ? Promise.resolve(undefined) : loadModelRepository(
      driver,
      repositoryDir,
      {
        clients: apiKeys.size > 0 ? [...new Set(apiKeys.values())] : [ANONYMOUS_CLIENT],
        log: (line) => {
          if (config.verbose || line.includes(" failed: ")) console.log(line);
        },
      },
    ).then((repository) => {
      readiness = { ready: true, repository };
      return repository;
    }, (error) => {
      readiness = { ready: false, waiting: `the model repository failed: ${error.message}` };
      console.error(`nnserve: the model repository failed: ${error.message}`);
      return undefined;
    });
    return {
      url: `http://${shownHost}:${http.port}`,
      port: http.port,
      driver,
      ready,
      async close() {
        readiness = { ready: false, waiting: "the service is shutting down" };
        const timeout = config.shutdownTimeoutSeconds ?? DEFAULT_SHUTDOWN_TIMEOUT_SECONDS;
        const deadline = Date.now() + timeout * 1000;
        const stopped = http.shutdown(); // no new connections; waits for running requests
        const burstRequests = await driver.bursts.drain(deadline);
        let timer: ReturnType<typeof setTimeout> | undefined;
        const late = new Promise<"late">((resolve) => {
          timer = setTimeout(() => resolve("late"), Math.max(0, deadline - Date.now()));
        });
        const requests = await Promise.race([stopped, late]) === "late" ? active : 0;
        clearTimeout(timer);
        // Executions still running fail now (the executors stop), so their requests end.
        await undo();
        await stopped;
        return { requests, burstRequests };
      },
    };
  } catch (error) {
    await undo();
    throw error;
  }
}

/** The HTTP side of a server: its port and a graceful shutdown. */
interface HttpSide {
  port: number;
  shutdown(): Promise<void>;
}

/** Serves `handler`: through the connection guard when a timeout is set, else directly. */
function serveHttp(config: ServerConfig, handler: Deno.ServeHandler<Deno.NetAddr>): HttpSide {
  const headerMs = (config.headerTimeoutSeconds ?? 0) * 1000;
  const idleMs = (config.idleTimeoutSeconds ?? 0) * 1000;
  const where = `${config.hostname}:${config.port}`;
  let guard: ConnectionGuard | undefined;
  try {
    if (headerMs > 0 || idleMs > 0) {
      guard = guardConnections(config, { headerMs, idleMs });
    }
    const server = Deno.serve({
      // Behind the guard the server is private: loopback, a free port.
      hostname: guard ? "127.0.0.1" : config.hostname,
      port: guard ? 0 : config.port,
      onListen: () => {},
    }, guard ? guard.handler(handler) : handler);
    guard?.start(server.addr.port);
    return {
      port: guard ? guard.addr.port : server.addr.port,
      async shutdown() {
        await guard?.stopAccepting();
        await server.shutdown();
        await guard?.closeAll();
      },
    };
  } catch (error) {
    guard?.stopAccepting(); // closes the public listener at once
    if (error instanceof Deno.errors.AddrInUse) {
      throw new StartupError(`cannot listen on ${where}: the address is in use`);
    }
    if (
      error instanceof Deno.errors.AddrNotAvailable || error instanceof Deno.errors.PermissionDenied
    ) {
      throw new StartupError(`cannot listen on ${where}: ${error.message}`);
    }
    throw error;
  }
}
