/**
 * The client SDK's public API is documented: `deno doc --lint client/mod.ts` finds no
 * exported symbol without JSDoc, no missing return type and no public type that refers to
 * an unexported one.
 */
import { strictEqual } from "node:assert/strict";
import { runDeno } from "./server_fixture.ts";

Deno.test("deno doc --lint client/mod.ts reports nothing", async () => {
  const { code, text } = await runDeno(["doc", "--lint", "client/mod.ts"]);
  strictEqual(code, 0, `deno doc --lint client/mod.ts exited with ${code}:\n${text}`);
});
