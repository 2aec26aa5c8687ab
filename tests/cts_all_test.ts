/**
 * Conformance across HAL 1.1 and 1.2 (V1_0 has its own gate): every case of the vectors runs
 * through the HTTP API of an in-process server; none may fail, and a case may be skipped
 * only for an operation that is not implemented yet — listed here, so that implementing one
 * turns its cases into required passes.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { startServer } from "../server.ts";
import { runConformance } from "./cts/runner.ts";
import { ctsDirectory } from "./cts/vectors.ts";

/** Operations still to come (issue #11); remove each as it lands. */
const NOT_YET_IMPLEMENTED = new Set([
  "BIDIRECTIONAL_SEQUENCE_LSTM",
  "BIDIRECTIONAL_SEQUENCE_RNN",
  "QUANTIZED_16BIT_LSTM",
  "UNIDIRECTIONAL_SEQUENCE_LSTM",
  "UNIDIRECTIONAL_SEQUENCE_RNN",
]);

/** Cases of V1_1 and V1_2 in the vectors (README of nnapi-cts). */
const CASES = 364 + 5580;

Deno.test({
  name: "every NNAPI CTS V1_1 and V1_2 case passes, or waits for an operation still to come",
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
      strictEqual(report.total, CASES);
      const early = report.skips.filter((s) =>
        !s.reason.startsWith("unsupported: ") ||
        s.reason.slice("unsupported: ".length).split(", ").some((op) =>
          !NOT_YET_IMPLEMENTED.has(op)
        )
      );
      deepStrictEqual(early, [], "skipped for an implemented operation");
      ok(report.passed >= 6162 - 310, `${report.passed} passed`);
    } finally {
      await server.close();
      await Deno.remove(dataDir, { recursive: true });
    }
  },
});
