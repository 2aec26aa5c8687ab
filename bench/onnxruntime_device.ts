/**
 * `deno run -A bench/onnxruntime_device.ts [--python]`: MobileNetV2 (the benchmarks' seeded
 * bytes) in nnserve in process (the driver's API, no HTTP) on the default plan with the
 * onnxruntime device offered, on onnxruntime and cpu-reference alone, and on the host
 * devices alone; in onnxruntime-node directly at 1 thread and at every core (first, before
 * the service starts; at every core also with its threads' spinning stopped after each run,
 * and off), and, with --python (where Python's onnxruntime is installed: the GPU machine), in
 * Python's onnxruntime likewise. Medians of 20 runs after 10 warm-ups and at least a second
 * of them, ms; then executions/s of the default plan with 1, 2, 4, 8 and every core's
 * concurrent clients, and Python's onnxruntime likewise: one session for all clients, and a
 * session per client with an equal share of the cores. A measurement for #31.
 */
import * as ort from "onnxruntime-node";
import { startServer } from "../server.ts";
import { MOBILENET_V2_INPUT, mobilenetV2Onnx } from "./mobilenet_v2_onnx.ts";
import { seededFloats } from "../kernels/seeded_random.ts";

const RUNS = 20;
const WARMUP = 10;
const cores = navigator.hardwareConcurrency;
/** Concurrent clients of the throughput rows: 1, 2, 4, 8 and every core. */
const CLIENTS = [...new Set([1, 2, 4, 8, cores])];

/** Seconds of each concurrency row, after a warm-up of the same load. */
const SECONDS = 3;
const WARMUP_SECONDS = 1.5;

/** `clients` loops running `run` until `seconds` pass: executions/s and median latency. */
async function window(clients: number, seconds: number, run: () => Promise<unknown>) {
  const latencies: number[] = [];
  const started = performance.now();
  const end = started + seconds * 1000;
  await Promise.all(Array.from({ length: clients }, async () => {
    while (performance.now() < end) {
      const begun = performance.now();
      await run();
      latencies.push(performance.now() - begun);
    }
  }));
  latencies.sort((a, b) => a - b);
  return {
    rate: latencies.length / ((performance.now() - started) / 1000),
    medianMs: latencies[latencies.length >> 1],
  };
}

async function median(run: () => Promise<unknown>): Promise<number> {
  // At least WARMUP runs and a second: a server's first second runs slower (the first row
  // measured 0.9-1 ms slower than the same placement measured next, after 10 runs).
  const warm = performance.now() + 1000;
  for (let i = 0; i < WARMUP || performance.now() < warm; i++) await run();
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now();
    await run();
    times.push(performance.now() - started);
  }
  return times.sort((a, b) => a - b)[RUNS >> 1];
}

const bytes = mobilenetV2Onnx(1);
const shape = [...MOBILENET_V2_INPUT.dims];
const input = seededFloats(3 * 224 * 224, 7, 2);
const rows: [string, number][] = [];

// onnxruntime-node first, alone on the machine (before the service's executors start); at
// every core also with the spinning settings the onnxruntime device could take (it stops its
// threads' spinning after each run, `driver/devices/onnxruntime/device.ts`).
const SPINNING: [string, Record<string, string>][] = [
  ["", {}],
  [", spinning stopped after each run", { force_spinning_stop: "1" }],
  // Keys within `session` are onnxruntime's config keys without their "session." prefix.
  [", no spinning", { "intra_op.allow_spinning": "0" }],
];
for (const threads of [1, cores]) {
  for (const [what, session] of threads === 1 ? SPINNING.slice(0, 1) : SPINNING) {
    const created = await ort.InferenceSession.create(bytes, {
      intraOpNumThreads: threads,
      interOpNumThreads: 1,
      extra: { session },
    });
    const feeds = { [MOBILENET_V2_INPUT.name]: new ort.Tensor("float32", input, shape) };
    rows.push([
      `onnxruntime-node, ${threads} thread(s)${what}`,
      await median(() => created.run(feeds)),
    ]);
    await created.release();
  }
}

const dataDir = await Deno.makeTempDir();
const server = await startServer({
  hostname: "127.0.0.1",
  port: 0,
  dataDir,
  verbose: false,
  gpu: false,
});
const { service } = server;
const owner = "bench";
const model = await service.importOnnx(owner, bytes);
for (
  const [what, devices] of [
    ["nnserve default plan", undefined],
    ["nnserve onnxruntime + cpu-reference", ["onnxruntime", "cpu-reference"]],
    ["nnserve host devices", ["cpu-simd", "cpu-reference"]],
  ] as const
) {
  const compilation = await service.driver.createCompilation(owner, {
    model: model.id,
    ...(devices ? { devices: [...devices] } : {}),
  });
  const execute = () =>
    service.driver.execute(owner, compilation.id, {
      // A copy each run: the executor takes the bytes it is given.
      inputs: [{ value: { kind: "tensor", data: input.slice(), shape } }],
    });
  const ms = await median(execute);
  const plan = (await service.driver.describeCompilation(owner, compilation.id)).plan;
  const placed = plan?.steps.map((s) => `${s.device}x${s.operations.length}`).join(" ") ?? "";
  rows.push([`${what} [${placed.slice(0, 120)}]`, ms]);
}

// Concurrent clients on the default plan: each execution borrows what the one thread budget
// (NNSERVE_THREADS, every core here) has free, so throughput grows with clients while the
// threads in use never exceed the cores.
const concurrent = await service.driver.createCompilation(owner, { model: model.id });
const rates: string[] = [];
for (const clients of CLIENTS) {
  const execute = () =>
    service.driver.execute(owner, concurrent.id, {
      inputs: [{ value: { kind: "tensor", data: input.slice(), shape } }],
    });
  // A warm-up of the same load first: sessions for a thread count open at its first run.
  await window(clients, WARMUP_SECONDS, execute);
  const { rate, medianMs } = await window(clients, SECONDS, execute);
  rates.push(
    `${clients} client(s): ${rate.toFixed(0)} executions/s, median ${medianMs.toFixed(2)} ms`,
  );
}
await server.close();
await Deno.remove(dataDir, { recursive: true });

const pythonRates: string[] = [];
if (Deno.args.includes("--python")) {
  const file = await Deno.makeTempFile({ suffix: ".onnx" });
  await Deno.writeFile(file, bytes);
  const script = `
import onnxruntime as ort, numpy as np, time, sys, threading
x = np.random.default_rng(7).uniform(-1, 1, (1, 3, 224, 224)).astype(np.float32)
for threads in (1, ${cores}):
    o = ort.SessionOptions(); o.intra_op_num_threads = threads; o.inter_op_num_threads = 1
    s = ort.InferenceSession(sys.argv[1], o, providers=["CPUExecutionProvider"])
    for _ in range(${WARMUP}): s.run(None, {"${MOBILENET_V2_INPUT.name}": x})
    t = []
    for _ in range(${RUNS}):
        a = time.perf_counter(); s.run(None, {"${MOBILENET_V2_INPUT.name}": x}); t.append((time.perf_counter() - a) * 1000)
    print(f"python onnxruntime {ort.__version__}, {threads} thread(s)\\t{sorted(t)[${
    RUNS >> 1
  }]:.3f}")
# Throughput: concurrent clients on one session with the default options, as a server would,
# and each client on a session of its own with an equal share of the cores (the most this
# machine gives onnxruntime at that many clients).
def session(threads=None):
    o = ort.SessionOptions()
    if threads: o.intra_op_num_threads = threads; o.inter_op_num_threads = 1
    s = ort.InferenceSession(sys.argv[1], o, providers=["CPUExecutionProvider"])
    s.run(None, {"${MOBILENET_V2_INPUT.name}": x}); return s
def window(sessions, clients, seconds):
    lat = []; end = time.perf_counter() + seconds
    def client(s):
        while time.perf_counter() < end:
            a = time.perf_counter(); s.run(None, {"${MOBILENET_V2_INPUT.name}": x}); lat.append((time.perf_counter() - a) * 1000)
    began = time.perf_counter()
    ts = [threading.Thread(target=client, args=(sessions[i % len(sessions)],)) for i in range(clients)]
    [t.start() for t in ts]; [t.join() for t in ts]
    lat.sort(); return len(lat) / (time.perf_counter() - began), lat[len(lat) // 2]
one = [session()]
for clients in (${CLIENTS.join(", ")}):
    window(one, clients, ${WARMUP_SECONDS}); rate, median = window(one, clients, ${SECONDS})
    print(f"rate\\tpython onnxruntime, one session, {clients} client(s): {rate:.0f} executions/s, median {median:.2f} ms")
    own = [session(max(1, ${cores} // clients)) for _ in range(clients)]
    window(own, clients, ${WARMUP_SECONDS}); rate, median = window(own, clients, ${SECONDS})
    print(f"rate\\tpython onnxruntime, a session of {max(1, ${cores} // clients)} thread(s) per client, {clients} client(s): {rate:.0f} executions/s, median {median:.2f} ms")
`;
  const out = await new Deno.Command("python3", { args: ["-c", script, file] }).output();
  for (const line of new TextDecoder().decode(out.stdout).trim().split("\n")) {
    const [what, value] = line.split("\t");
    if (what === "rate") pythonRates.push(value);
    else if (value) rows.push([what, Number(value)]);
  }
  if (!out.success) console.error(new TextDecoder().decode(out.stderr));
}

console.log(`MobileNetV2, ${cores} cores; medians of ${RUNS} runs (ms):`);
for (const [what, ms] of rows) console.log(`${ms.toFixed(2).padStart(9)}  ${what}`);
console.log(`nnserve's default plan under concurrent clients (${cores} threads in the budget):`);
for (const line of rates) console.log(`  ${line}`);
for (const line of pythonRates) console.log(`  ${line}`);
