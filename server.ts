/**
 * Builds and starts a complete nnserve instance (state and blob stores, driver, HTTP app).
 * `main.ts` calls it with the environment's configuration (`server_config.ts`); tests and
 * the conformance runner call it with a temporary data directory and port 0.
 */
import {
  DEFAULT_SHUTDOWN_TIMEOUT_SECONDS,
  type ServerConfig,
  StartupError,
} from "./server_config.ts";
import { type BlobStore, DirectoryBlobStore } from "./store/blob_store.ts";
import { S3BlobStore } from "./store/s3_blob_store.ts";
import { PostgresStateStore } from "./store/postgres_state.ts";
import { KvStateStore, type StateStore } from "./store/state_store.ts";
import { CompilationCache, DEFAULT_CACHE_BUDGET } from "./cache/compilation_cache.ts";
import { type ConnectionGuard, guardConnections } from "./connection_guard.ts";
import { discoverDevices } from "./driver/devices/device_list.ts";
import { DRIVER_VERSION } from "./driver/compilation/plan_codec.ts";
import type { Driver } from "./driver/driver.ts";
import { Service } from "./serving/service.ts";
import {
  isDirectory,
  loadModelRepository,
  type RepositoryEntry,
} from "./serving/model_repository.ts";
import { buildApp } from "./routes/app.ts";
import { ANONYMOUS_CLIENT } from "./routes/auth.ts";
import type { Readiness } from "./routes/health.ts";
import { DataDirLockedError, lockDataDir } from "./store/data_dir_lock.ts";

export {
  configFromEnv,
  DEFAULT_HEADER_TIMEOUT_SECONDS,
  DEFAULT_IDLE_TIMEOUT_SECONDS,
  DEFAULT_SHUTDOWN_TIMEOUT_SECONDS,
  type ServerConfig,
  StartupError,
} from "./server_config.ts";

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
  /** The driver with what the service adds (ONNX import, served models, announcements). */
  service: Service;
  /** Settles once the service is ready: the model repository (if any) loaded. */
  ready: Promise<RepositoryEntry[] | undefined>;
  /**
   * Graceful shutdown: stops accepting connections and reports not ready, lets in-flight
   * requests and burst requests finish until the shutdown timeout, closes bursts with 1001,
   * then releases everything; reports what it cut.
   */
  close(): Promise<ShutdownReport>;
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
    const blobs = openBlobs(config);
    const cache = await CompilationCache.open({
      kv,
      dir: `${config.dataDir}/cache`,
      // On a shared state store the cache is shared too: its files go to the blob store.
      blobs,
      budgetBytes: config.cacheBytes ?? DEFAULT_CACHE_BUDGET,
      version: config.driverVersion ?? DRIVER_VERSION,
    }).catch(unusableState(config.dataDir));
    const devices = await discoverDevices({ gpu: config.gpu ?? true });
    const service = openingState(config.dataDir, () =>
      new Service({
        kv,
        replica: config.replica,
        blobs,
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
    opened.push(() => service.close());
    const { driver } = service;
    const apiKeys = config.apiKeys ?? new Map();
    if (config.verbose && apiKeys.size === 0) {
      console.log("nnserve: no API keys configured; running open as one anonymous client");
    }
    if (config.verbose && config.databaseUrl !== undefined && config.blobs === undefined) {
      console.log(
        `nnserve: blobs (models, memories, the compilation cache) stay in ${config.dataDir}/blobs, ` +
          "which other replicas cannot read: set NNSERVE_BLOB_DIR or NNSERVE_S3_BUCKET for a cluster",
      );
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
    const app = buildApp(service, {
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
      service,
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
      service,
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
