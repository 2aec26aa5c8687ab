/**
 * Builds and starts a complete nnserve instance (KV, driver, HTTP app). `main.ts` calls it
 * with the environment's configuration; tests and the conformance runner call it with a
 * temporary data directory and port 0.
 */
import { CompilationCache, DEFAULT_CACHE_BUDGET } from "./cache/compilation_cache.ts";
import { DRIVER_VERSION } from "./driver/devices.ts";
import type { BurstOptions } from "./driver/burst.ts";
import { Driver } from "./driver/driver.ts";
import { DEFAULT_MEMORY_LIMITS, type MemoryLimits } from "./memory/pools.ts";
import { buildApp } from "./routes/app.ts";
import { type ApiKeys, parseApiKeys } from "./routes/auth.ts";

/** Everything a server instance needs to know. */
export interface ServerConfig {
  hostname: string;
  /** 0 picks a free port. */
  port: number;
  dataDir: string;
  /** A KV path or KV Connect URL; defaults to `<dataDir>/nnserve.kv`. */
  kvPath?: string;
  /** Client name by API key; empty means the open single-client mode. */
  apiKeys?: ApiKeys;
  workers?: number;
  /** Plans up to this many estimated multiply-adds run inline (NNSERVE_INLINE_WORK). */
  inlineWork?: number;
  /** Memory pool limits (NNSERVE_MAX_MEMORY_BYTES, NNSERVE_CLIENT_MEMORY_BUDGET). */
  memoryLimits?: MemoryLimits;
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
  /** Logs requests and start-up notes when true. */
  verbose?: boolean;
}

/** A running server. */
export interface RunningServer {
  url: string;
  port: number;
  driver: Driver;
  close(): Promise<void>;
}

/** Reads the server configuration from the environment (PORT, HOST, NNSERVE_*). */
export function configFromEnv(): ServerConfig {
  const env = (name: string) => Deno.env.get(name);
  const keysFile = env("NNSERVE_API_KEYS_FILE");
  const keysText = [env("NNSERVE_API_KEYS"), keysFile ? Deno.readTextFileSync(keysFile) : undefined]
    .filter(Boolean).join(",");
  return {
    hostname: env("HOST") ?? "0.0.0.0",
    port: Number(env("PORT") ?? 8080),
    dataDir: env("NNSERVE_DATA_DIR") ?? "./data",
    kvPath: env("NNSERVE_KV_URL") ?? env("NNSERVE_KV_PATH"),
    apiKeys: parseApiKeys(keysText),
    workers: env("NNSERVE_WORKERS") ? Number(env("NNSERVE_WORKERS")) : undefined,
    maxBodyBytes: env("NNSERVE_MAX_BODY_BYTES") ? Number(env("NNSERVE_MAX_BODY_BYTES")) : undefined,
    cacheBytes: env("NNSERVE_CACHE_BYTES") ? Number(env("NNSERVE_CACHE_BYTES")) : undefined,
    inlineWork: env("NNSERVE_INLINE_WORK") ? Number(env("NNSERVE_INLINE_WORK")) : undefined,
    burstIdleTimeoutSeconds: env("NNSERVE_BURST_IDLE_TIMEOUT")
      ? Number(env("NNSERVE_BURST_IDLE_TIMEOUT"))
      : undefined,
    memoryLimits: {
      maxMemoryBytes: Number(
        env("NNSERVE_MAX_MEMORY_BYTES") ?? DEFAULT_MEMORY_LIMITS.maxMemoryBytes,
      ),
      clientBudgetBytes: Number(
        env("NNSERVE_CLIENT_MEMORY_BUDGET") ?? DEFAULT_MEMORY_LIMITS.clientBudgetBytes,
      ),
    },
    verbose: true,
  };
}

/** Opens state, starts the executor workers and serves HTTP. */
export async function startServer(config: ServerConfig): Promise<RunningServer> {
  await Deno.mkdir(config.dataDir, { recursive: true });
  const kv = await Deno.openKv(config.kvPath ?? `${config.dataDir}/nnserve.kv`);
  const cache = await CompilationCache.open({
    kv,
    dir: `${config.dataDir}/cache`,
    budgetBytes: config.cacheBytes ?? DEFAULT_CACHE_BUDGET,
    version: config.driverVersion ?? DRIVER_VERSION,
  });
  const driver = new Driver({
    kv,
    dataDir: config.dataDir,
    cache,
    workers: config.workers ?? Math.max(1, navigator.hardwareConcurrency),
    memoryLimits: config.memoryLimits,
    inlineWork: config.inlineWork,
  });
  const apiKeys = config.apiKeys ?? new Map();
  if (config.verbose && apiKeys.size === 0) {
    console.log("nnserve: no API keys configured; running open as one anonymous client");
  }
  const app = buildApp(driver, {
    apiKeys,
    maxBodyBytes: config.maxBodyBytes,
    bursts: { idleTimeoutSeconds: config.burstIdleTimeoutSeconds ?? 4, burst: config.burst },
  });
  const server = Deno.serve({
    hostname: config.hostname,
    port: config.port,
    onListen: () => {},
  }, app.fetch);
  const { port } = server.addr;
  const shownHost = config.hostname === "0.0.0.0" ? "127.0.0.1" : config.hostname;
  if (config.verbose) console.log(`nnserve: listening on http://${shownHost}:${port}`);
  return {
    url: `http://${shownHost}:${port}`,
    port,
    driver,
    async close() {
      await server.shutdown();
      driver.close();
      kv.close();
    },
  };
}
