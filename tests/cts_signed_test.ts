/**
 * HAL 1.3's TENSOR_QUANT8_ASYMM_SIGNED forms: every quant8 case of the HAL 1.0-1.2 specs
 * whose operations have a signed form in NNAPI, converted as Android's 1.3 CTS does
 * (tests/cts/signed.ts), run through the HTTP API of an in-process server. None may fail or
 * skip, and every operation that has quant8 vectors must be among those that pass.
 */
import { deepStrictEqual, ok } from "node:assert/strict";
import { startServer } from "../server.ts";
import { runConformance } from "./cts/runner.ts";
import { ctsDirectory } from "./cts/vectors.ts";

/** Signed cases derived from the vectors when every signed form was added. */
const MIN_PASSED = 1658;

/**
 * NNAPI's operations with a signed form that have quant8 vectors to derive from (the rest —
 * EMBEDDING_LOOKUP, HARD_SWISH, RANK, QUANTIZED_LSTM — are tested by their own files).
 */
const SIGNED_OPERATIONS = [
  "ADD",
  "ARGMAX",
  "ARGMIN",
  "AVERAGE_POOL_2D",
  "AXIS_ALIGNED_BBOX_TRANSFORM",
  "BATCH_TO_SPACE_ND",
  "BOX_WITH_NMS_LIMIT",
  "CAST",
  "CHANNEL_SHUFFLE",
  "CONCATENATION",
  "CONV_2D",
  "DEPTHWISE_CONV_2D",
  "DEPTH_TO_SPACE",
  "DEQUANTIZE",
  "EQUAL",
  "EXPAND_DIMS",
  "FULLY_CONNECTED",
  "GATHER",
  "GENERATE_PROPOSALS",
  "GREATER",
  "GREATER_EQUAL",
  "GROUPED_CONV_2D",
  "HEATMAP_MAX_KEYPOINT",
  "L2_NORMALIZATION",
  "LESS",
  "LESS_EQUAL",
  "LOGISTIC",
  "MAXIMUM",
  "MAX_POOL_2D",
  "MEAN",
  "MINIMUM",
  "MUL",
  "NOT_EQUAL",
  "PAD",
  "PAD_V2",
  "PRELU",
  "QUANTIZE",
  "REDUCE_MAX",
  "REDUCE_MIN",
  "RELU",
  "RELU1",
  "RELU6",
  "RESHAPE",
  "RESIZE_BILINEAR",
  "RESIZE_NEAREST_NEIGHBOR",
  "ROI_ALIGN",
  "ROI_POOLING",
  "SELECT",
  "SLICE",
  "SOFTMAX",
  "SPACE_TO_BATCH_ND",
  "SPACE_TO_DEPTH",
  "SPLIT",
  "SQUEEZE",
  "STRIDED_SLICE",
  "SUB",
  "TANH",
  "TILE",
  "TOPK_V2",
  "TRANSPOSE",
  "TRANSPOSE_CONV_2D",
];

Deno.test({
  name: "every signed quant8 CTS case derived from the quant8 vectors passes over HTTP",
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
        signed: true,
      });
      deepStrictEqual(report.failures, [], "failed cases");
      deepStrictEqual(report.skips, [], "skipped cases");
      const untested = SIGNED_OPERATIONS.filter((op) => !(report.perOperation[op]?.passed > 0));
      deepStrictEqual(untested, [], "operations without a passing signed case");
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
