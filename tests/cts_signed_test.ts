/**
 * HAL 1.3's TENSOR_QUANT8_ASYMM_SIGNED forms of ADD, SUB, MUL, RELU, RELU1, RELU6, LOGISTIC,
 * TANH and SOFTMAX: the quant8 cases of their specs, converted as Android's 1.3 CTS does
 * (tests/cts/signed.ts), run through the HTTP API of an in-process server. None may fail;
 * the only skips are cases whose other operations (BOX_WITH_NMS_LIMIT, ROI_ALIGN of the
 * zero-sized specs) have no signed form yet.
 */
import { deepStrictEqual, ok } from "node:assert/strict";
import { startServer } from "../server.ts";
import { runConformance } from "./cts/runner.ts";
import { ctsDirectory } from "./cts/vectors.ts";

/** Signed cases of the family that passed when the signed forms were added. */
const MIN_PASSED = 260;

Deno.test({
  name: "the signed quant8 CTS cases of ADD/SUB/MUL/RELU*/LOGISTIC/TANH/SOFTMAX pass over HTTP",
  async fn() {
    const directory = ctsDirectory();
    const dataDir = await Deno.makeTempDir({ prefix: "nnserve-cts-signed-test-" });
    const server = await startServer({
      hostname: "127.0.0.1",
      port: 0,
      dataDir,
      verbose: false,
    });
    try {
      const report = await runConformance({
        directory,
        baseUrl: server.url,
        versions: ["V1_0", "V1_1", "V1_2"],
        filter: /^(add|sub|mul|relu|relu1|relu6|logistic|tanh|softmax)_/,
        signed: true,
      });
      deepStrictEqual(report.failures, [], "failed cases");
      for (const skip of report.skips) {
        ok(/zero_sized/.test(skip.name), `unexpected skip ${skip.name}: ${skip.reason}`);
      }
      ok(
        report.passed >= MIN_PASSED,
        `${report.passed} signed cases passed, expected at least ${MIN_PASSED}`,
      );
    } finally {
      await server.close();
      await Deno.remove(dataDir, { recursive: true });
    }
  },
});
