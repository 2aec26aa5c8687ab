/**
 * The demo page (`GET /demo`, routes/demo.ts and web/): its browser copy of the burst wire
 * format against driver/burst/protocol.ts, its assets and model over REST, and the page itself
 * in headless Chromium with a fake camera, streaming frames through a burst of a real server.
 * The browser test needs Debian's chromium (.ci/run installs it) and fails, naming the path it
 * expected, where it is absent.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { chromium, type Page } from "playwright-core";
import * as driverProtocol from "../driver/burst/protocol.ts";
import { DEMO_CLASSES, DEMO_INPUT_SIZE } from "../routes/demo.ts";
import * as pageProtocol from "../web/burst_protocol.js";
import { DEFAULT_HEADER_TIMEOUT_SECONDS, DEFAULT_IDLE_TIMEOUT_SECONDS } from "../server.ts";
import { startTestServer, type TestServer } from "./server_fixture.ts";
import { Buffer } from "node:buffer";
import { onnxBytes } from "../tools/onnx_graphs.ts";
import { weights } from "./onnx/compare.ts";

/** Debian's chromium (NNSERVE_CHROMIUM overrides the path). */
const CHROMIUM = Deno.env.get("NNSERVE_CHROMIUM") ?? "/usr/bin/chromium";
const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--use-fake-device-for-media-stream",
  "--use-fake-ui-for-media-stream",
];
const FRAMES_WANTED = 50;

/** Fails the test, saying where the browser was expected, when it is not installed. */
function requireChromium(): void {
  try {
    if (Deno.statSync(CHROMIUM).isFile) return;
  } catch {
    // reported below
  }
  throw new Error(
    `Chromium is missing: expected ${CHROMIUM} (apt-get install chromium; .ci/run does)`,
  );
}

function sampleRequests(): driverProtocol.BurstRequest[] {
  const bytes = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => i * seed);
  return [
    {
      id: 1,
      measureTiming: false,
      deadlineUs: 0,
      inputs: [{ kind: "inline", bytes: bytes(12, 7) }],
      outputs: [],
    },
    {
      id: 0xfffffffe,
      measureTiming: true,
      deadlineUs: 2_500_000,
      inputs: [
        { kind: "inline", bytes: bytes(13, 3), dimensions: [1, 13] },
        { kind: "omitted" },
        { kind: "slot", slot: 7, offset: 64, length: 52, dimensions: [1, 2, 3, 4, 5] },
        { kind: "inline", bytes: new Uint8Array(0), dimensions: [0] },
      ],
      outputs: [
        { kind: "inline", bytes: new Uint8Array(0) },
        { kind: "inline", bytes: bytes(5, 1), dimensions: [5] },
        { kind: "slot", slot: 0, offset: 0, length: 4 },
      ],
    },
    {
      id: 42,
      measureTiming: false,
      deadlineUs: 1,
      inputs: [{
        kind: "inline",
        bytes: bytes(DEMO_INPUT_SIZE * DEMO_INPUT_SIZE * 3 * 4, 5),
        dimensions: [1, DEMO_INPUT_SIZE, DEMO_INPUT_SIZE, 3],
      }],
      outputs: [{ kind: "inline", bytes: new Uint8Array(0), dimensions: [1, 7] }],
    },
  ];
}

function sampleResults(): driverProtocol.BurstResult[] {
  const floats = new Float32Array([0.1, 0.2, 0.7]);
  return [
    {
      id: 1,
      status: "NONE",
      message: "",
      outputs: [{ dimensions: [1, 3], isSufficient: true, bytes: new Uint8Array(floats.buffer) }],
    },
    {
      id: 0xffffffff,
      status: "NONE",
      message: "",
      outputs: [
        { dimensions: [], isSufficient: true, bytes: Uint8Array.of(9) },
        { dimensions: [2, 3, 1], isSufficient: true, bytes: Uint8Array.of(1, 2, 3, 4, 5, 6) },
        { dimensions: [4], isSufficient: true, bytes: new Uint8Array(0) },
      ],
      timing: { onDeviceUs: 12.5, inDriverUs: 40 },
    },
    {
      id: 77,
      status: "OUTPUT_INSUFFICIENT_SIZE",
      message: "output 0: 8 bytes needed, 4 given — ünïcode",
      outputs: [{ dimensions: [2], isSufficient: false, bytes: new Uint8Array(0) }],
    },
    { id: 78, status: "UNAUTHORIZED", message: "x", outputs: [] },
  ];
}

/** A plain copy of a decoded result, so byte views compare by content. */
function plain(result: driverProtocol.BurstResult | pageProtocol.BurstResult) {
  return {
    ...result,
    outputs: result.outputs.map((o) => ({ ...o, bytes: [...o.bytes] })),
  };
}

Deno.test("the page's burst_protocol.js encodes EXECUTE frames byte for byte like the driver", () => {
  for (const request of sampleRequests()) {
    const ours = pageProtocol.encodeRequest(request);
    deepStrictEqual([...ours], [...driverProtocol.encodeRequest(request)], `request ${request.id}`);
    const decoded = driverProtocol.decodeRequest(ours);
    strictEqual(decoded.id, request.id);
    strictEqual(decoded.inputs.length, request.inputs.length);
    strictEqual(decoded.outputs.length, request.outputs.length);
  }
  strictEqual(pageProtocol.EXECUTE_FRAME, driverProtocol.EXECUTE_FRAME);
  strictEqual(pageProtocol.NO_DIMENSIONS, driverProtocol.NO_DIMENSIONS);
});

Deno.test("the page's burst_protocol.js decodes RESULT frames like the driver", () => {
  for (const result of sampleResults()) {
    const frame = driverProtocol.encodeResult(result);
    deepStrictEqual(
      plain(pageProtocol.decodeResult(frame)),
      plain(driverProtocol.decodeResult(frame)),
    );
    deepStrictEqual(plain(pageProtocol.decodeResult(frame)), plain(result));
  }
  for (const [name, code] of Object.entries(driverProtocol.STATUS_CODES)) {
    strictEqual(pageProtocol.STATUS_NAMES[code], name);
  }
  const cut = driverProtocol.encodeResult(sampleResults()[0]).subarray(0, 40);
  let thrown = false;
  try {
    pageProtocol.decodeResult(cut);
  } catch {
    thrown = true;
  }
  ok(thrown, "a cut-short result frame is refused");
});

/** An image of the demo model's input size, as float32 RGB in 0..1. */
function image(pixel: (x: number, y: number) => [number, number, number]): number[] {
  const data: number[] = [];
  for (let y = 0; y < DEMO_INPUT_SIZE; y++) {
    for (let x = 0; x < DEMO_INPUT_SIZE; x++) data.push(...pixel(x, y));
  }
  return data;
}

Deno.test("GET /demo serves the page and its assets; the demo model classifies over REST", async () => {
  const server = await startTestServer();
  try {
    const page = await fetch(`${server.url}/demo`);
    strictEqual(page.status, 200);
    ok(page.headers.get("content-type")?.startsWith("text/html"));
    ok(page.headers.get("content-security-policy")?.includes("default-src 'self'"));
    const html = await page.text();
    for (const id of ["frames", "fps", "result", "camera"]) ok(html.includes(`id="${id}"`), id);
    for (const asset of ["demo.js", "burst_protocol.js", "demo.css"]) {
      const response = await fetch(`${server.url}/demo/${asset}`);
      strictEqual(response.status, 200, asset);
      strictEqual(
        await response.text(),
        await Deno.readTextFile(new URL(`../web/${asset}`, import.meta.url)),
      );
    }
    const missing = await fetch(`${server.url}/demo/secrets.txt`);
    strictEqual(missing.status, 404);
    strictEqual((await missing.json()).status, "NOT_FOUND");

    const demo = await (await fetch(`${server.url}/demo/model.json`)).json();
    deepStrictEqual(demo.classes, [...DEMO_CLASSES]);
    strictEqual(demo.inputSize, DEMO_INPUT_SIZE);
    const model = await server.request("POST", "/v1/models", demo.model);
    strictEqual(model.status, 201, JSON.stringify(model.body));
    const compilation = await server.request("POST", "/v1/compilations", {
      model: model.body.id,
    });
    strictEqual(compilation.status, 201, JSON.stringify(compilation.body));
    const cases: [string, number[]][] = [
      ["red", image(() => [0.9, 0.15, 0.1])],
      ["green", image(() => [0.1, 0.8, 0.2])],
      ["blue", image(() => [0.1, 0.2, 0.9])],
      ["bright", image(() => [1, 1, 1])],
      ["dark", image(() => [0, 0, 0])],
      ["plain", image(() => [0.5, 0.5, 0.5])],
      ["busy", image((x) => (x % 4 < 2 ? [0, 0, 0] : [1, 1, 1]))],
    ];
    for (const [expected, data] of cases) {
      const run = await server.request(
        "POST",
        `/v1/compilations/${compilation.body.id}/executions`,
        { inputs: [{ data }] },
      );
      strictEqual(run.status, 200, JSON.stringify(run.body));
      const [output] = run.body.outputs as { dimensions: number[]; data: number[] }[];
      deepStrictEqual(output.dimensions, [1, DEMO_CLASSES.length]);
      const sum = output.data.reduce((a, b) => a + b, 0);
      ok(Math.abs(sum - 1) < 1e-4, `probabilities sum to ${sum}`);
      const top = output.data.indexOf(Math.max(...output.data));
      strictEqual(DEMO_CLASSES[top], expected, `probabilities ${output.data}`);
    }
  } finally {
    await server.close();
    await Deno.remove(server.dataDir, { recursive: true });
  }
});

/**
 * Runs `fn` on a page of headless Chromium (fake camera), collecting page errors, console
 * errors and HTTP errors in `problems`; closes the browser, then the server.
 */
async function withDemoPage(
  server: TestServer,
  fn: (page: Page, problems: string[]) => Promise<void>,
): Promise<void> {
  const profile = await Deno.makeTempDir({ prefix: "nnserve-chromium-" });
  try {
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      timeout: 30_000,
    });
    const problems: string[] = [];
    try {
      const page = context.pages()[0] ?? await context.newPage();
      page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
      page.on("console", (m) => {
        if (m.type() === "error") problems.push(`console: ${m.text()}`);
      });
      page.on("response", (r) => {
        if (r.status() >= 400) problems.push(`${r.status()} for ${r.url()}`);
      });
      await fn(page, problems);
    } finally {
      await context.close();
    }
  } finally {
    await server.close();
    await Deno.remove(profile, { recursive: true });
    await Deno.remove(server.dataDir, { recursive: true });
  }
}

/**
 * Polls until `done` says so or the page shows an error, for at most a minute (the page's
 * CSP rightly refuses the eval of Playwright's waitForFunction).
 */
async function waitFor(page: Page, done: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (
    !(await done()) && (await page.getAttribute("body", "data-state")) !== "error" &&
    Date.now() < deadline
  ) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function burstsActive(server: TestServer): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const match = /^nnserve_bursts_active (\d+)$/m.exec(text);
  ok(match, "/metrics reports nnserve_bursts_active");
  return Number(match[1]);
}

Deno.test({
  name: "the demo page streams fake-camera frames through a burst in headless Chromium",
  async fn() {
    requireChromium();
    const key = "demo-browser-test-key";
    // Through the connection guard, as `main.ts` serves a browser.
    const server = await startTestServer({
      apiKeys: new Map([[key, "demo"]]),
      headerTimeoutSeconds: DEFAULT_HEADER_TIMEOUT_SECONDS,
      idleTimeoutSeconds: DEFAULT_IDLE_TIMEOUT_SECONDS,
    });
    await withDemoPage(server, async (page, problems) => {
      await page.goto(`${server.url}/demo?key=${key}`);
      await waitFor(page, async () => Number(await page.textContent("#frames")) >= FRAMES_WANTED);
      const status = await page.textContent("#status");
      strictEqual(
        await page.getAttribute("body", "data-state"),
        "running",
        `${status}\n${problems.join("\n")}`,
      );
      strictEqual(await burstsActive(server), 1, "the page's burst is open");

      const frames = Number(await page.textContent("#frames"));
      ok(frames >= FRAMES_WANTED, `${frames} frames`);
      strictEqual(await page.textContent("#errors"), "0");
      const fps = Number(await page.textContent("#fps"));
      ok(fps > 0 && Number.isFinite(fps), `frames per second: ${fps}`);

      // The page keeps updating: read text and probabilities until both come from one frame
      // (the text is the same before and after reading the probabilities).
      let result = "";
      let probabilities = "[]";
      for (let attempt = 0; attempt < 50; attempt++) {
        result = (await page.textContent("#result")) ?? "";
        probabilities = (await page.getAttribute("#result", "data-probabilities")) ?? "[]";
        if ((await page.textContent("#result")) === result) break;
      }
      const match = /^(\w+) (\d+\.\d)%$/.exec(result);
      ok(match, `result text "${result}"`);
      const classes: readonly string[] = DEMO_CLASSES;
      ok(classes.includes(match[1]), `class ${match[1]}`);
      const shown: number[] = JSON.parse(probabilities);
      strictEqual(shown.length, DEMO_CLASSES.length);
      ok(shown.every((p) => p >= 0 && p <= 1), `probabilities ${shown}`);
      ok(Math.abs(shown.reduce((a, b) => a + b, 0) - 1) < 1e-3, `probabilities ${shown}`);
      const top = shown.indexOf(Math.max(...shown));
      strictEqual(match[1], DEMO_CLASSES[top]);
      strictEqual(Number(match[2]), Number((100 * shown[top]).toFixed(1)));
      strictEqual(await page.locator("#probs tr").count(), DEMO_CLASSES.length);

      await page.close();
      const until = Date.now() + 10_000;
      while ((await burstsActive(server)) !== 0 && Date.now() < until) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      strictEqual(await burstsActive(server), 0, "the burst ended with the page");
      deepStrictEqual(problems, []);
    });
  },
});

/** A tiny NCHW image classifier with a symbolic batch: conv, average, dense, softmax. */
function tinyOnnxClassifier(): Uint8Array {
  return onnxBytes({
    inputs: [{ name: "pixels", dims: ["batch", 3, 16, 16] }],
    outputs: [{ name: "scores", dims: ["batch", 4] }],
    nodes: [
      { op: "Conv", inputs: ["pixels", "w"], outputs: ["c"], attributes: { pads: [1, 1, 1, 1] } },
      { op: "Relu", inputs: ["c"], outputs: ["r"] },
      { op: "GlobalAveragePool", inputs: ["r"], outputs: ["p"] },
      { op: "Flatten", inputs: ["p"], outputs: ["f"] },
      { op: "Gemm", inputs: ["f", "d"], outputs: ["scores"] },
    ],
    initializers: [weights("w", [6, 3, 3, 3], 7), weights("d", [6, 4], 8)],
  });
}

Deno.test({
  name: "the demo page imports a user's ONNX classifier and streams frames through it",
  async fn() {
    requireChromium();
    const server = await startTestServer();
    await withDemoPage(server, async (page, problems) => {
      // The file is picked while the built-in model's compilation request is on its way: the
      // page must not delete that model under its own request (a 404 in `problems`).
      let picked = false;
      await page.route("**/v1/compilations", async (route) => {
        if (!picked) {
          picked = true;
          await page.setInputFiles("#onnx", {
            name: "tiny.onnx",
            mimeType: "application/octet-stream",
            buffer: Buffer.from(tinyOnnxClassifier()),
          });
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
        await route.continue();
      });
      await page.goto(`${server.url}/demo`);
      const result = async () => (await page.textContent("#result")) ?? "";
      await waitFor(
        page,
        async () =>
          /^class \d/.test(await result()) && Number(await page.textContent("#frames")) >= 20,
      );
      const status = await page.textContent("#status");
      strictEqual(
        await page.getAttribute("body", "data-state"),
        "running",
        `${status}\n${problems.join("\n")}`,
      );
      ok(/^class [0-3] \d+\.\d%$/.test(await result()), `result "${await result()}"`);
      strictEqual(await page.textContent("#errors"), "0");
      strictEqual(await page.locator("#probs tr").count(), 4);
      ok(picked, "the file was picked during the first compilation request");
      deepStrictEqual(problems, []);
    });
  },
});
