/**
 * The WebGPU adapter and device the gpu device runs on, opened once per process, and the
 * compute pipelines compiled on it. Two implementations: Dawn (npm `webgpu`, Chromium's
 * native WebGPU as a Node-API module), whose readbacks answer in about 0.6 ms, and Deno's
 * built-in `navigator.gpu`, which waits 10 ms between polls of a readback. Dawn is used
 * where it loads and finds an adapter, the built-in one otherwise. A pipeline depends only
 * on its WGSL and its binding counts, so every subgraph shares one cache: preparing a second
 * model with the same kernels compiles nothing.
 */

import { paceDawnPolling } from "./dawn_polling.ts";

/** Which WebGPU implementation a context runs on. */
export type GpuImplementation = "dawn" | "deno";

/** The implementations in the order the gpu device prefers them. */
export const GPU_IMPLEMENTATIONS: readonly GpuImplementation[] = ["dawn", "deno"];

/** What `GET /v1/devices` can say about the adapter (as the adapter reports it). */
export interface GpuAdapterDescription {
  /** E.g. "llvmpipe (LLVM 15.0.6, 256 bits)"; the vendor/device ids when it has none. */
  description: string;
  vendor: string;
  architecture: string;
  /** A software or otherwise reduced adapter (llvmpipe is one). */
  isFallbackAdapter: boolean;
  /** Whether WGSL `f16` is available (relaxed float16 computation). */
  shaderF16: boolean;
}

/** An open WebGPU device with the pipeline cache of this process. */
export interface GpuContext {
  readonly implementation: GpuImplementation;
  readonly device: GPUDevice;
  readonly adapter: GpuAdapterDescription;
  /** Resolves when the device is lost (driver reset, destroy): nothing runs on it after. */
  readonly lost: Promise<GPUDeviceLostInfo>;
  /**
   * The pipeline of a WGSL compute shader whose entry point `main` binds, in group 0: a
   * uniform at 0, `reads` read-only storage buffers at 1.., then `writes` storage buffers.
   * Compiled once per (code, reads, writes); shader errors reject with the compiler's text.
   */
  pipeline(code: string, reads: number, writes: number): Promise<GPUComputePipeline>;
  /** The bind group layout of those pipelines (one object per binding counts). */
  bindGroupLayout(reads: number, writes: number): GPUBindGroupLayout;
  /** Releases the device (every buffer and pipeline on it). */
  close(): void;
}

/** Limits raised to what the adapter offers: large tensors and many-input concatenations. */
const RAISED_LIMITS = [
  "maxBufferSize",
  "maxStorageBufferBindingSize",
  "maxStorageBuffersPerShaderStage",
  "maxComputeWorkgroupsPerDimension",
] as const;

/** Dawn's entry point, loaded once per thread; undefined where the package cannot load. */
let dawn: Promise<GPU | undefined> | undefined;

function loadDawn(): Promise<GPU | undefined> {
  paceDawnPolling();
  return dawn ??= import("webgpu").then(
    // Dawn's WebGPU objects are the standard interfaces; its constants are Deno's globals.
    (module) => module.create([]) as unknown as GPU,
    () => undefined,
  );
}

/** The entry point of an implementation in this thread, if it has one. */
async function entryPoint(implementation: GpuImplementation): Promise<GPU | undefined> {
  if (implementation === "dawn") return await loadDawn();
  return (globalThis.navigator as Navigator | undefined)?.gpu;
}

/**
 * Opens the first adapter `implementation` offers (software ones included: llvmpipe is
 * what CI has), or null when it cannot load, has no adapter or makes no device from it.
 */
export async function openGpuOn(implementation: GpuImplementation): Promise<GpuContext | null> {
  const gpu = await entryPoint(implementation);
  if (!gpu) return null;
  let adapter: GPUAdapter | null;
  try {
    adapter = await gpu.requestAdapter({ powerPreference: "high-performance" });
  } catch {
    return null; // no usable backend (e.g. no Vulkan/GL driver at all)
  }
  if (!adapter) return null;
  const requiredLimits: Record<string, number> = {};
  for (const name of RAISED_LIMITS) requiredLimits[name] = adapter.limits[name];
  const shaderF16 = adapter.features.has("shader-f16");
  let device: GPUDevice;
  try {
    device = await adapter.requestDevice({
      requiredLimits,
      requiredFeatures: shaderF16 ? ["shader-f16"] : [],
    });
  } catch {
    return null;
  }
  const info = adapter.info;
  const description: GpuAdapterDescription = {
    description: info.description || `${info.vendor} ${info.device}`.trim(),
    vendor: info.vendor,
    architecture: info.architecture,
    isFallbackAdapter: Boolean((info as { isFallbackAdapter?: boolean }).isFallbackAdapter),
    shaderF16,
  };
  return createContext(implementation, device, description);
}

/**
 * The gpu device's context: on `implementation` when given, else on Dawn where it opens
 * and on Deno's built-in WebGPU otherwise (said in one log line); null when neither opens.
 */
export async function openGpu(implementation?: GpuImplementation): Promise<GpuContext | null> {
  if (implementation) return await openGpuOn(implementation);
  const onDawn = await openGpuOn("dawn");
  if (onDawn) return onDawn;
  const builtIn = await openGpuOn("deno");
  if (builtIn) {
    console.warn(
      `nnserve: Dawn (npm webgpu) ${(await loadDawn()) ? "found no adapter" : "does not load"} ` +
        "here; the gpu device runs on Deno's built-in WebGPU",
    );
  }
  return builtIn;
}

function createContext(
  implementation: GpuImplementation,
  device: GPUDevice,
  adapter: GpuAdapterDescription,
): GpuContext {
  const pipelines = new Map<string, Promise<GPUComputePipeline>>();
  const layouts = new Map<string, { group: GPUBindGroupLayout; pipeline: GPUPipelineLayout }>();

  function layout(reads: number, writes: number) {
    const key = `${reads}/${writes}`;
    let found = layouts.get(key);
    if (!found) {
      const entries: GPUBindGroupLayoutEntry[] = [
        { binding: 0, visibility: GPUShaderStage.COMPUTE, buffer: { type: "uniform" } },
      ];
      for (let i = 0; i < reads + writes; i++) {
        entries.push({
          binding: 1 + i,
          visibility: GPUShaderStage.COMPUTE,
          buffer: { type: i < reads ? "read-only-storage" : "storage" },
        });
      }
      const group = device.createBindGroupLayout({ entries });
      found = { group, pipeline: device.createPipelineLayout({ bindGroupLayouts: [group] }) };
      layouts.set(key, found);
    }
    return found;
  }

  async function compile(code: string, reads: number, writes: number) {
    device.pushErrorScope("validation");
    const module = device.createShaderModule({ code });
    const pipeline = device.createComputePipeline({
      layout: layout(reads, writes).pipeline,
      compute: { module, entryPoint: "main" },
    });
    const error = await device.popErrorScope();
    if (error) throw new Error(`WGSL pipeline rejected: ${error.message}\n${code}`);
    return pipeline;
  }

  return {
    implementation,
    device,
    adapter,
    lost: device.lost,
    pipeline(code, reads, writes) {
      const key = `${reads}/${writes}\n${code}`;
      let found = pipelines.get(key);
      if (!found) {
        found = compile(code, reads, writes);
        found.catch(() => pipelines.delete(key));
        pipelines.set(key, found);
      }
      return found;
    },
    bindGroupLayout(reads, writes) {
      return layout(reads, writes).group;
    },
    close() {
      pipelines.clear();
      layouts.clear();
      device.destroy();
    },
  };
}
