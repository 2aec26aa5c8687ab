/**
 * Conformance gate: every NNAPI CTS V1_0 case passes through the HTTP API of a real server
 * (none skipped, none failed).
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict";
import {
  DEFAULT_HEADER_TIMEOUT_SECONDS,
  DEFAULT_IDLE_TIMEOUT_SECONDS,
  startServer,
} from "../server.ts";
import { runConformance } from "./cts/runner.ts";
import { ctsDirectory } from "./cts/vectors.ts";

/** Number of V1_0 cases in the vectors (README of nnapi-cts). */
const V1_0_CASES = 310;

Deno.test({
  name: "every NNAPI CTS V1_0 case passes over HTTP",
  async fn() {
    const directory = ctsDirectory(); // missing vectors fail here, naming where they belong
    const dataDir = await Deno.makeTempDir({ prefix: "nnserve-cts-test-" });
    // Through the connection guard, as `main.ts` serves: the production path under real traffic.
    const server = await startServer({
      hostname: "127.0.0.1",
      port: 0,
      dataDir,
      verbose: false,
      headerTimeoutSeconds: DEFAULT_HEADER_TIMEOUT_SECONDS,
      idleTimeoutSeconds: DEFAULT_IDLE_TIMEOUT_SECONDS,
    });
    try {
      const report = await runConformance({
        directory,
        baseUrl: server.url,
        versions: ["V1_0"],
      });
      deepStrictEqual(report.failures, [], "failed cases");
      deepStrictEqual(report.skips, [], "skipped cases");
      strictEqual(report.failed, 0);
      strictEqual(report.skipped, 0);
      strictEqual(report.total, V1_0_CASES);
      strictEqual(report.passed, V1_0_CASES);
    } finally {
      await server.close();
      await Deno.remove(dataDir, { recursive: true });
    }
  },
});

Deno.test({
  name: "the CTS V1_0 cases pass on each device alone, for the operations it supports",
  async fn() {
    const directory = ctsDirectory();
    const dataDir = await Deno.makeTempDir({ prefix: "nnserve-cts-devices-test-" });
    const server = await startServer({ hostname: "127.0.0.1", port: 0, dataDir, verbose: false });
    try {
      const reference = await runConformance({
        directory,
        baseUrl: server.url,
        versions: ["V1_0"],
        devices: ["cpu-reference"],
      });
      deepStrictEqual([reference.passed, reference.failures], [V1_0_CASES, []], "cpu-reference");
      const simd = await runConformance({
        directory,
        baseUrl: server.url,
        versions: ["V1_0"],
        devices: ["cpu-simd"],
      });
      deepStrictEqual(simd.failures, [], "cpu-simd failures");
      strictEqual(simd.passed + simd.skipped, V1_0_CASES);
      // The SIMD device covers the float32 convolutions and matrix products with constant
      // weights; every other case is skipped, naming what it lacks.
      strictEqual(simd.passed > 20, true, `cpu-simd passed ${simd.passed}`);
      strictEqual(simd.skips.every((s) => s.reason.startsWith("unsupported: ")), true);
      // Its quant8 convolutions and fully connected layers (constant weights, static shapes)
      // run there too.
      const quant8 =
        /^(conv|depthwise_conv2d|fully_connected)_quant8(?!.*(weights_as_inputs|dynamic_output))/;
      const quant8Skips = simd.skips.filter((s) => quant8.test(s.name));
      deepStrictEqual(quant8Skips, [], "cpu-simd quant8 convolutions skipped");
      // The gpu (WebGPU; llvmpipe here) runs the float32 NHWC forms of its operations.
      const gpu = await runConformance({
        directory,
        baseUrl: server.url,
        versions: ["V1_0"],
        devices: ["gpu"],
      });
      deepStrictEqual(gpu.failures, [], "gpu failures");
      strictEqual(gpu.passed + gpu.skipped, V1_0_CASES);
      strictEqual(gpu.passed > 20, true, `gpu passed ${gpu.passed}`);
    } finally {
      await server.close();
      await Deno.remove(dataDir, { recursive: true });
    }
  },
});
