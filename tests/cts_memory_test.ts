/**
 * Conformance through memory pools: every NNAPI CTS V1_0 case passes with its
 * CONSTANT_REFERENCE constants uploaded as a memory pool of the model and its inputs and
 * outputs passed as memory regions, exactly as many as pass inline (cts_v1_0_test.ts). The
 * runner deletes every memory it creates and fails a case whose DELETE does not succeed.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict";
import { startServer } from "../server.ts";
import { runConformance } from "./cts/runner.ts";
import { ctsDirectory } from "./cts/vectors.ts";

/** Number of V1_0 cases in the vectors (README of nnapi-cts), all passing inline. */
const V1_0_CASES = 310;

Deno.test({
  name: "every NNAPI CTS V1_0 case passes through memories as inline",
  async fn() {
    const directory = ctsDirectory(); // missing vectors fail here, naming where they belong
    const dataDir = await Deno.makeTempDir({ prefix: "nnserve-cts-memory-test-" });
    const server = await startServer({ hostname: "127.0.0.1", port: 0, dataDir, verbose: false });
    try {
      const report = await runConformance({
        directory,
        baseUrl: server.url,
        versions: ["V1_0"],
        memory: true,
      });
      deepStrictEqual(report.failures, [], "failed cases");
      deepStrictEqual(report.skips, [], "skipped cases");
      strictEqual(report.failed, 0);
      strictEqual(report.total, V1_0_CASES);
      strictEqual(report.passed, V1_0_CASES);
    } finally {
      await server.close();
      await Deno.remove(dataDir, { recursive: true });
    }
  },
});
