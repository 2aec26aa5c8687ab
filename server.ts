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
import { type ConnectionGuard, guardConnections, watchAnswer } from "./connection_guard/mod.ts";
import { startGrpc } from "./routes/grpc/server.ts";
import { discoverDevices } from "./driver/devices/device_list.ts";
import { DRIVER_VERSION } from "./driver/compilation/plan_codec.ts";
import type { Driver } from "./driver/driver.ts";
import { Service } from "./serving/service.ts";
import {
  isDirectory,
  loadModelRepository,
  type RepositoryEntry,
} from "./serving/model_repository.ts";
import { buildApp, DEFAULT_MAX_BODY_BYTES } from "./routes/app.ts";
import { batchedStdout } from "./routes/access_log.ts";
import { ANONYMOUS_CLIENT } from "./routes/auth.ts";
import type { Readiness } from "./routes/health.ts";
import { DataDirLockedError, lockDataDir } from "./store/data_dir_lock.ts";
import { removeTemporaries } from "./store/atomic_file.ts";

export {
  configFromEnv,
  DEFAULT_HEADER_TIMEOUT_SECONDS,
  DEFAULT_IDLE_TIMEOUT_SECONDS,
  DEFAULT_SHUTDOWN_TIMEOUT_SECONDS,
  type ServerConfig,
  SHUTDOWN_EXIT_MARGIN_SECONDS,
  StartupError,
} from "./server_config.ts";

/** What a graceful shutdown had to cut at its deadline. */
export interface ShutdownReport {
  /** HTTP requests still running at the deadline. */
  requests: number;
  /** Burst requests still in flight at the deadline. */
  burstRequests: number;
  /**
   * Whether the HTTP server had not stopped at the deadline and its connections were closed:
   * a request body that never finishes keeps its connection (and so the server) open after
   * its request ended.
   */
  closedConnections: boolean;
}

/** Where a {@link RunningServer.close} in progress is, for `main.ts`'s last word. */
export interface ShutdownState {
  /** What it is doing. */
  step: string;
  /** HTTP requests in flight when it began (method, path and age; never the query). */
  inFlightAtStart: string[];
  /** HTTP requests still running. */
  running: string[];
}

/** A running server. */
export interface RunningServer {
  url: string;
  port: number;
  /** The gRPC endpoint's port, when it serves one (NNSERVE_GRPC_PORT). */
  grpcPort?: number;
  driver: Driver;
  /** The driver with what the service adds (ONNX import, served models, announcements). */
  service: Service;
  /** Settles once the service is ready: the model repository (if any) loaded. */
  ready: Promise<RepositoryEntry[] | undefined>;
  /**
   * Graceful shutdown: stops accepting connections and reports not ready, lets in-flight
   * requests and burst requests finish until the shutdown timeout, closes bursts with 1001,
   * then releases everything; reports what it cut. Past the deadline it closes the
   * connections still open (with the connection guard; Deno.serve alone cannot, so without
   * it a client that never finishes its request body keeps `close` waiting: `main.ts` exits
   * anyway).
   */
  close(): Promise<ShutdownReport>;
  /** Where a `close` in progress is: what `main.ts` names when it stops waiting for it. */
  shutdownState(): ShutdownState;
}

/** How long the connections of requests cut at the shutdown deadline may still drain. */
const CUT_GRACE_MS = 1000;

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
    const timeoutSeconds = config.stateTimeoutSeconds;
    return await PostgresStateStore.open(config.databaseUrl, { timeoutSeconds }).catch((
      error: Error,
    ) => {
      throw new StartupError(`cannot open the database at ${where}: ${error.message}`);
    });
  }
  const kvPath = config.kvPath ?? `${config.dataDir}/nnserve.kv`;
  return await KvStateStore.open(kvPath).catch((error: Error) => {
    throw new StartupError(`cannot open the KV store ${kvPath}: ${error.message}`);
  });
}

/**
 * How old a temporary file in a blob directory other replicas may share must be before it is
 * taken for a crash's leftover: far longer than any write takes.
 */
const SHARED_TEMPORARY_AGE_MS = 60 * 60 * 1000;

/**
 * Removes, beside serving, what crashes left behind where other processes may be writing:
 * old temporary files in a shared blob directory, and memory and compilation cache blobs
 * nothing names (`memory/memory_blobs.ts`, `cache/compilation_cache.ts`). Logs what it
 * removed.
 */
function sweepShared(config: ServerConfig, driver: Driver, cache: CompilationCache): void {
  const dir = config.blobs !== undefined && "dir" in config.blobs ? config.blobs.dir : undefined;
  Promise.all([
    dir === undefined ? 0 : removeTemporaries(dir, SHARED_TEMPORARY_AGE_MS),
    driver.sweepOrphans(),
    cache.shared ? cache.sweepOrphans() : 0,
  ]).then(([temporaries, memoryBlobs, cacheBlobs]) => {
    if (temporaries + memoryBlobs + cacheBlobs > 0 && config.verbose) {
      console.log(
        `nnserve: removed ${temporaries} temporary file(s), ${memoryBlobs} memory blob(s) ` +
          `and ${cacheBlobs} compilation cache blob(s) that earlier crashes left`,
      );
    }
  }, (error: Error) => {
    console.error(`nnserve: could not sweep what earlier crashes left: ${error.message}`);
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
    // The data dir is this process's (locked): every temporary file in it is a crash's.
    await removeTemporaries(config.dataDir, 0).catch(unusableState(config.dataDir));
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
    const devices = await discoverDevices({
      gpu: config.gpu,
      names: config.devices,
    });
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
        imports: config.imports,
        maxBurstsPerClient: config.maxBurstsPerClient,
        burstPollingWindowUs: config.burstPollingWindowUs,
        maxCompilationsPerClient: config.maxCompilationsPerClient,
        inlineWork: config.inlineWork,
        devices,
        deviceCosts: config.deviceCosts,
      }));
    opened.push(() => service.close());
    const { driver } = service;
    sweepShared(config, driver, cache);
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
    const repositoryMaxFileBytes = config.modelRepositoryMaxFileBytes ?? config.maxBodyBytes ??
      DEFAULT_MAX_BODY_BYTES;
    // The access log's lines, written a batch per turn of the event loop.
    const stdout = batchedStdout();
    const app = buildApp(service, {
      apiKeys,
      maxBodyBytes: config.maxBodyBytes,
      maxJsonBytes: config.maxJsonBytes,
      bursts: { idleTimeoutSeconds: config.burstIdleTimeoutSeconds ?? 4, burst: config.burst },
      readiness: () => readiness,
      repositoryMaxFileBytes,
      corsOrigins: config.corsOrigins,
      modelRepository: repositoryDir,
      log: {
        level: config.logLevel ?? (config.verbose ? "info" : "off"),
        sink: config.logSink ?? stdout.sink,
      },
    });
    // The protocol's gRPC transport on its own port, when asked for (NNSERVE_GRPC_PORT).
    const grpcServer = config.grpcPort === undefined ? undefined : await startGrpc(service, {
      hostname: config.hostname,
      port: config.grpcPort,
      apiKeys,
      readiness: () => readiness,
      modelRepository: repositoryDir,
      maxFileBytes: repositoryMaxFileBytes,
      maxMessageBytes: config.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
    }).catch((error) => {
      throw new StartupError(
        `NNSERVE_GRPC_PORT ${config.grpcPort}: cannot serve gRPC (${error.message})`,
      );
    });
    if (grpcServer) opened.push(() => grpcServer.close());
    // Requests in flight and when each began, for the shutdown's drain and its report.
    const running = new Map<Request, number>();
    const describe = () => {
      const now = performance.now();
      return [...running].map(([request, began]) =>
        `${request.method} ${new URL(request.url).pathname} (for ${
          ((now - began) / 1000).toFixed(1)
        } s)`
      );
    };
    let shutdown: ShutdownState = { step: "not shutting down", inFlightAtStart: [], running: [] };
    const http = serveHttp(config, (request, info) => {
      running.set(request, performance.now());
      return watchAnswer(() => app.fetch(request, info), () => running.delete(request));
    });
    const shownHost = config.hostname === "0.0.0.0" ? "127.0.0.1" : config.hostname;
    if (config.verbose) console.log(`nnserve: listening on http://${shownHost}:${http.port}`);
    if (config.verbose && grpcServer) {
      console.log(`nnserve: gRPC (the Open Inference Protocol) on ${shownHost}:${grpcServer.port}`);
    }
    // The repository loads while the service already answers (liveness; readiness says 503).
    const ready = repositoryDir === undefined ? Promise.resolve(undefined) : loadModelRepository(
      service,
      repositoryDir,
      {
        clients: apiKeys.size > 0 ? [...new Set(apiKeys.values())] : [ANONYMOUS_CLIENT],
        maxFileBytes: repositoryMaxFileBytes,
        log: (line) => {
          if (config.verbose || line.includes(" failed: ")) console.log(line);
        },
      },
    ).then((repository) => {
      readiness = { ready: true, repository };
      return repository;
    }, (error) => {
      // Readiness is shown to anyone: the reason goes to the log only.
      readiness = { ready: false, waiting: "the model repository failed to load (see the log)" };
      console.error(`nnserve: the model repository failed: ${error.message}`);
      return undefined;
    });
    return {
      url: `http://${shownHost}:${http.port}`,
      port: http.port,
      ...(grpcServer ? { grpcPort: grpcServer.port } : {}),
      driver,
      service,
      ready,
      async close() {
        readiness = { ready: false, waiting: "the service is shutting down" };
        const timeout = config.shutdownTimeoutSeconds ?? DEFAULT_SHUTDOWN_TIMEOUT_SECONDS;
        const deadline = Date.now() + timeout * 1000;
        const step = (what: string) => shutdown.step = what;
        shutdown = {
          step: "draining in-flight requests and bursts",
          inFlightAtStart: describe(),
          running: [],
        };
        const stopped = http.shutdown(); // no new connections; waits for running requests
        const burstRequests = await driver.bursts.drain(deadline);
        let timer: ReturnType<typeof setTimeout> | undefined;
        const late = new Promise<"late">((resolve) => {
          timer = setTimeout(() => resolve("late"), Math.max(0, deadline - Date.now()));
        });
        const overdue = await Promise.race([stopped, late]) === "late";
        clearTimeout(timer);
        const requests = running.size;
        // Executions still running fail now (the executors stop), so their requests end.
        step("stopping the executors and closing the state");
        await undo();
        let closedConnections = false;
        if (overdue) {
          // What still holds the HTTP server (a body that never ends, say) ends with its
          // connection.
          step("closing the connections still open");
          closedConnections = await http.cut(CUT_GRACE_MS);
        }
        step(
          "waiting for the HTTP server to stop, which an open connection holds (a request " +
            "body unfinished, or a response unread)",
        );
        await stopped;
        stdout.flush();
        step("stopped");
        return { requests, burstRequests, closedConnections };
      },
      shutdownState: () => ({ ...shutdown, running: describe() }),
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
  /**
   * Closes every connection (after at most `graceMs` for answers to drain), which ends the
   * requests on them; only with the connection guard (Deno.serve cannot close one): false
   * without it.
   */
  cut(graceMs: number): Promise<boolean>;
}

/** Serves `handler`, its connections watched by the connection guard when a timeout is set. */
function serveHttp(
  config: ServerConfig,
  handler: Deno.ServeHandler<Deno.NetAddr>,
): HttpSide {
  const headerMs = (config.headerTimeoutSeconds ?? 0) * 1000;
  const idleMs = (config.idleTimeoutSeconds ?? 0) * 1000;
  const where = `${config.hostname}:${config.port}`;
  let guard: ConnectionGuard | undefined;
  if (headerMs > 0 || idleMs > 0) {
    const made = guardConnections({ headerMs, idleMs });
    if (typeof made === "string") {
      console.error(`nnserve: header and idle timeouts are not enforced: ${made}`);
    } else guard = made;
  }
  try {
    const server = Deno.serve({
      hostname: config.hostname,
      port: config.port,
      onListen: () => {},
    }, guard ? guard.handler(handler) : handler);
    guard?.watch(server.addr.port);
    const stopped = server.finished.finally(() => guard?.stop());
    return {
      port: server.addr.port,
      async shutdown() {
        await server.shutdown();
        await stopped;
      },
      async cut(graceMs) {
        if (!guard) return false;
        let timer: ReturnType<typeof setTimeout> | undefined;
        await Promise.race([
          stopped,
          new Promise((resolve) => timer = setTimeout(resolve, graceMs)),
        ]);
        clearTimeout(timer);
        guard.cut();
        return true;
      },
    };
  } catch (error) {
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
