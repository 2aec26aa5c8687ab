/**
 * The adapters: CI must have one on each WebGPU implementation (Mesa's llvmpipe for Deno's
 * built-in WebGPU, its lavapipe for Dawn), so an absence fails here with the packages to
 * install rather than skipping every gpu test silently; and the choice between them.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { eachGpu, NO_ADAPTER } from "./test_helpers.ts";

eachGpu("openGpu() finds an adapter", (gpu) => {
  ok(gpu.adapter.description.length > 0, NO_ADAPTER[gpu.implementation]);
  ok(typeof gpu.adapter.shaderF16 === "boolean");
});

eachGpu(
  "GpuContext.pipeline() compiles a shader once and rejects invalid WGSL with its error",
  async (gpu) => {
    const code = `@group(0) @binding(0) var<uniform> p: vec4<u32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(1) fn main() { y[0] = f32(p.x); }`;
    ok((await gpu.pipeline(code, 0, 1)) === (await gpu.pipeline(code, 0, 1)));
    let message = "";
    await gpu.pipeline("fn main( {", 0, 1).catch((error) => message = String(error));
    ok(/WGSL pipeline rejected/.test(message), message);
  },
);

/**
 * What `openGpu()` chooses in a process of its own, with `importMap` replacing deno.json's
 * imports where given and `env` added: the implementation and what it said on stderr.
 */
async function chosen(options: { dawnImport?: string; env?: Record<string, string> }) {
  const root = new URL("../../../", import.meta.url);
  const config = JSON.parse(await Deno.readTextFile(new URL("deno.json", root)));
  const importMap = await Deno.makeTempFile({ suffix: ".json" });
  try {
    const imports = { ...config.imports };
    if (options.dawnImport) imports.webgpu = options.dawnImport;
    await Deno.writeTextFile(importMap, JSON.stringify({ imports }));
    const script = "const { openGpu } = await import('./driver/devices/gpu/context.ts');" +
      "const gpu = await openGpu(); console.log(gpu?.implementation ?? 'none'); gpu?.close();";
    const { stdout, stderr } = await new Deno.Command(Deno.execPath(), {
      args: ["eval", `--import-map=${importMap}`, script],
      cwd: root,
      env: { NO_COLOR: "1", ...options.env },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const said = new TextDecoder().decode(stderr).split("\n").filter((l) => l.includes("nnserve"));
    return { implementation: new TextDecoder().decode(stdout).trim(), said };
  } finally {
    await Deno.remove(importMap);
  }
}

Deno.test("the gpu device takes Dawn where it opens, else Deno's built-in WebGPU with one log line", async () => {
  deepStrictEqual(await chosen({}), { implementation: "dawn", said: [] });
  const missing = await chosen({
    dawnImport: "data:text/javascript,throw new Error('no dawn.node for this platform');",
  });
  strictEqual(missing.implementation, "deno");
  deepStrictEqual(missing.said, [
    "nnserve: Dawn (npm webgpu) does not load here; the gpu device runs on Deno's built-in WebGPU",
  ]);
  // Dawn loads but its Vulkan loader finds no driver.
  const noAdapter = await chosen({ env: { VK_ICD_FILENAMES: "/nonexistent/icd.json" } });
  strictEqual(noAdapter.implementation, "deno");
  deepStrictEqual(noAdapter.said, [
    "nnserve: Dawn (npm webgpu) found no adapter here; the gpu device runs on Deno's built-in WebGPU",
  ]);
});
