/**
 * `deno task cts`: the NNAPI CTS conformance suite through the HTTP API, against a server
 * started in-process on a free port (or an already running one with `--url`).
 * Usage: deno task cts [--filter RE] [--versions V1_0,V1_1,V1_2] [--concurrency N]
 *                      [--memory] [--signed] [--devices a,b] [--verbose]
 *                      [--url URL [--api-key KEY]]
 * `--memory` passes every CONSTANT_REFERENCE constant, input and output through shared
 * memories (`POST /v1/memories`) instead of inline JSON. `--signed` runs the HAL 1.3
 * TENSOR_QUANT8_ASYMM_SIGNED forms of the quant8 cases instead (tests/cts/signed.ts).
 * Prints each failure with its reason, a per-operation table and last the line
 * `cts: N passed, M failed, K skipped`; exits with 1 when a case failed.
 */
import { parseArgs } from "node:util";
import { startServer } from "../../server.ts";
import { type ConformanceReport, runConformance } from "./runner.ts";
import { ctsDirectory } from "./vectors.ts";

function printReport(report: ConformanceReport): void {
  for (const failure of report.failures) console.log(`FAILED ${failure.name}: ${failure.reason}`);
  const operations = Object.keys(report.perOperation).sort();
  if (operations.length > 0) {
    const width = Math.max(9, ...operations.map((op) => op.length));
    console.log(`${"operation".padEnd(width)}  passed  failed  skipped`);
    for (const op of operations) {
      const t = report.perOperation[op];
      console.log(
        `${op.padEnd(width)}  ${String(t.passed).padStart(6)}  ${String(t.failed).padStart(6)}  ${
          String(t.skipped).padStart(7)
        }`,
      );
    }
  }
  console.log(`cts: ${report.passed} passed, ${report.failed} failed, ${report.skipped} skipped`);
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      filter: { type: "string" },
      versions: { type: "string", default: "V1_0,V1_1,V1_2" },
      concurrency: { type: "string", default: "4" },
      verbose: { type: "boolean", default: false },
      memory: { type: "boolean", default: false },
      signed: { type: "boolean", default: false },
      devices: { type: "string" },
      url: { type: "string" },
      "api-key": { type: "string" },
    },
  });
  let directory: string;
  try {
    directory = ctsDirectory();
  } catch (error) {
    console.error(`cts: ${(error as Error).message}`);
    return 1;
  }
  const concurrency = Number(values.concurrency);
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    console.error(`cts: --concurrency must be a positive integer, not ${values.concurrency}`);
    return 2;
  }
  const versions = values.versions.split(",").map((v) => v.trim()).filter(Boolean);
  let dataDir: string | undefined;
  let server: Awaited<ReturnType<typeof startServer>> | undefined;
  let baseUrl = values.url;
  if (baseUrl === undefined) {
    dataDir = await Deno.makeTempDir({ prefix: "nnserve-cts-" });
    server = await startServer({ hostname: "127.0.0.1", port: 0, dataDir, verbose: false });
    baseUrl = server.url;
  }
  try {
    const report = await runConformance({
      baseUrl,
      apiKey: values["api-key"],
      versions,
      filter: values.filter === undefined ? undefined : new RegExp(values.filter),
      concurrency,
      directory,
      memory: values.memory,
      signed: values.signed,
      devices: values.devices?.split(",").map((d) => d.trim()).filter(Boolean),
      onCase: values.verbose
        ? (r) =>
          console.log(
            `${r.outcome.toUpperCase()} ${r.name} (${r.ms.toFixed(0)} ms)${
              r.reason ? `: ${r.reason}` : ""
            }`,
          )
        : undefined,
    });
    printReport(report);
    return report.failed > 0 ? 1 : 0;
  } finally {
    await server?.close();
    if (dataDir) await Deno.remove(dataDir, { recursive: true });
  }
}

if (import.meta.main) Deno.exit(await main());
