import { deepStrictEqual } from "node:assert/strict";
import { accessLine } from "../routes/access_log.ts";

/** What a process writing `script`'s lines through `batchedStdout()` printed. */
async function printed(script: string): Promise<string[]> {
  const { stdout, success } = await new Deno.Command(Deno.execPath(), {
    args: [
      "eval",
      `const { batchedStdout } = await import("./routes/access_log.ts"); ${script}`,
    ],
    cwd: new URL("../", import.meta.url),
    stdout: "piped",
  }).output();
  deepStrictEqual(success, true);
  return new TextDecoder().decode(stdout).split("\n").slice(0, -1);
}

Deno.test("batchedStdout() writes every line whole and in order, with console.log's lines where they fall", async () => {
  const lines = Array.from({ length: 2000 }, (_, i) => `line ${i} ${"x".repeat(i % 97)}`);
  // Lines of one turn leave together at the next timer turn; console.log is immediate, so
  // a line it writes after a turn's access lines follows them.
  deepStrictEqual(
    await printed(`
      const out = batchedStdout();
      for (let i = 0; i < 2000; i++) out.sink("line " + i + " " + "x".repeat(i % 97));
      await new Promise((resolve) => setTimeout(resolve, 20));
      console.log("after");`),
    [...lines, "after"],
  );
  // flush() writes what waits at once (the shutdown's last step).
  deepStrictEqual(
    await printed(`
      const out = batchedStdout();
      out.sink("one");
      out.sink("two");
      out.flush();
      console.log("three");
      Deno.exit(0);`),
    ["one", "two", "three"],
  );
});

Deno.test("accessLine() is what JSON.stringify makes of the record, whatever the fields hold", () => {
  const requests = [
    {
      requestId: "7d1f0c1e-8a2b-4c3d-9e4f-5a6b7c8d9e0f",
      client: null,
      method: "POST",
      route: "/v1/compilations/:id/executions",
      path: "/v1/compilations/abc/executions",
    },
    {
      requestId: "x-\u007f-\u00e9-\u{1F600}-\u2028",
      client: "plain",
      method: "DELETE",
      route: "/v2/models/:name/infer",
      path: "/v2/models/caf%C3%A9/infer",
    },
    {
      // Each escaped kind alone in a field.
      requestId: "lone \udc00 surrogate",
      client: "back\\slash",
      method: "tab\there",
      route: 'quote"d',
      path: "/\u001f",
    },
    {
      requestId: `a"b\\c`,
      client: 'key "one" \u2028',
      method: "GET",
      route: "unmatched",
      path: "/v1/\u0000%22x\n\ty/\ud800",
    },
  ];
  for (const request of requests) {
    for (const [status, ms] of [[200, 0.1234567], [404, 12], [500, 1e-7], [201, 123456.78949]]) {
      const time = "2026-11-29T03:04:05.678Z";
      deepStrictEqual(
        accessLine(time, "warn", 'replica "1"', request, status, ms),
        JSON.stringify({
          time,
          level: "warn",
          msg: "request",
          replica: 'replica "1"',
          requestId: request.requestId,
          client: request.client,
          method: request.method,
          route: request.route,
          path: request.path,
          status,
          ms: Math.round(ms * 1000) / 1000,
        }),
      );
    }
  }
});
