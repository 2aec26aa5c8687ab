/**
 * `onnxruntime` (#31, opt-in for now): runs of consecutive steps handed to onnxruntime
 * (`onnxruntime-node`, native code, MIT), as NNAPI hands partitions to vendor drivers. Its
 * preparation writes the steps as an ONNX model (`converter/onnx_export/`, the one place the
 * driver reaches into ONNX) and opens a session on it; each run feeds the unit's inputs and
 * takes the outputs the rest of the plan reads. It claims exactly the operations the
 * exporter writes (float32, constant parameters). Listed only where the package loads, with
 * one log line where it does not.
 */
import type { TensorData } from "../../../nnapi/tensor.ts";
import {
  type Device,
  type DeviceCosts,
  float32Operand,
  int32Operand,
  type RunnableSubgraph,
  type SubgraphOperand,
  type SubgraphRuntime,
  type SubgraphStep,
} from "../device.ts";
import { subgraphDevice } from "../subgraph_device.ts";
import {
  type ExportedModel,
  exportsStep,
  exportSteps,
} from "../../../converter/onnx_export/export.ts";
import { EXPORT_RULES } from "../../../converter/onnx_export/rules/index.ts";
import type { OperationType } from "../../../nnapi/types.ts";
import { borrowThreads, callThreadLimit, returnThreads } from "../../../kernels/compute_lanes.ts";

/** Its name; its version is the loaded onnxruntime-node's and the exporter's. */
export const ONNXRUNTIME_DEVICE_NAME = "onnxruntime";
/**
 * The exporter's revision: with onnxruntime's version, the device's version, part of every
 * cache key (a plan and its units' artifacts are made for both).
 */
const EXPORT_REVISION = 4;
/** Its memory space: tensors are copied into and out of its sessions. */
export const ONNXRUNTIME_MEMORY = "onnxruntime";

type Ort = typeof import("onnxruntime-node");

let loaded: Promise<Ort | undefined> | undefined;

/** onnxruntime-node, loaded once per thread; undefined (and said once) where it cannot load. */
function loadOrt(): Promise<Ort | undefined> {
  return loaded ??= import("onnxruntime-node").then(
    (ort) => ort,
    (error) => {
      console.warn(
        `nnserve: onnxruntime-node does not load here (${error}); no onnxruntime device`,
      );
      return undefined;
    },
  );
}

/** The operands a run of steps reads from outside it (not constants, not its own). */
function unitInputs(steps: readonly SubgraphStep[], operands: readonly SubgraphOperand[]) {
  const produced = new Set<number>();
  const inputs: number[] = [];
  for (const step of steps) {
    for (const i of step.inputs) {
      const o = operands[i];
      if (!o || o.value !== undefined || !o.type.startsWith("TENSOR_")) continue;
      if (!produced.has(i) && !inputs.includes(i)) inputs.push(i);
    }
    step.outputs.forEach((i) => produced.add(i));
  }
  return inputs;
}

/**
 * The data in memory of its own: an arena's view is shared memory, which a session does not
 * take, so it is copied (a typed array's `slice` is one block copy).
 */
function owned(data: TensorData): TensorData {
  return data.buffer instanceof SharedArrayBuffer ? data.slice() : data;
}

/** onnxruntime's element type of an operand the exporter writes. */
const ORT_TYPES = {
  TENSOR_FLOAT32: "float32",
  TENSOR_INT32: "int32",
  TENSOR_BOOL8: "bool",
} as const;

type Session = Awaited<ReturnType<Ort["InferenceSession"]["create"]>>;

/** The thread counts a unit opens sessions for: 1, 2, 4, … below `most`, and `most`. */
function threadCounts(most: number): number[] {
  const counts: number[] = [];
  for (let n = 1; n < most; n *= 2) counts.push(n);
  counts.push(most);
  return counts;
}

/**
 * One unit's sessions, one per thread count (onnxruntime fixes a session's intra-op threads
 * when it opens it), so that a run uses the threads it can borrow from the executors' one
 * budget (`NNSERVE_THREADS`) and never more: one execution alone gets every thread,
 * concurrent ones split them evenly. The sessions for one thread and for the most are opened at
 * preparation; one between is opened the first time a run's share calls for it, and that
 * run takes the largest open session within its share meanwhile.
 */
class UnitSessions {
  readonly #open = new Map<number, Session>();
  readonly #opening = new Map<number, Promise<void>>();
  readonly #counts: number[];
  #released = false;

  private constructor(
    private readonly ort: Ort,
    private readonly bytes: Uint8Array,
    most: number,
  ) {
    this.#counts = threadCounts(most);
  }

  static async open(ort: Ort, bytes: Uint8Array, most: number): Promise<UnitSessions> {
    const sessions = new UnitSessions(ort, bytes, most);
    await Promise.all([sessions.#openFor(1), sessions.#openFor(most)]);
    return sessions;
  }

  #openFor(threads: number): Promise<void> {
    let opening = this.#opening.get(threads);
    if (!opening) {
      opening = this.ort.InferenceSession.create(this.bytes, {
        intraOpNumThreads: threads,
        interOpNumThreads: 1,
        executionMode: "sequential",
        // Its intra-op threads spin within a run, not after it: a session's threads must not
        // keep a core spinning once a run of another session starts. One client alternating
        // MobileNetV2 and PP-OCR's classifier over HTTP waited 12.6-12.8 ms a MobileNetV2
        // answer with onnxruntime's default spinning against 6.1-7.2 ms with it stopped (2
        // cores, 2026-11-29). One model alone answered one client 4-25% more requests/s
        // spinning in six runs and 8% fewer in a seventh; batched runs under load once
        // gained 40% stopped (before runs under load took one thread each).
        extra: { session: { force_spinning_stop: "1" } },
        // Warnings (initializers it folded away) are not the service's log lines.
        logSeverityLevel: 3,
      }).then((session) => {
        // One opened for a run's share while the unit was being let go closes at once.
        if (this.#released) void session.release();
        else this.#open.set(threads, session);
      });
      this.#opening.set(threads, opening);
    }
    return opening;
  }

  /** Runs `feeds` on the session for the threads this run can borrow. */
  async run(feeds: Parameters<Session["run"]>[0]) {
    const counts = this.#counts;
    const borrowed = borrowThreads(counts[counts.length - 1] - 1);
    const share = counts.findLast((n) => n <= 1 + borrowed)!;
    if (!this.#open.has(share)) {
      this.#openFor(share).catch(() => this.#opening.delete(share));
    }
    const threads = counts.findLast((n) => n <= share && this.#open.has(n))!;
    returnThreads(borrowed - (threads - 1));
    try {
      return await this.#open.get(threads)!.run(feeds);
    } finally {
      returnThreads(threads - 1);
    }
  }

  release(): void {
    this.#released = true;
    this.#opening.clear();
    for (const session of this.#open.values()) void session.release();
    this.#open.clear();
  }
}

/**
 * Sessions open in this thread for exports of units whose extents come at execution, by the
 * export's key ({@link ExportedModel}) and the most threads they take. A unit prepared for a
 * new signature whose export is the same as an earlier one's (a recognizer at another image
 * width, where its model only names the width) takes that one's sessions: opening its own
 * took 150-330 ms a width for PP-OCRv4's recognizer.
 */
const openSessions = new Map<string, { sessions: Promise<UnitSessions>; users: number }>();

/**
 * The sessions of an exported model, shared in this thread when it has a key, else its own;
 * `release` when done (the last user of shared ones closes them).
 */
async function unitSessions(
  ort: Ort,
  model: ExportedModel,
  most: number,
): Promise<{ sessions: UnitSessions; release(): void }> {
  if (model.key === undefined) {
    const sessions = await UnitSessions.open(ort, model.bytes, most);
    return { sessions, release: () => sessions.release() };
  }
  const key = `${most}:${model.key}`;
  let shared = openSessions.get(key);
  if (!shared) {
    const opening = { sessions: UnitSessions.open(ort, model.bytes, most), users: 0 };
    opening.sessions.catch(() => {
      if (openSessions.get(key) === opening) openSessions.delete(key);
    });
    openSessions.set(key, shared = opening);
  }
  const entry = shared;
  entry.users++;
  let sessions: UnitSessions;
  try {
    sessions = await entry.sessions;
  } catch (error) {
    entry.users--;
    throw error;
  }
  let released = false;
  return {
    sessions,
    release() {
      if (released) return;
      released = true;
      if (--entry.users > 0) return;
      if (openSessions.get(key) === entry) openSessions.delete(key);
      sessions.release();
    },
  };
}

/** Sessions open in this thread for shared exports (tests). */
export function sharedSessionCount(): number {
  return openSessions.size;
}

/**
 * `model` as onnxruntime rewrites it at its "extended" level (fusions that hold on any CPU;
 * the layout changes of its "all" level are made per machine when a session opens): what a
 * later process opens in about half the time, kept as the unit's artifact.
 */
async function optimizedModel(ort: Ort, model: Uint8Array): Promise<Uint8Array> {
  const file = await Deno.makeTempFile({ prefix: "nnserve-onnxruntime-", suffix: ".onnx" });
  try {
    const session = await ort.InferenceSession.create(model, {
      graphOptimizationLevel: "extended",
      optimizedModelFilePath: file,
      intraOpNumThreads: 1,
      logSeverityLevel: 3,
    });
    await session.release();
    return await Deno.readFile(file);
  } finally {
    await Deno.remove(file).catch(() => {});
  }
}

/** The runtime that prepares and runs the device's units (in any thread). */
export const onnxruntimeRuntime: SubgraphRuntime = {
  servesOtherShapes: true,
  async prepare(steps, options): Promise<RunnableSubgraph> {
    const ort = await loadOrt();
    if (!ort) throw new Error("onnxruntime-node does not load in this thread");
    const { operands, needed } = options;
    const inputs = unitInputs(steps, operands);
    const outputs = [...needed];
    // onnxruntime reads a model from memory of its own (an artifact may be shared).
    let model: ExportedModel;
    if (options.artifact) model = { bytes: owned(options.artifact) as Uint8Array };
    else {
      for (const step of steps) {
        if (!exportsStep(step, operands)) {
          throw new Error(`${step.type} is not exported in this form`);
        }
      }
      model = exportSteps(steps, operands, { inputs, outputs });
      if (options.keepArtifact) model = { bytes: await optimizedModel(ort, model.bytes) };
    }
    const { sessions, release } = await unitSessions(ort, model, callThreadLimit());
    return {
      inputs,
      outputs,
      ...(options.keepArtifact ? { artifact: model.bytes } : {}),
      async run(given) {
        const feeds = Object.fromEntries(inputs.map((i) => {
          const type = ORT_TYPES[operands[i].type as keyof typeof ORT_TYPES];
          const data = owned(given.get(i)!) as Float32Array;
          return [`o${i}`, new ort.Tensor(type, data, [...operands[i].shape])];
        }));
        const result = await sessions.run(feeds);
        return new Map(outputs.map((i) => [i, result[`o${i}`].data as TensorData]));
      },
      destroy() {
        release();
      },
    };
  },
};

/** The operation types it may claim (the exporter's rules). */
export function onnxruntimeOperationTypes(): OperationType[] {
  return Object.keys(EXPORT_RULES) as OperationType[];
}

let discovered: Promise<{ device: Device; costs: DeviceCosts } | undefined> | undefined;

/**
 * The onnxruntime device with its measured costs, or undefined where onnxruntime-node does
 * not load; `referenceMicrosPerWork` (the reference CPU's) makes its capabilities relative.
 */
export function discoverOnnxruntime(
  referenceMicrosPerWork: number,
): Promise<{ device: Device; costs: DeviceCosts } | undefined> {
  return discovered ??= (async () => {
    const ort = await loadOrt();
    if (!ort) return undefined;
    const costs = await calibrate();
    const device = subgraphDevice({
      name: ONNXRUNTIME_DEVICE_NAME,
      type: "CPU",
      version: `${ort.env.versions.node}+export.${EXPORT_REVISION}`,
      halVersion: "V1_3",
      memorySpace: ONNXRUNTIME_MEMORY,
      costs,
      referenceMicrosPerWork,
      operationTypes: onnxruntimeOperationTypes(),
      supports: (op, operands) =>
        exportsStep({ type: op.type, inputs: op.inputs, outputs: op.outputs }, operands),
      runtime: onnxruntimeRuntime,
    });
    return { device, costs };
  })();
}

/** Timed runs of each calibration chain; the fastest counts. */
const CALIBRATION_RUNS = 9;

/**
 * Its costs, measured: a chain of 32-channel 3x3 convolutions on 32x32 (µs per multiply-add:
 * the chain of four over the chain of one, so a run's fixed cost cancels), and a tiny run's
 * time as the fixed cost of crossing into a session and back. Each is the fastest of several
 * runs, as the host devices' are (`calibration.ts`): a run preempted by other work counts
 * for nothing. A model whose extents are known only at execution is costed at small
 * representative extents, where the fixed cost weighs most: at 5 times its quiet value
 * (about 40 µs here) PaddleOCR's classifier and Moonshine's encoder as published leave this
 * device for cpu-simd and the reference (8 times slower for Moonshine), as a clean-checkout
 * test run on a busy machine once planned them.
 */
async function calibrate(): Promise<DeviceCosts> {
  const size = 32;
  const depth = 32;
  const tensor = float32Operand;
  const int = int32Operand;
  const image = [1, size, size, depth];
  const filter = Float32Array.from(
    { length: depth * 9 * depth },
    (_, i) => ((i * 7919) % 2048) / 1e5,
  );
  const timeChain = async (length: number) => {
    // operands: 0 input, 1 filter, 2 bias, 3 SAME, 4 stride 1, 5 no activation, then outputs.
    const operands: SubgraphOperand[] = [
      tensor(image),
      tensor([depth, 3, 3, depth], filter),
      tensor([depth], new Float32Array(depth)),
      int(1),
      int(1),
      int(0),
    ];
    const steps: SubgraphStep[] = [];
    let from = 0;
    for (let k = 0; k < length; k++) {
      operands.push(tensor(image));
      steps.push({
        type: "CONV_2D",
        inputs: [from, 1, 2, 3, 4, 4, 5],
        outputs: [operands.length - 1],
      });
      from = operands.length - 1;
    }
    const unit = await onnxruntimeRuntime.prepare(steps, {
      operands,
      needed: new Set([from]),
    });
    const input = new Map([[0, new Float32Array(size * size * depth).fill(0.5) as TensorData]]);
    await unit.run(input);
    let fastest = Infinity;
    for (let r = 0; r < CALIBRATION_RUNS; r++) {
      const started = performance.now();
      await unit.run(input);
      fastest = Math.min(fastest, (performance.now() - started) * 1000);
    }
    unit.destroy();
    return fastest;
  };
  const one = await timeChain(1);
  const four = await timeChain(4);
  const macs = size * size * depth * 9 * depth;
  const microsPerWork = Math.max((four - one) / (3 * macs), 1e-7);
  return {
    microsPerWork,
    // A unit's run crosses into a session and back: half the fixed cost each way.
    transfer: { fixedMicros: Math.max((one - microsPerWork * macs) / 2, 1), microsPerByte: 1e-4 },
  };
}
