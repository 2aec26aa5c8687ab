/**
 * Conformance across HAL 1.1 and 1.2 (V1_0 has its own gate): every case of the vectors,
 * regular and dynamic-output-shape, runs through the HTTP API of an in-process server; none
 * may fail and none may be skipped.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict";
import { startServer } from "../server.ts";
import { runConformance } from "./cts/runner.ts";
import { ctsDirectory } from "./cts/vectors.ts";
import { withTestServer } from "./server_fixture.ts";

/** Cases of V1_1 and V1_2 in the vectors (README of nnapi-cts). */
const CASES = 364 + 5580;

Deno.test({
  name: "every NNAPI CTS V1_1 and V1_2 case passes over HTTP",
  async fn() {
    const directory = ctsDirectory();
    const dataDir = await Deno.makeTempDir({ prefix: "nnserve-cts-all-test-" });
    const server = await startServer({
      hostname: "127.0.0.1",
      port: 0,
      dataDir,
      verbose: false,
      gpu: false,
    });
    try {
      const report = await runConformance({
        directory,
        baseUrl: server.url,
        versions: ["V1_1", "V1_2"],
      });
      deepStrictEqual(report.failures, [], "failed cases");
      deepStrictEqual(report.skips, [], "skipped cases");
      strictEqual(report.total, CASES);
      strictEqual(report.passed, CASES);
    } finally {
      await server.close();
      await Deno.remove(dataDir, { recursive: true });
    }
  },
});

Deno.test({
  name: "the V1_1 and V1_2 cases pass on cpu-simd alone and on the gpu alone, for the " +
    "operations each supports (dynamic output shapes bound per shape)",
  async fn() {
    const directory = ctsDirectory();
    const dataDir = await Deno.makeTempDir({ prefix: "nnserve-cts-devices-test-" });
    const server = await startServer({ hostname: "127.0.0.1", port: 0, dataDir, verbose: false });
    try {
      for (const device of ["cpu-simd", "gpu"]) {
        const report = await runConformance({
          directory,
          baseUrl: server.url,
          versions: ["V1_1", "V1_2"],
          devices: [device],
        });
        deepStrictEqual(report.failures, [], `${device}: failed cases`);
        strictEqual(report.passed + report.skipped, CASES);
        strictEqual(report.skips.every((s) => s.reason.startsWith("unsupported: ")), true);
        // Convolutions, matrix products and element-wise operations, dynamic output shapes
        // included (cpu-simd 476 cases, the gpu 470 when this was written).
        strictEqual(report.passed > 400, true, `${device} passed ${report.passed}`);
        for (const type of ["CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "ADD", "MUL"]) {
          strictEqual(report.perOperation[type]?.passed > 0, true, `${type} on ${device}`);
        }
      }
    } finally {
      await server.close();
      await Deno.remove(dataDir, { recursive: true });
    }
  },
});

Deno.test({
  name: "every CTS case of V1_0 to V1_2 that the onnxruntime device claims passes on it alone " +
    "(its runs of steps exported to ONNX and run as onnxruntime sessions)",
  async fn() {
    await withTestServer({}, async (server) => {
      const report = await runConformance({
        directory: ctsDirectory(),
        baseUrl: server.url,
        versions: ["V1_0", "V1_1", "V1_2"],
        devices: ["onnxruntime"],
        noFallback: true,
      });
      deepStrictEqual(report.failures, [], "failed cases");
      strictEqual(report.skips.every((s) => s.reason.startsWith("unsupported: ")), true);
      // 1362 when this was written: convolutions, pools, matrix products, resizes, element-wise,
      // comparison, logical, reduction, arg-extreme and data-movement operations.
      strictEqual(report.passed >= 1362, true, `passed ${report.passed}`);
      for (
        const type of [
          "CONV_2D",
          "DEPTHWISE_CONV_2D",
          "FULLY_CONNECTED",
          "SOFTMAX",
          "MEAN",
          "LOG_SOFTMAX",
          "ARGMAX",
          "LOGICAL_AND",
        ]
      ) {
        strictEqual(report.perOperation[type]?.passed > 0, true, type);
      }
    });
  },
});
