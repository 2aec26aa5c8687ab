/**
 * The partitioner applied to a real model and real devices: the gpu (WebGPU; llvmpipe here)
 * chosen where test costs make it cheapest, and NNAPI's CPU fallback when it fails to prepare
 * a subgraph: the step moves to cpu-reference, the placement follows, the plan says why.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { discoverDevices } from "../../devices/device_list.ts";
import { buildModel } from "../../model/model.ts";
import { ModelSchema } from "../../model/model_schema.ts";
import { partitionModel } from "./model_partition.ts";
import { float32Tensor as tensor, int32Scalar as int32 } from "../../../tools/model_json.ts";

/** CONV_2D -> FLOOR -> CONV_2D: the gpu runs the convolutions, not FLOOR. */
function model() {
  return buildModel(ModelSchema.parse({
    operands: [
      tensor([1, 4, 4, 1], "MODEL_INPUT"),
      tensor([1, 3, 3, 1], "CONSTANT_COPY", [1, 0, -1, 2, 0, -2, 1, 0, -1]),
      tensor([1], "CONSTANT_COPY", [0]),
      int32(1),
      int32(1),
      int32(0),
      tensor([1, 4, 4, 1], "TEMPORARY_VARIABLE"),
      tensor([1, 4, 4, 1], "TEMPORARY_VARIABLE"),
      tensor([1, 4, 4, 1], "MODEL_OUTPUT"),
    ],
    operations: [
      { type: "CONV_2D", inputs: [0, 1, 2, 3, 4, 4, 5], outputs: [6] },
      { type: "FLOOR", inputs: [6], outputs: [7] },
      { type: "CONV_2D", inputs: [7, 1, 2, 3, 4, 4, 5], outputs: [8] },
    ],
    inputIndexes: [0],
    outputIndexes: [8],
  }));
}

Deno.test("a step its device fails to prepare falls back to cpu-reference, and the plan says so", async () => {
  const { list: devices, costs } = await discoverDevices({ gpu: true });
  ok(
    devices.some((d) => d.info.name === "gpu"),
    "no WebGPU adapter (Debian's libegl-mesa0 and libgl1-mesa-dri provide llvmpipe)",
  );
  const forced = new Map(costs);
  forced.set("gpu", { microsPerWork: 1e-9, transfer: { fixedMicros: 0, microsPerByte: 0 } });
  const m = model();
  const partitioned = partitionModel(m, devices, { costs: forced });
  deepStrictEqual(partitioned.summary.steps.map((s) => [s.device, s.operations]), [
    ["gpu", [0]],
    ["cpu-reference", [1]],
    ["gpu", [2]],
  ]);
  deepStrictEqual(partitioned.placement, ["gpu", "cpu-reference", "gpu"]);
  const fallen = partitioned.fallBack(2, "cpu-reference", "gpu failed to prepare it (test)");
  deepStrictEqual(fallen.summary.steps.map((s) => [s.device, s.operations, s.fallback]), [
    ["gpu", [0], undefined],
    ["cpu-reference", [1, 2], "gpu failed to prepare it (test)"],
  ]);
  deepStrictEqual(fallen.placement, ["gpu", "cpu-reference", "cpu-reference"]);
  strictEqual(fallen.summary.switches, 1);
  ok(
    fallen.summary.estimatedCost >= partitioned.summary.estimatedCost,
    "the fallback costs no less",
  );
  // Falling back again keeps the earlier note.
  const both = fallen.fallBack(0, "cpu-reference", "gpu failed to prepare it (again)");
  deepStrictEqual(both.summary.steps.map((s) => [s.device, s.operations]), [
    ["cpu-reference", [0, 1, 2]],
  ]);
  ok(both.summary.steps[0].fallback?.startsWith("gpu failed to prepare it"));
});

/** CONV_2D -> ADD of a constant: a matrix product, then element-wise work. */
function convAddModel() {
  return buildModel(ModelSchema.parse({
    operands: [
      tensor([1, 8, 8, 4], "MODEL_INPUT"),
      tensor([4, 3, 3, 4], "CONSTANT_COPY", Array.from({ length: 144 }, (_, i) => i % 3 - 1)),
      tensor([4], "CONSTANT_COPY", [0, 0, 0, 0]),
      int32(1),
      int32(1),
      int32(0),
      tensor([1, 8, 8, 4], "TEMPORARY_VARIABLE"),
      tensor([1, 8, 8, 4], "CONSTANT_COPY", Array.from({ length: 256 }, (_, i) => i / 256)),
      tensor([1, 8, 8, 4], "MODEL_OUTPUT"),
    ],
    operations: [
      { type: "CONV_2D", inputs: [0, 1, 2, 3, 4, 4, 5], outputs: [6] },
      { type: "ADD", inputs: [6, 7, 5], outputs: [8] },
    ],
    inputIndexes: [0],
    outputIndexes: [8],
  }));
}

Deno.test("operations are priced at their class's speed: each goes to the device fastest at its kind of work", async () => {
  // The host devices alone: the costs below are theirs.
  const { list: devices, costs } = await discoverDevices({
    names: ["cpu-simd", "cpu-reference"],
  });
  // cpu-simd far faster at matrix products, slower at element-wise work.
  const priced = new Map(costs);
  priced.set("cpu-simd", { microsPerWork: 1e-4, perClass: { gemm: 1e-4, elementwise: 1e-2 } });
  priced.set("cpu-reference", { microsPerWork: 1e-3, perClass: { gemm: 1e-3, elementwise: 1e-3 } });
  const split = partitionModel(convAddModel(), devices, { costs: priced });
  deepStrictEqual(split.placement, ["cpu-simd", "cpu-reference"]);
  // One number per device, as before: cpu-simd is cheaper at everything.
  priced.set("cpu-simd", { microsPerWork: 1e-4 });
  priced.set("cpu-reference", { microsPerWork: 1e-3 });
  deepStrictEqual(partitionModel(convAddModel(), devices, { costs: priced }).placement, [
    "cpu-simd",
    "cpu-simd",
  ]);
});

Deno.test("start-up calibration measures each class a host device runs, robustly and in well under a second", async () => {
  const { calibrateHostDevice } = await import("../../devices/calibration.ts");
  const { cpuReference } = await import("../../devices/cpu_reference/device.ts");
  const { cpuSimd } = await import("../../devices/cpu_simd/device.ts");
  const started = performance.now();
  const reference = calibrateHostDevice(cpuReference)!;
  const simd = calibrateHostDevice(cpuSimd)!;
  const ms = performance.now() - started;
  ok(ms < 1000, `calibration took ${ms} ms`);
  deepStrictEqual(Object.keys(reference.perClass!).sort(), [
    "elementwise",
    "gemm",
    "movement",
    "window",
  ]);
  // cpu-simd runs no data movement of its own.
  deepStrictEqual(Object.keys(simd.perClass!).sort(), ["elementwise", "gemm", "window"]);
  for (const costs of [reference, simd]) {
    for (const micros of Object.values(costs.perClass!)) ok(micros > 0 && Number.isFinite(micros));
    strictEqual(costs.microsPerWork, costs.perClass!.gemm);
  }
});
