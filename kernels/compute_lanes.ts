/**
 * Compute lanes: worker threads that run this realm's SIMD kernels on its shared
 * {@link WasmHeap} memory, so that one large kernel call (a convolution, a GEMM) splits
 * across cores. The calling thread runs the first part itself and waits for the lanes
 * (spinning briefly, then sleeping in `Atomics.wait`), so a split call is synchronous like
 * any other kernel.
 *
 * Threads are a budget shared by every executor of the process: a counter of free threads
 * in a SharedArrayBuffer, from which each split claims lanes atomically for the length of
 * one call and gives them back after it. A call claims only what is free, so concurrent
 * executions never run more kernel threads than the budget together: one execution alone
 * gets every core, two share them. The pool counts one thread per running execution.
 */
import { LANE_CONTROL, LANE_SPIN, type LaneStart } from "./lane_protocol.ts";
import type { WasmHeap } from "./wasm_heap.ts";

/** The process-wide thread budget as one realm sees it. */
export interface ThreadBudget {
  /**
   * Index 0: threads free for lanes (the pool takes one per running execution); index
   * `slot`: the lanes this realm holds right now (the pool gives them back if it
   * terminates the realm's worker mid-call).
   */
  counters: Int32Array;
  slot: number;
  /**
   * Index of this realm's epoch in `counters`: the pool changes it when it terminates the
   * realm's worker, and the lanes (which outlive a terminated parent) then end.
   */
  epochIndex: number;
  /** The most lanes one call of this realm may add to its own thread. */
  maxLanes: number;
  /**
   * The pool's threads in all and where it counts executions: a call that holds threads for
   * a whole run (a native library's) takes at most its equal share of them.
   */
  share?: ShareCounters;
}

/**
 * Where the pool counts its executions in the budget: those running now, and the most that
 * ran at once lately (`peakIndex`, with when it was last seen, in ms since `epochMs`).
 */
export interface ShareCounters {
  threads: number;
  runningIndex: number;
  peakIndex: number;
  peakAtIndex: number;
  epochMs: number;
}

/**
 * How long the most executions seen at once still count: a client that sends its next
 * request as soon as it has an answer is between runs for the hops and its own work (up to
 * a few ms over HTTP), and an execution that starts in that gap must not take its threads.
 */
export const SHARE_WINDOW_MS = 20;

/** Records one execution more (1) or less (-1) running in `counters` (the pool's side). */
export function countRunning(counters: Int32Array, share: ShareCounters, change: 1 | -1): void {
  const running = Atomics.add(counters, share.runningIndex, change) + change;
  if (change < 0) return;
  const now = shareClock(share);
  const peak = Atomics.load(counters, share.peakIndex);
  if (running >= peak || !recent(now, Atomics.load(counters, share.peakAtIndex))) {
    Atomics.store(counters, share.peakIndex, running);
    Atomics.store(counters, share.peakAtIndex, now);
  }
}

/** Milliseconds since the pool's epoch, as the counters hold them (int32, wrapping). */
function shareClock(share: ShareCounters): number {
  return (Date.now() - share.epochMs) | 0;
}

/** Whether `at` is within the window before `now` (either way: the wall clock can step back). */
function recent(now: number, at: number): boolean {
  return Math.abs((now - at) | 0) <= SHARE_WINDOW_MS;
}

/** Lanes this realm may ever start, whatever the budget (idle lanes cost memory). */
const MAX_LANES = 15;

/** The budget this realm splits under; none (no splitting) until the executor sets it. */
let budget: ThreadBudget | undefined;

/** A budget for a process of its own (benchmarks, tests): `threads` in all, one realm. */
export function privateThreadBudget(threads: number): ThreadBudget {
  const counters = new Int32Array(new SharedArrayBuffer(12));
  counters[0] = threads - 1;
  return { counters, slot: 1, epochIndex: 2, maxLanes: threads - 1 };
}

/** Sets (or clears) the budget this realm's kernel calls split under. */
export function setThreadBudget(next: ThreadBudget | undefined): void {
  budget = next;
  if (next && next.maxLanes > 0) lanesOf.forEach((lanes) => lanes.reserve(next.maxLanes));
}

/** Calls split across lanes so far in this realm (tests and benchmarks read it). */
let splitCalls = 0;

/** How many kernel calls this realm split across lanes. */
export function splitCallCount(): number {
  return splitCalls;
}

/** Lanes of this realm ready to take calls. */
export function readyLaneCount(): number {
  let ready = 0;
  for (const lanes of lanesOf.values()) ready += lanes.readyCount;
  return ready;
}

/**
 * Waits (polling every 10 ms) until `count` lanes are ready or `timeoutMs` has passed; returns
 * how many are ready. Lanes start on a budget's first split attempt and take a second or so.
 */
export async function lanesReady(count: number, timeoutMs: number): Promise<number> {
  for (let waited = 0; readyLaneCount() < count && waited < timeoutMs; waited += 10) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return readyLaneCount();
}

/** Takes up to `wanted` lanes from the budget; returns how many it got. */
function claim(wanted: number): number {
  if (!budget || wanted <= 0) return 0;
  const { counters, slot } = budget;
  for (;;) {
    const free = Atomics.load(counters, 0);
    const take = Math.min(wanted, free);
    if (take <= 0) return 0;
    if (Atomics.compareExchange(counters, 0, free, free - take) === free) {
      Atomics.add(counters, slot, take);
      return take;
    }
  }
}

/**
 * Gives lanes back: first off this realm's slot, then to the free count, so that a worker
 * terminated between the two can only under-count (one lane idle), never over-count.
 */
function giveBack(count: number): void {
  if (!budget || count === 0) return;
  Atomics.sub(budget.counters, budget.slot, count);
  Atomics.add(budget.counters, 0, count);
}

/**
 * Borrows up to `wanted` threads beyond the calling one from the budget for a call into a
 * native library with threads of its own (onnxruntime's intra-op threads): at most the
 * budget's `maxLanes`, only what is free, and no more than an equal share of the pool's
 * threads among the executions running now or lately. A run keeps what it borrowed to its
 * end (a kernel call gives its lanes back within milliseconds), so taking everything free
 * would leave the executions that start next one thread each for as long: on 16 cores, 2
 * clients ran one execution on 16 threads beside one on 1. Give them back with
 * {@link returnThreads}.
 */
export function borrowThreads(wanted: number): number {
  return claim(Math.min(wanted, budget?.maxLanes ?? 0, fairShare() - 1));
}

/**
 * The threads one execution may hold: an equal share among those running now, or among the
 * most that ran at once within the last {@link SHARE_WINDOW_MS} (all of them without a pool).
 */
function fairShare(): number {
  const share = budget?.share;
  if (!share) return Infinity;
  const { counters } = budget!;
  let running = Atomics.load(counters, share.runningIndex);
  if (recent(shareClock(share), Atomics.load(counters, share.peakAtIndex))) {
    running = Math.max(running, Atomics.load(counters, share.peakIndex));
  }
  return Math.floor(share.threads / Math.max(1, running));
}

/** Gives back threads taken with {@link borrowThreads}. */
export function returnThreads(count: number): void {
  giveBack(count);
}

/** The most threads one call of this realm may use (its own and the lanes it may add). */
export function callThreadLimit(): number {
  return 1 + (budget?.maxLanes ?? 0);
}

/** One lane: its worker and its control block (`lane_protocol.ts`). */
interface Lane {
  worker: Worker;
  control: Int32Array;
  args: Float64Array;
  generation: number;
}

const LANE_URL = new URL("./lane_worker.ts", import.meta.url).href;
const lanesOf = new Map<WasmHeap, ComputeLanes>();

/**
 * The lanes of one heap: each lane instantiates the heap's kernel modules on its memory and
 * runs their `exports` by index (module after module, names in the order given).
 */
export class ComputeLanes {
  readonly #lanes: Lane[] = [];

  private constructor(
    readonly heap: WasmHeap,
    readonly modules: readonly WebAssembly.Module[],
    readonly exports: readonly string[],
  ) {}

  /** The lanes of `heap` running `exports` of `modules` (created on first use). */
  static of(
    heap: WasmHeap,
    modules: readonly WebAssembly.Module[],
    exports: readonly string[],
  ): ComputeLanes {
    let lanes = lanesOf.get(heap);
    if (!lanes) {
      lanes = new ComputeLanes(heap, modules, exports);
      lanesOf.set(heap, lanes);
      if (budget && budget.maxLanes > 0) lanes.reserve(budget.maxLanes);
    }
    return lanes;
  }

  /** Starts lanes up to `count` (they become usable once their modules are instantiated). */
  reserve(count: number): void {
    while (this.#lanes.length < Math.min(count, MAX_LANES)) {
      const worker = new Worker(LANE_URL, { type: "module" });
      const buffer = new SharedArrayBuffer(LANE_CONTROL.bytes);
      const lane: Lane = {
        worker,
        control: new Int32Array(buffer, 0, LANE_CONTROL.ints),
        args: new Float64Array(buffer, LANE_CONTROL.argsOffset, LANE_CONTROL.maxArgs),
        generation: 0,
      };
      const owner = budget && {
        counters: budget.counters,
        index: budget.epochIndex,
        epoch: Atomics.load(budget.counters, budget.epochIndex),
      };
      worker.postMessage(
        {
          memory: this.heap.memory,
          modules: [...this.modules],
          exports: [...this.exports],
          buffer,
          owner,
        } satisfies LaneStart,
      );
      this.#lanes.push(lane);
    }
  }

  /** How many lanes finished instantiating. */
  get readyCount(): number {
    return this.#ready().length;
  }

  /** Lanes that finished instantiating. */
  #ready(): Lane[] {
    return this.#lanes.filter((lane) => Atomics.load(lane.control, LANE_CONTROL.ready) === 1);
  }

  /**
   * Runs `parts` of one kernel call: `part(i, n)` gives the arguments of part `i` of `n`;
   * `local` runs one part in this thread. Splits into as many parts as lanes can be
   * claimed (at most `maxParts`), else runs it whole here.
   */
  run(
    kernel: number,
    maxParts: number,
    part: (index: number, count: number) => number[],
    local: (args: number[]) => void,
  ): void {
    const ready = this.#ready();
    const lanes = claim(Math.min(maxParts - 1, ready.length, budget?.maxLanes ?? 0));
    if (lanes === 0) {
      local(part(0, 1));
      return;
    }
    splitCalls++;
    const count = lanes + 1;
    const used = ready.slice(0, lanes);
    try {
      used.forEach((lane, i) => {
        const args = part(i + 1, count);
        lane.args.set(args);
        lane.control[LANE_CONTROL.kernel] = kernel;
        lane.control[LANE_CONTROL.argc] = args.length;
        lane.generation++;
        Atomics.store(lane.control, LANE_CONTROL.generation, lane.generation);
        Atomics.notify(lane.control, LANE_CONTROL.generation);
      });
      local(part(0, count));
      let failed = false;
      for (const lane of used) {
        waitDone(lane);
        if (lane.control[LANE_CONTROL.error] !== 0) failed = true;
      }
      if (failed) throw new Error("a compute lane failed in a kernel call");
    } finally {
      giveBack(lanes);
    }
  }

  /** Stops every lane (their worker threads end). */
  close(): void {
    for (const lane of this.#lanes) lane.worker.terminate();
    this.#lanes.length = 0;
    lanesOf.delete(this.heap);
  }
}

/** Waits until `lane` finished its current call: a short spin, then `Atomics.wait`. */
function waitDone(lane: Lane): void {
  const { control, generation } = lane;
  for (let i = 0; i < LANE_SPIN; i++) {
    if (Atomics.load(control, LANE_CONTROL.done) === generation) return;
  }
  for (;;) {
    const done = Atomics.load(control, LANE_CONTROL.done);
    if (done === generation) return;
    Atomics.wait(control, LANE_CONTROL.done, done, 1000);
  }
}
