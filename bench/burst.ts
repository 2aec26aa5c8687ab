/**
 * Bursts against REST: executions per second of a stream of frames sent (a) as one REST
 * request per frame (`POST .../executions`, one after the other, as a camera loop would)
 * and (b) through a pipelined burst (`Burst.computePipelined`), in the same run, for a small
 * model (3x3 CONV_2D, 1x32x32x3 float32 → 8 channels) and a camera-sized one (3x3 stride-2
 * CONV_2D, 1x224x224x3 quant8 → 8 channels). Both go through the client SDK.
 *
 * The burst's per-frame overhead is its time per frame minus the kernel time the service
 * measured for it (mean `timing.onDeviceUs` of the same frames). The server runs as its own
 * process, as deployed, so the client's encoding and decoding run beside it, not in its
 * event loop.
 * "one at a time" is the latency of `Burst.compute` awaited frame by frame.
 */
import {
  type BurstInput,
  type Compilation,
  type ExecutionResult,
  NnClient,
} from "../client/mod.ts";
import { seededFloats } from "../kernels/seeded_random.ts";
import { spawnServer } from "./server_process.ts";

const SECONDS = 3;
const WARMUP_SECONDS = 0.5;
/** Distinct input frames cycled through. */
const FRAMES = 8;

/** out = conv3x3(in) + bias, SAME padding, stride 1: [1,32,32,3] → [1,32,32,8] float32. */
async function smallModel(client: NnClient): Promise<Compilation> {
  const m = client.model();
  const scalar = (v: number) => {
    const i = m.addOperand({ type: "INT32" });
    m.setOperandValue(i, v);
    return i;
  };
  const input = m.addOperand({ type: "TENSOR_FLOAT32", dimensions: [1, 32, 32, 3] });
  const filter = m.addOperand({ type: "TENSOR_FLOAT32", dimensions: [8, 3, 3, 3] });
  const bias = m.addOperand({ type: "TENSOR_FLOAT32", dimensions: [8] });
  const output = m.addOperand({ type: "TENSOR_FLOAT32", dimensions: [1, 32, 32, 8] });
  m.setOperandValue(filter, seededFloats(8 * 3 * 3 * 3, 1, 1));
  m.setOperandValue(bias, seededFloats(8, 2, 0.1));
  const [same, one, none] = [scalar(1), scalar(1), scalar(0)];
  m.addOperation("CONV_2D", [input, filter, bias, same, one, one, none], [output]);
  m.identifyInputsAndOutputs([input], [output]);
  return await client.compile(m, { preference: "SUSTAINED_SPEED" });
}

/** Quant8 conv3x3 stride 2, SAME, ReLU: [1,224,224,3] → [1,112,112,8] uint8. */
async function cameraModel(client: NnClient): Promise<Compilation> {
  const m = client.model();
  const scalar = (v: number) => {
    const i = m.addOperand({ type: "INT32" });
    m.setOperandValue(i, v);
    return i;
  };
  const q8 = (dimensions: number[], scale: number, zeroPoint: number) =>
    m.addOperand({ type: "TENSOR_QUANT8_ASYMM", dimensions, scale, zeroPoint });
  const input = q8([1, 224, 224, 3], 1 / 128, 128);
  const filter = q8([8, 3, 3, 3], 1 / 64, 127);
  const bias = m.addOperand({ type: "TENSOR_INT32", dimensions: [8], scale: 1 / 8192 });
  const output = q8([1, 112, 112, 8], 1 / 16, 0);
  m.setOperandValue(filter, Uint8Array.from(seededFloats(8 * 27, 3, 255), (v) => 127 + v));
  m.setOperandValue(bias, Int32Array.from(seededFloats(8, 4, 2000), Math.round));
  const [same, two, relu] = [scalar(1), scalar(2), scalar(1)];
  m.addOperation("CONV_2D", [input, filter, bias, same, two, two, relu], [output]);
  m.identifyInputsAndOutputs([input], [output]);
  return await client.compile(m, { preference: "SUSTAINED_SPEED" });
}

interface Rate {
  perSecond: number;
  /** Mean kernel time of the frames (µs), when measured. */
  onDeviceUs: number;
}

function meanOnDevice(results: ExecutionResult[]): number {
  const timed = results.filter((r) => r.timing).map((r) => r.timing!.onDeviceUs);
  return timed.reduce((a, b) => a + b, 0) / Math.max(1, timed.length);
}

/** One REST request per frame, each awaited before the next. */
async function restRate(compilation: Compilation, frames: BurstInput[][], seconds: number) {
  const timings: ExecutionResult[] = [];
  let done = 0;
  const started = performance.now();
  const end = started + seconds * 1000;
  while (performance.now() < end) {
    const inputs = frames[done % frames.length] as Float32Array[];
    const result = await compilation.compute(inputs, { measureTiming: true });
    if (timings.length < 1000) timings.push(result);
    done++;
  }
  return {
    perSecond: done / ((performance.now() - started) / 1000),
    onDeviceUs: meanOnDevice(timings),
  };
}

/** Frames through one pipelined burst for `seconds`. */
async function burstRate(
  compilation: Compilation,
  frames: BurstInput[][],
  seconds: number,
): Promise<Rate> {
  await using burst = await compilation.burst();
  let onDeviceUs = 0;
  let timed = 0;
  const started = performance.now();
  const end = started + seconds * 1000;
  function* stream(): Generator<BurstInput[]> {
    for (let i = 0; performance.now() < end; i++) yield frames[i % frames.length];
  }
  const done = await burst.computePipelined(stream(), (result) => {
    if (result.timing) {
      onDeviceUs += result.timing.onDeviceUs;
      timed++;
    }
  }, { measureTiming: true });
  return {
    perSecond: done / ((performance.now() - started) / 1000),
    onDeviceUs: onDeviceUs / Math.max(1, timed),
  };
}

/** One burst request at a time (latency, not throughput). */
async function burstSequentialRate(
  compilation: Compilation,
  frames: BurstInput[][],
  seconds: number,
): Promise<Rate> {
  await using burst = await compilation.burst();
  const timings: ExecutionResult[] = [];
  let done = 0;
  const started = performance.now();
  const end = started + seconds * 1000;
  while (performance.now() < end) {
    const result = await burst.compute(frames[done % frames.length], { measureTiming: true });
    if (timings.length < 1000) timings.push(result);
    done++;
  }
  return {
    perSecond: done / ((performance.now() - started) / 1000),
    onDeviceUs: meanOnDevice(timings),
  };
}

async function compare(
  label: string,
  compilation: Compilation,
  frames: BurstInput[][],
  targets = "",
): Promise<void> {
  await restRate(compilation, frames, WARMUP_SECONDS);
  await burstRate(compilation, frames, WARMUP_SECONDS);
  const rest = await restRate(compilation, frames, SECONDS);
  const pipelined = await burstRate(compilation, frames, SECONDS);
  const sequential = await burstSequentialRate(compilation, frames, SECONDS);
  const us = (rate: Rate) => 1e6 / rate.perSecond;
  const row = (name: string, rate: Rate) =>
    `  ${name.padEnd(26)} ${rate.perSecond.toFixed(0).padStart(7)} exec/s  ${
      us(rate).toFixed(0).padStart(6)
    } µs/frame  kernel ${rate.onDeviceUs.toFixed(0).padStart(5)} µs  ${overhead(rate)}`;
  // Executions of a pipelined burst overlap on the executor workers: when frames take less
  // wall time than the kernel, there is no per-frame overhead to show.
  const overhead = (rate: Rate) =>
    us(rate) >= rate.onDeviceUs
      ? `overhead ${(us(rate) - rate.onDeviceUs).toFixed(0).padStart(5)} µs`
      : "frames overlap on the workers";
  console.log(label);
  console.log(row("REST, one request/frame", rest));
  console.log(row("burst, pipelined", pipelined));
  console.log(row("burst, one at a time", sequential));
  console.log(
    `  ratio pipelined burst / REST: ${(pipelined.perSecond / rest.perSecond).toFixed(2)}x; ` +
      `burst per frame above the kernel: ${overhead(pipelined)}${targets}`,
  );
}

/** Prints REST and burst rates for both models, their ratio and the burst overhead. */
export async function burst(): Promise<void> {
  const server = await spawnServer();
  try {
    const client = new NnClient({ baseUrl: server.url });
    const small = await smallModel(client);
    const smallFrames = Array.from(
      { length: FRAMES },
      (_, i) => [seededFloats(32 * 32 * 3, 10 + i, 2)],
    );
    await compare(
      "3x3 CONV_2D, 1x32x32x3 float32 → 1x32x32x8:",
      small,
      smallFrames,
      " (targets: ratio >= 3x, overhead < 100 µs)",
    );
    const camera = await cameraModel(client);
    const cameraFrames = Array.from({ length: FRAMES }, (_, i) => [
      Uint8Array.from(seededFloats(224 * 224 * 3, 20 + i, 255), (v) => 128 + v),
    ]);
    await compare("3x3/2 CONV_2D, 1x224x224x3 quant8 → 1x112x112x8:", camera, cameraFrames);
  } finally {
    await server.stop();
  }
}
