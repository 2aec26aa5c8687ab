/** The start-up calibration: short, and every number it reports positive and finite. */
import { ok } from "node:assert/strict";
import { calibrateGpu } from "./calibration.ts";
import { eachGpu } from "./test_helpers.ts";

eachGpu(
  "calibrateGpu() measures compute and transfer costs in well under a second",
  async (gpu) => {
    const calibration = await calibrateGpu(gpu);
    for (const [name, value] of Object.entries(calibration)) {
      ok(Number.isFinite(value) && value >= 0, `${name} is ${value}`);
    }
    ok(calibration.gpuMicrosPerMac > 0 && calibration.cpuMicrosPerMac > 0);
    ok(calibration.transferMicros > 0);
    // Alone it takes 0.2-0.4 s on llvmpipe; the bound leaves room for a loaded CI machine.
    ok(calibration.elapsedMs < 2000, `calibration took ${calibration.elapsedMs} ms`);
  },
);
