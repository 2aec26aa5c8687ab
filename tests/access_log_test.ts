import { deepStrictEqual } from "node:assert/strict";

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
