/**
 * The container, without a container engine (none can be installed where the tests run, and
 * the base image's registry is out of reach): the Dockerfile's instructions are carried out
 * on a clean copy of the build context (git's files less `.dockerignore`) inside a scratch
 * root, the image's absolute paths (`/deps`, `/app`, `/data`, `/models`) moved under it, with
 * a fresh Deno cache, this Deno as the image's `deno`, and `chown` recorded (the image's user
 * does not exist here). Then the image's CMD serves a model baked into `/models`, and its
 * HEALTHCHECK fails before the service is ready and passes after.
 *
 * Checked: the dependency layer comes before the sources and installs the service's packages
 * only (no test or benchmark peers); the source layer downloads nothing; the cache step names
 * every worker the service starts by URL; a non-root user, the volumes, the health check on
 * `/readyz`; the base image's Deno is the one tested; compose mounts a repository. Not
 * checked: the base image itself and running as its `deno` user.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { RUNTIME_IMPORTS } from "../tools/image_deps.ts";
import { addModel, finishWithin } from "./server_fixture.ts";

const REPO = new URL("../", import.meta.url).pathname;

interface Instruction {
  keyword: string;
  args: string;
}

/** The Dockerfile's instructions: continuations joined, comments dropped. */
function parseDockerfile(text: string): Instruction[] {
  const lines = text.split("\n").filter((l) => !/^\s*#/.test(l));
  const joined = lines.join("\n").replace(/\\\n/g, " ");
  return joined.split("\n").map((l) => l.trim()).filter(Boolean).map((line) => {
    const [keyword] = line.split(/\s+/);
    return { keyword: keyword.toUpperCase(), args: line.slice(keyword.length).trim() };
  });
}

/** The files of the build context: git's (tracked or not ignored) less `.dockerignore`. */
async function buildContext(): Promise<string[]> {
  const listed = await new Deno.Command("git", {
    args: ["ls-files", "-co", "--exclude-standard"],
    cwd: REPO,
    stdout: "piped",
  }).output();
  strictEqual(listed.code, 0, "git ls-files");
  const ignored = (await Deno.readTextFile(`${REPO}.dockerignore`)).split("\n")
    .map((l) => l.trim()).filter((l) => l && !l.startsWith("#"));
  const excluded = (file: string) =>
    ignored.some((pattern) =>
      pattern.endsWith("/")
        ? file.startsWith(pattern)
        : pattern.startsWith("*.")
        ? file.endsWith(pattern.slice(1))
        : file === pattern
    );
  const files = new TextDecoder().decode(listed.stdout).split("\n").filter(Boolean);
  const present = [];
  for (const file of files.filter((f) => !excluded(f))) {
    // Listed but deleted in the working tree: not part of the context.
    if (await Deno.stat(`${REPO}${file}`).then(() => true, () => false)) present.push(file);
  }
  return present;
}

/** npm packages in a Deno cache (`name` or `@scope/name`). */
async function cachedPackages(denoDir: string): Promise<string[]> {
  const registry = `${denoDir}/npm/registry.npmjs.org`;
  const names: string[] = [];
  for await (const entry of Deno.readDir(registry)) {
    if (!entry.name.startsWith("@")) names.push(entry.name);
    else {
      for await (const scoped of Deno.readDir(`${registry}/${entry.name}`)) {
        names.push(`${entry.name}/${scoped.name}`);
      }
    }
  }
  return names.sort();
}

/** The workers the service starts by URL (`new URL("./x.ts", import.meta.url)`), repo-relative. */
async function workerEntries(): Promise<string[]> {
  const found = new Set<string>();
  for (const file of await buildContext()) {
    if (!file.endsWith(".ts") || file.endsWith("_test.ts") || file.startsWith("tools/")) continue;
    const text = await Deno.readTextFile(`${REPO}${file}`);
    for (const match of text.matchAll(/new URL\("\.\/([\w/]+\.ts)", import\.meta\.url\)/g)) {
      found.add(`${file.slice(0, file.lastIndexOf("/") + 1)}${match[1]}`);
    }
  }
  return [...found].sort();
}

/** The image as the instructions leave it, and what running them saw. */
interface Built {
  root: string;
  denoDir: string;
  env: Record<string, string>;
  workdir: string;
  user?: string;
  volumes: string[];
  healthcheck?: string[];
  cmd?: string[];
  from?: string;
  /** Packages in the cache after each RUN, in order. */
  packagesAfterRun: string[][];
  /** Each COPY's sources, in order. */
  copies: string[][];
  chowned: string;
}

/** Carries out the Dockerfile's instructions under a scratch root. */
async function build(): Promise<Built> {
  const instructions = parseDockerfile(await Deno.readTextFile(`${REPO}Dockerfile`));
  const root = await Deno.makeTempDir({ prefix: "nnserve-image-" });
  const bin = `${root}/.bin`;
  await Deno.mkdir(bin);
  await Deno.symlink(Deno.execPath(), `${bin}/deno`);
  const chownLog = `${root}/.chown`;
  await Deno.writeTextFile(
    `${bin}/chown`,
    `#!/bin/sh\nfor a in "$@"; do :; done\ntest -e "$a" || exit 1\necho "$*" >> ${chownLog}\n`,
    { mode: 0o755 },
  );
  const built: Built = {
    root,
    denoDir: `${root}/deno-dir`,
    env: {},
    workdir: "/",
    volumes: [],
    packagesAfterRun: [],
    copies: [],
    chowned: "",
  };
  // The image's absolute paths, moved under the root.
  const inRoot = (text: string) =>
    text.replace(/(^|[\s=:])\/(deps|app|data|models)\b/g, `$1${root}/$2`);
  const context = await buildContext();
  const json = (args: string) => JSON.parse(args) as string[];
  for (const { keyword, args } of instructions) {
    switch (keyword) {
      case "FROM":
        built.from = args;
        break;
      case "WORKDIR":
        built.workdir = args;
        await Deno.mkdir(inRoot(args), { recursive: true });
        break;
      case "COPY": {
        const parts = args.split(/\s+/);
        const sources = parts.slice(0, -1), dest = parts.at(-1)!;
        built.copies.push(sources);
        const target = dest.startsWith("/") ? inRoot(dest) : `${inRoot(built.workdir)}/${dest}`;
        for (const source of sources) {
          const files = source === "." ? context : context.filter((f) => f === source);
          ok(files.length > 0, `COPY ${source}: in the build context`);
          for (const file of files) {
            // A single file lands in the destination directory; "." keeps its tree.
            const to = source === "." ? `${target}/${file}` : `${target}/${file.split("/").pop()}`;
            await Deno.mkdir(to.slice(0, to.lastIndexOf("/")), { recursive: true });
            await Deno.copyFile(`${REPO}${file}`, to);
          }
        }
        break;
      }
      case "RUN": {
        const run = await new Deno.Command("bash", {
          args: ["-ec", inRoot(args)],
          cwd: inRoot(built.workdir),
          env: {
            ...Object.fromEntries(Object.entries(built.env).map(([k, v]) => [k, inRoot(v)])),
            PATH: `${bin}:${Deno.env.get("PATH")}`,
            DENO_DIR: built.denoDir,
            NO_COLOR: "1",
          },
          stdout: "piped",
          stderr: "piped",
        }).output();
        const output = new TextDecoder().decode(run.stderr) + new TextDecoder().decode(run.stdout);
        strictEqual(run.code, 0, `RUN ${args}\n${output}`);
        built.packagesAfterRun.push(await cachedPackages(built.denoDir));
        break;
      }
      case "ENV":
        for (const pair of args.split(/\s+/)) {
          const at = pair.indexOf("=");
          built.env[pair.slice(0, at)] = pair.slice(at + 1);
        }
        break;
      case "VOLUME":
        built.volumes.push(...args.split(/\s+/));
        break;
      case "USER":
        built.user = args;
        break;
      case "HEALTHCHECK":
        built.healthcheck = json(args.slice(args.indexOf("CMD ") + 4));
        break;
      case "CMD":
        built.cmd = json(args);
        break;
      case "EXPOSE":
        break;
      default:
        throw new Error(`the test does not know the instruction ${keyword}`);
    }
  }
  built.chowned = await Deno.readTextFile(chownLog).catch(() => "");
  return {
    ...built,
    env: Object.fromEntries(Object.entries(built.env).map(([k, v]) => [k, inRoot(v)])),
  };
}

/** Runs a `deno` command of the image (its entrypoint prefixes `deno` to subcommands). */
function imageCommand(built: Built, args: string[], env: Record<string, string>) {
  return new Deno.Command(Deno.execPath(), {
    args: args[0] === "deno" ? args.slice(1) : args,
    cwd: `${built.root}${built.workdir}`,
    env: { ...built.env, DENO_DIR: built.denoDir, NO_COLOR: "1", ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  });
}

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

Deno.test("the Dockerfile's steps build a working image from a clean copy: dependency layer, repository, health check", async () => {
  const built = await build();
  try {
    // The base image's Deno is the one these tests run on.
    strictEqual(built.from, `denoland/deno:${Deno.version.deno}`);
    // Dependencies first, alone in their layer: the lock, the config and the cutter.
    deepStrictEqual(built.copies[0].sort(), ["deno.json", "deno.lock", "tools/image_deps.ts"]);
    deepStrictEqual(built.copies[1], ["."], "the sources come after the dependency layer");
    const [afterDeps, afterSources] = built.packagesAfterRun;
    for (const name of ["hono", "zod", "@hono/zod-openapi", "onnx-proto", "onnxruntime-node"]) {
      ok(afterDeps.includes(name), `the dependency layer has ${name}: ${afterDeps}`);
    }
    for (const peer of ["onnxruntime-web", "playwright-core"]) {
      ok(!afterDeps.includes(peer), `no ${peer} in the image`);
    }
    ok(RUNTIME_IMPORTS.includes("onnx-proto"));
    deepStrictEqual(afterSources, afterDeps, "the source layer downloads nothing");
    // Every worker the service starts by URL is cached with the sources.
    const cacheStep = parseDockerfile(await Deno.readTextFile(`${REPO}Dockerfile`))
      .filter((i) => i.keyword === "RUN").map((i) => i.args).find((a) => a.includes("deno cache"));
    for (const worker of await workerEntries()) {
      ok(cacheStep?.includes(worker), `the cache step names ${worker}: ${cacheStep}`);
    }
    ok(built.user && built.user !== "root" && built.user !== "0", `runs as ${built.user}`);
    ok(built.chowned.includes(`deno:deno ${built.root}/data`), built.chowned);
    deepStrictEqual(built.volumes.sort(), ["/data", "/models"]);
    ok(built.healthcheck?.join(" ").includes("/readyz"), String(built.healthcheck));

    // A model baked into /models, as an image built FROM this one would COPY it.
    await Deno.mkdir(`${built.root}/models/adder/1`, { recursive: true });
    await Deno.writeTextFile(
      `${built.root}/models/adder/1/model.json`,
      JSON.stringify(addModel(2)),
    );
    const port = String(freePort());
    // Loopback only (the image listens on all interfaces).
    const env = { PORT: port, HOST: "127.0.0.1" };
    const healthy = async () => (await imageCommand(built, built.healthcheck!, env).output()).code;
    strictEqual(await healthy(), 1, "unhealthy before the service runs");
    const service = imageCommand(built, built.cmd!, env).spawn();
    try {
      let code = 1;
      for (let attempt = 0; attempt < 120 && code !== 0; attempt++) {
        code = await healthy();
        if (code !== 0) await new Promise((resolve) => setTimeout(resolve, 250));
      }
      strictEqual(code, 0, "healthy once ready");
      // The dependency layer's onnxruntime-node loads: the image offers the native device.
      const listed = await (await fetch(`http://127.0.0.1:${port}/v1/devices`)).json();
      ok(
        listed.devices.some((d: { name: string }) => d.name === "onnxruntime"),
        JSON.stringify(listed.devices.map((d: { name: string }) => d.name)),
      );
      const ready = await (await fetch(`http://127.0.0.1:${port}/readyz`)).json();
      const adder = ready.repository.find((e: { name: string }) => e.name === "adder");
      strictEqual(adder?.state, "ready", JSON.stringify(ready));
      const run = await fetch(
        `http://127.0.0.1:${port}/v1/compilations/${adder.clients[0].compilation}/executions`,
        {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ inputs: [{ data: [1, 2] }, { data: [10, 20] }] }),
        },
      );
      const body = await run.json();
      strictEqual(run.status, 200, JSON.stringify(body));
      deepStrictEqual(body.outputs[0].data, [11, 22]);
      ok(
        (await Deno.readDir(`${built.root}/data`)[Symbol.asyncIterator]().next()).value,
        "state in /data",
      );
    } finally {
      service.kill("SIGTERM");
      const stopped = await finishWithin(service, 30_000);
      strictEqual(stopped?.code, 0, `the service stops cleanly: ${stopped?.stderr}`);
    }
  } finally {
    await Deno.remove(built.root, { recursive: true });
  }
});

Deno.test("compose starts the image with a data volume and a mounted model repository", async () => {
  const compose = await Deno.readTextFile(`${REPO}compose.yaml`);
  ok(/^\s+build: \.$/m.test(compose), "builds this Dockerfile");
  ok(
    /- \.\/examples\/models:\/models(:ro)?$/m.test(compose),
    "mounts ./examples/models on /models",
  );
  ok(/- [\w-]+:\/data$/m.test(compose), "keeps /data in a volume");
  ok(/"8080:8080"/.test(compose), "publishes the port");
});
