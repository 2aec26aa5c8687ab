import { OCR_RECOGNIZER, MOONSHINE_ENCODER } from "./bench/published_models.ts";
import { convertOnnx } from "./converter/onnx/convert.ts";
import { buildModel } from "./driver/model/model.ts";
import { prepareModel } from "./driver/compilation/prepare.ts";
import { discoverDevices } from "./driver/devices/device_list.ts";
import { Executable } from "./driver/execution/executable.ts";
import { seededFloats } from "./kernels/seeded_random.ts";
await discoverDevices({ gpu: false });
const which = Deno.args[0] ?? "rec";
const file = which === "rec" ? OCR_RECOGNIZER : MOONSHINE_ENCODER;
const model = buildModel(convertOnnx(Deno.readFileSync(file)).model);
const placement = model.runOrder.map(() => "onnxruntime");
const ex = new Executable(prepareModel(model, { preference: "FAST_SINGLE_ANSWER", priority: "MEDIUM" }, placement));
await ex.prepareUnits();
const shapes = which === "rec" ? [96, 128, 160, 200, 240, 280, 320, 360, 400, 440, 480, 520, 560, 600, 640].map((w) => [1, 3, 48, w]) : [8000, 9000, 10000, 11000, 12000, 13000, 14000, 15000, 16000, 17000, 18000, 19000, 20000].map((n) => [1, n]);
for (const shape of shapes) {
  const n = shape.reduce((a, b) => a * b, 1);
  const t = performance.now();
  await ex.runAsync([{ data: seededFloats(n, 1, 2), shape }]);
  const t1 = performance.now();
  await ex.runAsync([{ data: seededFloats(n, 1, 2), shape }]);
  console.log(`${shape.join("x")}: new ${(t1 - t).toFixed(1)} ms, again ${(performance.now() - t1).toFixed(1)} ms`);
}
ex.release();
