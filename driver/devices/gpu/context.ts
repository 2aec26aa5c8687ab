/**
 * The WebGPU adapter and device the gpu device runs on (`navigator.gpu` in Deno), opened
 * once per process, and the compute pipelines compiled on it. A pipeline depends only on
 * its WGSL and its binding counts, so every subgraph shares one cache: preparing a second
 * model with the same kernels compiles nothing.
 */

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

/**
 * Opens the first adapter `navigator.gpu` offers (software ones included: llvmpipe is
 * what CI has), or null when there is none or no device can be made from it, so the
 * caller simply lists no gpu device.
 */
export async function openGpu(): Promise<GpuContext | null> {
  const gpu = (globalThis.navigator as Navigator | undefined)?.gpu;
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
  return createContext(device, description);
}

function createContext(device: GPUDevice, adapter: GpuAdapterDescription): GpuContext {
  const pipelines = new Map<string, Promise<GPUComputePipeline>>();
  const layouts = new Map<string, GPUPipelineLayout>();

  function layout(reads: number, writes: number): GPUPipelineLayout {
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
      found = device.createPipelineLayout({ bindGroupLayouts: [group] });
      layouts.set(key, found);
    }
    return found;
  }

  async function compile(code: string, reads: number, writes: number) {
    device.pushErrorScope("validation");
    const module = device.createShaderModule({ code });
    const pipeline = device.createComputePipeline({
      layout: layout(reads, writes),
      compute: { module, entryPoint: "main" },
    });
    const error = await device.popErrorScope();
    if (error) throw new Error(`WGSL pipeline rejected: ${error.message}\n${code}`);
    return pipeline;
  }

  return {
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
    close() {
      pipelines.clear();
      layouts.clear();
      device.destroy();
    },
  };
}
