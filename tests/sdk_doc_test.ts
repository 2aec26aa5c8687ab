/**
 * The client SDK's public API is documented: `deno doc --lint client/mod.ts` finds no
 * exported symbol without JSDoc, no missing return type and no public type that refers to
 * an unexported one.
 */
import { strictEqual } from "node:assert/strict";

Deno.test("deno doc --lint client/mod.ts reports nothing", async () => {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["doc", "--lint", "client/mod.ts"],
    cwd: new URL("../", import.meta.url),
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const output = new TextDecoder().decode(stdout) + new TextDecoder().decode(stderr);
  strictEqual(code, 0, `deno doc --lint client/mod.ts exited with ${code}:\n${output}`);
});
