/**
 * What a test of several nnserve replicas behind Debian's haproxy needs, written once: the
 * shared stores (PostgreSQL for the state, s3rver for the blobs), replicas as real
 * `main.ts` processes (so one can be SIGKILLed and restarted on the port the balancer's
 * config names), haproxy with `deploy/haproxy.cfg`, and the teardown of all of it. A child's
 * output is read continuously, since a full pipe would block the child, and its tail kept
 * for failure messages.
 */
import { ok, strictEqual } from "node:assert/strict";
import type { S3BlobConfig } from "../store/s3_blob_store.ts";
import { startPostgres, type TestPostgres } from "./postgres_fixture.ts";
import { startS3, type TestS3 } from "./s3_fixture.ts";
import { mainProcess, startTestServer, type TestServer } from "./server_fixture.ts";
import type { ServerConfig } from "../server.ts";
import { type OutputLine, OutputTail } from "./output_tail.ts";

/** A free loopback port (free when asked: the caller binds it soon after). */
export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** PostgreSQL and s3rver, which every replica of a cluster shares. */
export interface SharedStores {
  postgres: TestPostgres;
  s3: TestS3;
  databaseUrl: string;
  /** The bucket for `startTestServer`'s `blobs`. */
  blobs: { s3: S3BlobConfig };
  /** The same, as the environment of a `main.ts` process (server_config.ts, s3_blob_store.ts). */
  env: Record<string, string>;
  stop(): Promise<void>;
}

/** Starts PostgreSQL (with a database `name`) and s3rver (with a bucket `name`). */
export async function startSharedStores(name: string): Promise<SharedStores> {
  const postgres = await startPostgres();
  let s3: TestS3 | undefined;
  try {
    s3 = await startS3(name);
    const databaseUrl = await postgres.database(name);
    const { endpoint, credentials } = s3;
    const running = s3;
    return {
      postgres,
      s3,
      databaseUrl,
      blobs: { s3: { bucket: name, endpoint, credentials } },
      env: {
        NNSERVE_DATABASE_URL: databaseUrl,
        NNSERVE_S3_BUCKET: name,
        NNSERVE_S3_ENDPOINT: endpoint,
        AWS_ACCESS_KEY_ID: credentials.accessKeyId,
        AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
        AWS_REGION: "us-east-1",
      },
      async stop() {
        try {
          await running.stop();
        } finally {
          await postgres.stop();
        }
      },
    };
  } catch (error) {
    await s3?.stop().catch(() => {});
    await postgres.stop();
    throw error;
  }
}

/**
 * Waits for a child to exit after `signal`, escalating to SIGKILL past `graceMs`; its exit
 * status.
 */
async function endChild(
  child: Deno.ChildProcess,
  signal: Deno.Signal,
  graceMs: number,
): Promise<Deno.CommandStatus> {
  try {
    child.kill(signal);
  } catch {
    // It exited already.
  }
  const timer = setTimeout(() => {
    try {
      child.kill("SIGKILL");
    } catch {
      // It exited meanwhile.
    }
  }, graceMs);
  try {
    return await child.status;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * One nnserve replica as a real `main.ts` process on a fixed loopback port: the balancer's
 * config names fixed addresses, so a restart must come back on the same port. Each start
 * gets a fresh, empty data directory (a restart is a replica whose local disk was lost);
 * `stop` removes them all.
 */
export class ReplicaProcess {
  /** NNSERVE_REPLICA: what `X-Nnserve-Replica`, /readyz and the devices say. */
  readonly name: string;
  readonly port: number;
  readonly url: string;
  readonly #env: Record<string, string>;
  readonly #dataDirs: string[] = [];
  #child: Deno.ChildProcess | undefined;
  #stdout: OutputTail | undefined;
  #stderr: OutputTail | undefined;

  private constructor(name: string, port: number, env: Record<string, string>) {
    this.name = name;
    this.port = port;
    this.url = `http://127.0.0.1:${port}`;
    this.#env = env;
  }

  /** Starts `main.ts` as replica `name` on `port`; resolves once it listens. */
  static async start(
    name: string,
    options: { port: number; env: Record<string, string> },
  ): Promise<ReplicaProcess> {
    const replica = new ReplicaProcess(name, options.port, options.env);
    try {
      await replica.#spawn();
    } catch (error) {
      await replica.stop();
      throw error;
    }
    return replica;
  }

  /** The data directory of the running (or last) process. */
  get dataDir(): string {
    return this.#dataDirs.at(-1)!;
  }

  /** Whether a process runs (started and not yet seen to exit by `kill`). */
  get running(): boolean {
    return this.#child !== undefined;
  }

  /** The tails of the process's stdout and stderr, for failure messages. */
  output(): string {
    return `${this.name} stdout:\n${this.#stdout?.tail() ?? ""}\n${this.name} stderr:\n${
      this.#stderr?.tail() ?? ""
    }`;
  }

  async #spawn(): Promise<void> {
    const dataDir = await Deno.makeTempDir({ prefix: `nnserve-${this.name}-` });
    this.#dataDirs.push(dataDir);
    const child = mainProcess(dataDir, {
      // One second of drain at teardown is plenty for a test, and keeps it short.
      NNSERVE_SHUTDOWN_TIMEOUT: "1",
      // The gpu device costs a second of start-up and is no part of clustering.
      NNSERVE_GPU: "0",
      ...this.#env,
      NNSERVE_REPLICA: this.name,
      PORT: String(this.port),
    });
    this.#child = child;
    this.#stdout = new OutputTail(child.stdout, 500);
    this.#stderr = new OutputTail(child.stderr, 500);
    let url: string | undefined;
    try {
      const line = await this.#stdout.waitFor(/listening on http:\S+/, { timeoutMs: 30_000 });
      url = /listening on (http:\S+)/.exec(line.text)?.[1];
    } catch (error) {
      // A start that failed says why on stderr (one line, main.ts).
      await pause(100);
      throw new Error(
        `replica ${this.name} did not start: ${(error as Error).message}\n${this.output()}`,
      );
    }
    strictEqual(url, this.url, `replica ${this.name} listens where the balancer expects it`);
  }

  /**
   * Sends `signal` (SIGKILL by default: no drain, no goodbye) and waits until the process has
   * exited and its output ended.
   */
  async kill(signal: Deno.Signal = "SIGKILL"): Promise<Deno.CommandStatus> {
    const child = this.#child;
    ok(child, `replica ${this.name} runs`);
    const status = await endChild(child, signal, 10_000);
    await Promise.all([this.#stdout?.done, this.#stderr?.done]);
    this.#child = undefined;
    return status;
  }

  /** Starts the replica again, same name and port, on a fresh empty data directory. */
  async restart(): Promise<void> {
    ok(!this.#child, `replica ${this.name} was stopped before its restart`);
    await this.#spawn();
  }

  /** Stops the process (SIGTERM, then SIGKILL) and removes every data directory it had. */
  async stop(): Promise<void> {
    if (this.#child) {
      await endChild(this.#child, "SIGTERM", 5_000);
      await Promise.all([this.#stdout?.done, this.#stderr?.done]);
      this.#child = undefined;
    }
    for (const dir of this.#dataDirs.splice(0)) {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  }
}

/** haproxy's name for the `i`-th (from 0) replica address of `deploy/haproxy.cfg`. */
export function serverName(i: number): string {
  return `replica-${i + 1}`;
}

/**
 * Debian's haproxy running `deploy/haproxy.cfg` in the foreground on a free loopback port.
 * Its stderr says when a server goes DOWN or comes UP (what `waitForServer` watches); its
 * stdout is the access log, one line per request.
 */
export class Balancer {
  readonly port: number;
  readonly url: string;
  /** The access log (`option httplog`). */
  readonly stdout: OutputTail;
  /** Warnings, among them each server's state changes. */
  readonly stderr: OutputTail;
  readonly #child: Deno.ChildProcess;

  private constructor(port: number, child: Deno.ChildProcess) {
    this.port = port;
    this.url = `http://127.0.0.1:${port}`;
    this.#child = child;
    this.stdout = new OutputTail(child.stdout, 500);
    this.stderr = new OutputTail(child.stderr, 2000);
  }

  /**
   * Starts haproxy in front of `addresses` (`host:port`, NNSERVE_REPLICA_1..n in order) and
   * waits until it serves `/readyz` with 200 (a server passed its checks).
   */
  static async start(addresses: readonly string[]): Promise<Balancer> {
    const port = freePort();
    const child = new Deno.Command("haproxy", {
      args: ["-db", "-f", new URL("../deploy/haproxy.cfg", import.meta.url).pathname],
      env: {
        NNSERVE_LB_BIND: `127.0.0.1:${port}`,
        ...Object.fromEntries(addresses.map((a, i) => [`NNSERVE_REPLICA_${i + 1}`, a])),
      },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const balancer = new Balancer(port, child);
    let up = false;
    for (let i = 0; i < 100 && !up; i++) {
      up = await fetch(`${balancer.url}/readyz`).then(async (r) => {
        await r.body?.cancel();
        return r.ok;
      }, () => false);
      if (!up) await pause(100);
    }
    if (!up) {
      const said = balancer.output();
      await balancer.stop();
      throw new Error(`haproxy did not serve /readyz within 10 s:\n${said}`);
    }
    return balancer;
  }

  /** The tail of haproxy's warnings and access log, for failure messages. */
  output(): string {
    return `haproxy stderr:\n${this.stderr.tail()}\nhaproxy access log:\n${this.stdout.tail(20)}`;
  }

  /**
   * Waits for haproxy to say that `server` (`replica-1`, ...) is `state`, in a line
   * numbered `from` or later (`stderr.count` before the change); the line and its time.
   */
  waitForServer(
    server: string,
    state: "UP" | "DOWN",
    options: { from: number; timeoutMs: number },
  ): Promise<OutputLine> {
    return this.stderr.waitFor(new RegExp(`Server replicas/${server} is ${state}\\b`), options);
  }

  /** Stops haproxy and waits for its output to end. */
  async stop(): Promise<void> {
    await endChild(this.#child, "SIGTERM", 5_000);
    await Promise.all([this.stdout.done, this.stderr.done]);
  }
}

/** Closes an in-process replica and removes its data directory. */
export async function closeReplica(replica: TestServer): Promise<void> {
  await replica.close();
  await Deno.remove(replica.dataDir, { recursive: true });
}

/**
 * In-process replicas named `names` on the shared stores (one executor worker each, and
 * `options`); `cleanup` closes those still in the returned list (a test that stops one
 * itself takes it out first).
 */
export async function startReplicas(
  stores: SharedStores,
  names: readonly string[],
  cleanup: AsyncDisposableStack,
  options: Partial<ServerConfig> = {},
): Promise<TestServer[]> {
  const replicas: TestServer[] = [];
  cleanup.defer(async () => {
    for (const replica of replicas.splice(0)) await closeReplica(replica);
  });
  for (const replica of names) {
    replicas.push(
      await startTestServer({
        databaseUrl: stores.databaseUrl,
        blobs: stores.blobs,
        replica,
        workers: 1,
        ...options,
      }),
    );
  }
  return replicas;
}

/** Shared stores, replica processes and the balancer in front of them. */
export interface Cluster extends AsyncDisposable {
  stores: SharedStores;
  balancer: Balancer;
  /** In the balancer's order: `replicas[i]` is haproxy's `serverName(i)`. */
  replicas: ReplicaProcess[];
  /** The replica named `name`. */
  replica(name: string): ReplicaProcess;
  /** haproxy's name for the replica named `name`. */
  serverOf(name: string): string;
  /** Every process's output tail, for failure messages. */
  output(): string;
}

/**
 * Starts PostgreSQL, s3rver, one `main.ts` process per name (one after another, so that no
 * replica's start-up device calibration runs while another replica starts), and haproxy in
 * front of them. Disposing it stops all of them and removes their directories, whatever
 * failed; a failed start undoes what it started.
 */
export async function startCluster(
  names: readonly string[],
  options: { database?: string; env?: Record<string, string> } = {},
): Promise<Cluster> {
  const stack = new AsyncDisposableStack();
  try {
    const stores = await startSharedStores(options.database ?? "cluster");
    stack.defer(() => stores.stop());
    const replicas: ReplicaProcess[] = [];
    stack.defer(async () => {
      // Every replica is stopped even if one stop fails.
      const results = await Promise.allSettled(replicas.map((r) => r.stop()));
      const failed = results.find((r) => r.status === "rejected");
      if (failed) throw (failed as PromiseRejectedResult).reason;
    });
    for (const name of names) {
      replicas.push(
        await ReplicaProcess.start(name, {
          port: freePort(),
          env: { ...stores.env, ...options.env },
        }),
      );
    }
    const balancer = await Balancer.start(replicas.map((r) => `127.0.0.1:${r.port}`));
    stack.defer(() => balancer.stop());
    const moved = stack.move();
    const replica = (name: string) => {
      const found = replicas.find((r) => r.name === name);
      ok(found, `a replica named ${name}`);
      return found;
    };
    return {
      stores,
      balancer,
      replicas,
      replica,
      serverOf: (name) => serverName(replicas.indexOf(replica(name))),
      output: () => [...replicas.map((r) => r.output()), balancer.output()].join("\n"),
      [Symbol.asyncDispose]: () => moved.disposeAsync(),
    };
  } catch (error) {
    await stack.disposeAsync();
    throw error;
  }
}

/** The answer to one JSON execution: its status, the replica that answered, its body. */
export interface ExecutionAnswer {
  status: number;
  replica: string | null;
  // deno-lint-ignore no-explicit-any
  body: any;
}

/** One execution of `compilation` through `base` (a replica or the balancer). */
export async function executeVia(
  base: string,
  compilation: string,
  request: unknown,
): Promise<ExecutionAnswer> {
  const response = await fetch(`${base}/v1/compilations/${compilation}/executions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(request),
  });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON (haproxy's own 502/503 page): kept as text for the message.
  }
  return { status: response.status, replica: response.headers.get("x-nnserve-replica"), body };
}
