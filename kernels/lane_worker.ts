/**
 * A compute lane (`compute_lanes.ts`): instantiates the kernel modules on the shared memory
 * it is sent, then serves calls from its control block (`lane_protocol.ts`) until its worker
 * ends. It never returns to the event loop: between calls it spins briefly, then sleeps in
 * `Atomics.wait`, waking now and then to see whether its owner was terminated.
 */
/// <reference lib="deno.worker" />
import { LANE_CONTROL, LANE_OWNER_CHECK_MS, LANE_SPIN, type LaneStart } from "./lane_protocol.ts";

type Kernel = (...args: number[]) => void;

self.onmessage = (event: MessageEvent<LaneStart>) => {
  self.onmessage = null;
  const { memory, modules, exports, buffer, owner } = event.data;
  const kernels = modules.flatMap((module) => {
    const instance = new WebAssembly.Instance(module, { env: { memory } });
    return exports.map((name) => instance.exports[name] as Kernel);
  });
  const control = new Int32Array(buffer, 0, LANE_CONTROL.ints);
  const args = new Float64Array(buffer, LANE_CONTROL.argsOffset, LANE_CONTROL.maxArgs);
  Atomics.store(control, LANE_CONTROL.ready, 1);
  const alive = owner
    ? () => Atomics.load(owner.counters, owner.index) === owner.epoch
    : () => true;
  serve(control, args, kernels, alive);
  self.close();
};

/** Serves calls while `alive()` says its owner still runs. */
function serve(
  control: Int32Array,
  args: Float64Array,
  kernels: Kernel[],
  alive: () => boolean,
): void {
  let seen = 0;
  while (alive()) {
    let generation = Atomics.load(control, LANE_CONTROL.generation);
    for (let i = 0; generation === seen && i < LANE_SPIN; i++) {
      generation = Atomics.load(control, LANE_CONTROL.generation);
    }
    if (generation === seen) {
      Atomics.wait(control, LANE_CONTROL.generation, seen, LANE_OWNER_CHECK_MS);
      continue;
    }
    seen = generation;
    try {
      const kernel = kernels[control[LANE_CONTROL.kernel]];
      kernel(...args.subarray(0, control[LANE_CONTROL.argc]));
      control[LANE_CONTROL.error] = 0;
    } catch {
      control[LANE_CONTROL.error] = 1;
    }
    Atomics.store(control, LANE_CONTROL.done, generation);
    Atomics.notify(control, LANE_CONTROL.done);
  }
}
