/**
 * `deno run --allow-read=. --allow-write=. image_deps.ts` in a directory holding `deno.json`
 * and `deno.lock`: keeps only the service's own imports in `deno.json`, so the container
 * installs the packages the service runs on (onnxruntime-node among them, the onnxruntime
 * device's native kernels) and not the test and benchmark peers (onnxruntime-web,
 * Playwright, tfjs: hundreds of MB), which Deno would otherwise install with any npm
 * package of the lock. Deno then prunes the lock to what is left, at the locked versions.
 * The Dockerfile runs it before copying the sources, so that layer changes only with the
 * dependencies. `tests/container_test.ts` checks the list against what the service imports.
 */

/** Import-map keys of the service's npm packages (`main.ts` and its workers). */
export const RUNTIME_IMPORTS = [
  "hono",
  "hono/",
  "@hono/zod-openapi",
  "zod",
  "onnx-proto",
  "postgres",
  "@aws-sdk/client-s3",
  // The onnxruntime device's native kernels (prebuilt binaries inside the package).
  "onnxruntime-node",
  // The Open Inference Protocol over gRPC (NNSERVE_GRPC_PORT).
  "@grpc/grpc-js",
  "@grpc/proto-loader",
];

/** The config with only the service's imports. */
export function runtimeConfig(config: { imports: Record<string, string> }): unknown {
  const imports = Object.fromEntries(
    Object.entries(config.imports).filter(([name]) => RUNTIME_IMPORTS.includes(name)),
  );
  const missing = RUNTIME_IMPORTS.filter((name) => !(name in imports));
  if (missing.length > 0) throw new Error(`deno.json has no import ${missing.join(", ")}`);
  return { ...config, imports };
}

if (import.meta.main) {
  const config = JSON.parse(Deno.readTextFileSync("deno.json"));
  Deno.writeTextFileSync("deno.json", JSON.stringify(runtimeConfig(config), null, 2) + "\n");
}
