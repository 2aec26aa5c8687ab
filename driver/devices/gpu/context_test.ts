/**
 * The adapter: CI must have one (Mesa's llvmpipe at least), so its absence fails here with
 * the packages to install rather than skipping every gpu test silently.
 */
import { ok } from "node:assert/strict";
import { NO_ADAPTER, testGpu } from "./test_helpers.ts";

Deno.test("openGpu() finds an adapter (llvmpipe: Debian libegl-mesa0 and libgl1-mesa-dri)", async () => {
  const gpu = await testGpu(); // throws NO_ADAPTER, naming the packages, when there is none
  ok(gpu.adapter.description.length > 0, NO_ADAPTER);
  ok(typeof gpu.adapter.shaderF16 === "boolean");
});

Deno.test("GpuContext.pipeline() compiles a shader once and rejects invalid WGSL with its error", async () => {
  const gpu = await testGpu();
  const code = `@group(0) @binding(0) var<uniform> p: vec4<u32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(1) fn main() { y[0] = f32(p.x); }`;
  ok((await gpu.pipeline(code, 0, 1)) === (await gpu.pipeline(code, 0, 1)));
  let message = "";
  await gpu.pipeline("fn main( {", 0, 1).catch((error) => message = String(error));
  ok(/WGSL pipeline rejected/.test(message), message);
});
