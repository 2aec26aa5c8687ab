/**
 * Tests whose inputs are missing fail, saying where the inputs were expected; they never pass
 * or skip silently. Each check runs the real test files in a child `deno test` with the input
 * pointed at a path that does not exist.
 */
import { match, notStrictEqual, ok, strictEqual } from "node:assert/strict";
import { runDeno } from "./server_fixture.ts";

function runTests(files: string[], env: Record<string, string>) {
  return runDeno(["test", "-A", "--no-check", ...files], env);
}

Deno.test("the conformance tests fail, naming the path, when the CTS vectors are missing", async () => {
  const missing = "/nonexistent/nnapi-cts";
  const files = [
    "tests/cts_v1_0_test.ts",
    "tests/cts_all_test.ts",
    "tests/cts_memory_test.ts",
    "tests/burst_cts_test.ts",
  ];
  const { code, text } = await runTests(files, { NNSERVE_CTS_DIR: missing });
  notStrictEqual(code, 0, text);
  // Every conformance test fails, each saying where the vectors were expected.
  const failed = Number(/0 passed \| (\d+) failed/.exec(text)?.[1]);
  ok(failed >= files.length, text);
  const reasons = text.match(
    /the NNAPI CTS vectors are missing: expected \/nonexistent\/nnapi-cts\/index\.json/g,
  );
  strictEqual(reasons?.length, failed, text);
  const cli = await runDeno(["run", "-A", "tests/cts/main.ts", "--versions", "V1_0"], {
    NNSERVE_CTS_DIR: missing,
  });
  notStrictEqual(cli.code, 0, "deno task cts fails too");
  match(cli.stderr, /vectors are missing: expected \/nonexistent/);
});

Deno.test("the demo browser test fails, naming the path, when Chromium is missing", async () => {
  const { code, text } = await runTests(["tests/demo_browser_test.ts"], {
    NNSERVE_CHROMIUM: "/nonexistent/chromium",
  });
  notStrictEqual(code, 0, text);
  // Both browser tests (the demo model and a user's ONNX model) fail, each naming the path.
  match(text, /\| 3 passed \| 2 failed/);
  strictEqual(
    text.match(/Chromium is missing: expected \/nonexistent\/chromium/g)?.length,
    2,
    text,
  );
});
