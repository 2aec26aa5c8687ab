/**
 * GEMM n x n x n through the packed WebAssembly SIMD kernel (as a fully connected layer of
 * n rows), at 1 and 2 threads, in GFLOP/s.
 */
import { packGemmWeights } from "../../kernels/f32_packing.ts";
import { activationRangeFloat } from "../../kernels/fixed_point.ts";
import { createF32FullyConnected } from "../../kernels/manifest.ts";
import { seededFloats } from "../../kernels/seeded_random.ts";
import { lanesReady, privateThreadBudget, setThreadBudget } from "../../kernels/compute_lanes.ts";
import { measure } from "./timing.ts";

export async function gemmGflops(n: number, threads: number): Promise<number> {
  const packed = packGemmWeights(seededFloats(n * n, 1, 0.1), seededFloats(n, 2, 0.1), {
    channels: n,
    depth: n,
  });
  const run = createF32FullyConnected({ rows: n, depth: n, channels: n }, packed, {
    activation: activationRangeFloat(0),
  });
  const a = seededFloats(n * n, 3, 1);
  const out = new Float32Array(n * n);
  setThreadBudget(threads > 1 ? privateThreadBudget(threads) : undefined);
  try {
    run(a, out);
    if (threads > 1) await lanesReady(threads - 1, 10_000);
    const { median } = await measure(() => run(a, out), { warmup: 3, runs: 15, budgetMs: 3000 });
    return (2 * n ** 3) / median / 1e6;
  } finally {
    setThreadBudget(undefined);
  }
}
