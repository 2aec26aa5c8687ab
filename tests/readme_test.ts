/**
 * README.md's quick start runs as written, so the README cannot drift from the service. The
 * block is the first fenced ```bash block under the `## Quick start` heading. Its start line
 * (the one that runs `task start`) becomes main.ts in a process of its own, with the
 * environment that line sets and a free port; the other lines run unchanged in
 * `bash -euo pipefail` from the repository root, `localhost:8080` rewritten to that port.
 * curl is required, never skipped: without it the test fails naming the package.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { withMainProcess } from "./server_fixture.ts";

const ROOT = new URL("../", import.meta.url);
const README = new URL("../README.md", import.meta.url);
const HEADING = "## Quick start";
const START = /\btask start\b/;

/** The lines of the first ```bash block under `## Quick start`, before any other heading. */
function quickStart(markdown: string): string[] {
  const lines = markdown.split("\n");
  const heading = lines.indexOf(HEADING);
  ok(heading >= 0, `README.md has a "${HEADING}" heading`);
  const open = lines.indexOf("```bash", heading + 1);
  ok(open >= 0, `a \`\`\`bash block under "${HEADING}"`);
  const between = lines.slice(heading + 1, open).filter((line) => /^#{1,6} /.test(line));
  deepStrictEqual(between, [], `the \`\`\`bash block comes before any heading after "${HEADING}"`);
  const close = lines.indexOf("```", open + 1);
  ok(close > open, "the quick start's block is closed");
  return lines.slice(open + 1, close);
}

/** The `NAME=value` assignments a shell command line starts with. */
function leadingAssignments(line: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const word of line.trim().split(/\s+/)) {
    const assignment = /^([A-Z_][A-Z0-9_]*)=(\S*)$/.exec(word);
    if (!assignment) break;
    env[assignment[1]] = assignment[2];
  }
  return env;
}

/** Parses a JSON line of the quick start's output, naming it when it is not JSON. */
function jsonLine(line: string | undefined, what: string) {
  ok(line !== undefined, `the quick start printed ${what}`);
  try {
    return JSON.parse(line);
  } catch {
    throw new Error(`${what} is not JSON: ${line}`);
  }
}

/** Checks one answer of the classifier: two probabilities of one image, summing to 1. */
function assertClassifierJson(line: string | undefined, what: string): number[] {
  const answer = jsonLine(line, what);
  strictEqual(answer.status, "NONE", `${what}: ${line}`);
  strictEqual(answer.outputs.length, 1, `${what}: one output`);
  deepStrictEqual(answer.outputs[0].dimensions, [1, 2], `${what}: [1, 2]`);
  const data: number[] = answer.outputs[0].data;
  strictEqual(data.length, 2, `${what}: two probabilities`);
  ok(Math.abs(data[0] + data[1] - 1) < 1e-4, `${what}: probabilities summing to 1: ${data}`);
  return data;
}

async function readyWithin(url: string, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  let last = "";
  while (Date.now() < deadline) {
    const response = await fetch(`${url}/readyz`);
    last = await response.text();
    if (response.status === 200) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`/readyz not 200 within ${ms} ms: ${last}`);
}

Deno.test("README.md keeps the set-up commands CI and users run", async () => {
  const readme = await Deno.readTextFile(README);
  for (const command of ["npx --yes deno@2.9.6 task start", "npx --yes deno@2.9.6 task test"]) {
    ok(readme.split("\n").some((line) => line.startsWith(command)), command);
  }
});

Deno.test("README.md's quick start runs as written against a started service", async () => {
  const curl = await new Deno.Command("bash", {
    args: ["-c", "command -v curl"],
    stdout: "null",
    stderr: "null",
  }).output();
  ok(
    curl.success,
    "curl is missing: the quick start needs it (Debian/Ubuntu: apt-get install curl; .ci/run " +
      "installs it)",
  );

  const block = quickStart(await Deno.readTextFile(README));
  const starts = block.filter((line) => START.test(line));
  strictEqual(starts.length, 1, `one start line in the quick start: ${starts}`);
  const env = leadingAssignments(starts[0]);
  ok(env.NNSERVE_MODEL_REPOSITORY, "the start line names the model repository");
  const commands = block.filter((line) => !START.test(line)).join("\n");
  ok(commands.includes("localhost:8080"), "the quick start calls localhost:8080");
  ok(commands.split("\n").length <= 25, "the quick start is at most 25 lines");

  await withMainProcess({ env }, async ({ url }) => {
    await readyWithin(url, 120_000);
    const script = commands.replaceAll("localhost:8080", new URL(url).host);
    const run = await new Deno.Command("bash", {
      args: ["-euo", "pipefail", "-c", script],
      cwd: ROOT,
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(120_000),
    }).output();
    const stdout = new TextDecoder().decode(run.stdout);
    const stderr = new TextDecoder().decode(run.stderr);
    const shown = `stdout:\n${stdout.slice(0, 4000)}\nstderr:\n${stderr.slice(0, 4000)}`;
    strictEqual(run.code, 0, `the quick start exits 0\n${shown}`);
    const lines = stdout.split("\n").filter((line) => line.trim() !== "");
    strictEqual(lines.length, 4, `four answers printed\n${shown}`);

    const sum = jsonLine(lines[0], "the adder's /v2 answer");
    strictEqual(sum.model_name, "adder", lines[0]);
    deepStrictEqual(sum.outputs[0].data, [11, 22], lines[0]);

    const fromJson = assertClassifierJson(lines[1], "the execution with a JSON body");
    const fromBytes = assertClassifierJson(lines[2], "the execution with a raw body");
    deepStrictEqual(fromBytes, fromJson, "the same image answers the same in either form");

    const raw = lines[3].trim().split(/\s+/).map(Number);
    strictEqual(raw.length, 2, `od prints the two float32s of the raw answer: ${lines[3]}`);
    raw.forEach((value, i) =>
      ok(Math.abs(value - fromJson[i]) < 1e-3, `raw ${raw} against JSON ${fromJson}`)
    );
  });
});
