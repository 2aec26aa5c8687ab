/**
 * Conformance across HAL 1.1 and 1.2 (V1_0 has its own gate): every case of the vectors,
 * regular and dynamic-output-shape, runs through the HTTP API of an in-process server; none
 * may fail and none may be skipped.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict";
import { startServer } from "../server.ts";
import { runConformance } from "./cts/runner.ts";
import { ctsDirectory } from "./cts/vectors.ts";

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
