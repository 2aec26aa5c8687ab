/**
 * Benchmarks, each printing a ratio against a reference measured in the same run.
 * Usage: deno task bench [--filter NAME]
 */
import { burst } from "./burst.ts";
import { compilationCache } from "./compilation_cache.ts";
import { kernels } from "./kernels.ts";
import { memoryInput } from "./memory_input.ts";
import { quant8Kernels } from "./quant8_kernels.ts";
import { restOverhead } from "./rest_overhead.ts";

const BENCHMARKS: Record<string, () => Promise<void>> = {
  "rest-overhead": restOverhead,
  "memory-input": memoryInput,
  "compilation-cache": compilationCache,
  kernels,
  "quant8-kernels": quant8Kernels,
  burst,
};

if (import.meta.main) {
  const i = Deno.args.indexOf("--filter");
  const filter = i >= 0 ? new RegExp(Deno.args[i + 1]) : undefined;
  for (const [name, run] of Object.entries(BENCHMARKS)) {
    if (filter && !filter.test(name)) continue;
    console.log(`== ${name}`);
    await run();
  }
}
