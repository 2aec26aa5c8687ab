/**
 * The control block a compute lane shares with the thread that drives it (one
 * SharedArrayBuffer per lane): int32 fields, then the float64 arguments of the call.
 * The driver writes the kernel index and arguments, then bumps `generation`; the lane
 * runs the call and stores that generation in `done`.
 */
export const LANE_CONTROL = {
  /** Int32 field indexes. */
  generation: 0,
  done: 1,
  kernel: 2,
  argc: 3,
  /** Non-zero when the lane's last call threw. */
  error: 4,
  /** 1 once the lane instantiated its modules and waits for calls. */
  ready: 5,
  ints: 8,
  argsOffset: 32,
  maxArgs: 24,
  bytes: 32 + 24 * 8,
} as const;

/**
 * Polls before sleeping in `Atomics.wait` (a few tens of microseconds): kernel calls come
 * back to back during a run, and a futex wake-up costs more than the spin.
 */
export const LANE_SPIN = 2_000;

/** What a lane worker is sent once, at start. */
export interface LaneStart {
  memory: WebAssembly.Memory;
  /** The lane's kernel table: each module's `exports` by name, module after module. */
  modules: WebAssembly.Module[];
  exports: string[];
  buffer: SharedArrayBuffer;
  /**
   * Where the lane learns that its driving thread was terminated (a worker's child
   * workers outlive it): when `counters[index]` is no longer `epoch`, the lane ends.
   */
  owner?: { counters: Int32Array; index: number; epoch: number };
}

/** How often an idle lane checks that its owner is alive (ms). */
export const LANE_OWNER_CHECK_MS = 1000;
