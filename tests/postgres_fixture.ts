/**
 * A real PostgreSQL for tests: Debian's `postgresql` package (`.ci/run` installs it), a
 * fresh cluster in a temporary directory made with `initdb` and run with `pg_ctl` on a free
 * loopback port, as the unprivileged `postgres` user when the tests run as root (PostgreSQL
 * refuses root). Missing binaries fail the test that asks for a server: never a skip.
 */

/** A running test cluster. */
export interface TestPostgres {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` (trust authentication, loopback only). */
  url: string;
  /** A new, empty database on the cluster; its URL. */
  database(name: string): Promise<string>;
  /** Stops the server and keeps its data: an outage, until `resume`. */
  pause(): Promise<void>;
  /** Starts the paused server again, on the same port with the same data. */
  resume(): Promise<void>;
  stop(): Promise<void>;
}

/** The directory of the PostgreSQL server binaries (`initdb`, `pg_ctl`, `postgres`). */
async function binaries(): Promise<string> {
  const root = "/usr/lib/postgresql";
  const versions: number[] = [];
  try {
    for await (const entry of Deno.readDir(root)) {
      if (/^\d+$/.test(entry.name)) versions.push(Number(entry.name));
    }
  } catch {
    // reported below
  }
  if (versions.length === 0) {
    throw new Error(
      `no PostgreSQL server under ${root}: install Debian's postgresql package (.ci/run does)`,
    );
  }
  return `${root}/${Math.max(...versions)}/bin`;
}

async function run(command: string, args: string[], asUser?: string): Promise<string> {
  const [program, programArgs] = asUser === undefined
    ? [command, args]
    : ["runuser", ["-u", asUser, "--", command, ...args]];
  const output = await new Deno.Command(program, {
    args: programArgs,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(output.stdout) + new TextDecoder().decode(output.stderr);
  if (!output.success) throw new Error(`${command} ${args.join(" ")} failed:\n${text}`);
  return text;
}

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

/** Starts a fresh cluster. */
export async function startPostgres(): Promise<TestPostgres> {
  const bin = await binaries();
  const root = Deno.uid() === 0;
  const user = root ? "postgres" : undefined;
  const dir = await Deno.makeTempDir({ prefix: "nnserve-pg-" });
  if (root) {
    const uid = Number((await run("id", ["-u", "postgres"])).trim());
    const gid = Number((await run("id", ["-g", "postgres"])).trim());
    await Deno.chown(dir, uid, gid);
  }
  const data = `${dir}/data`;
  await run(`${bin}/initdb`, ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8"], user);
  const port = freePort();
  const start = () =>
    run(`${bin}/pg_ctl`, [
      "-D",
      data,
      "-l",
      `${dir}/log`,
      "-w",
      "-o",
      `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
      "start",
    ], user);
  await start();
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  return {
    url,
    async database(name) {
      await run(`${bin}/psql`, [url, "-q", "-c", `CREATE DATABASE "${name}"`], user);
      return `postgres://postgres@127.0.0.1:${port}/${name}`;
    },
    async pause() {
      await run(`${bin}/pg_ctl`, ["-D", data, "-m", "immediate", "-w", "stop"], user);
    },
    async resume() {
      await start();
    },
    async stop() {
      await run(`${bin}/pg_ctl`, ["-D", data, "-m", "immediate", "-w", "stop"], user)
        .catch(() => {});
      await Deno.remove(dir, { recursive: true });
    },
  };
}
