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
