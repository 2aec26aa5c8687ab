/**
 * The throughput objective: minimise the busiest device's load (then latency). Spreading
 * operations over devices to minimise the largest load is makespan scheduling on unrelated
 * machines, NP-hard, so no search is both exact and polynomial. Three stages:
 * 1. Lagrangian: repeatedly minimise a weighted sum of the devices' loads (an exact scalar
 *    search), raising the weights of devices that came out busy and lowering the idle ones
 *    (multiplicative weights); keep the best plan seen. This reaches plans on the convex hull
 *    of the achievable loads.
 * 2. Local search: move single operations to another device while that lowers the
 *    bottleneck (at subgraph boundaries only on large models), within a work budget.
 * 3. The exact Pareto search of `search.ts`, pruned by the bottleneck found so far; it gives
 *    up when its fronts outgrow `paretoStates`, and the plan then says it is not optimal.
 */
import { evaluate, measure } from "./evaluate.ts";
import { type IndexedProblem, less, type Partition } from "./problem.ts";
import { search } from "./search.ts";

/** Weight updates of the Lagrangian stage: each is one scalar search. */
const ROUNDS = 48;
/** Initial step of the weight updates (decays as 1/√round). */
const STEP = 0.5;
/** Operation visits the local search may spend (one trial move costs one per operation). */
const LOCAL_WORK = 2_000_000;

type Loads = number[];

function peak(loads: Loads): number {
  return Math.max(0, ...loads);
}

function sum(loads: Loads): number {
  return loads.reduce((a, b) => a + b, 0);
}

/** Lower bottleneck, then lower latency. */
function improves(a: Loads, b: Loads): boolean {
  if (less(peak(a), peak(b))) return true;
  if (less(peak(b), peak(a))) return false;
  return less(sum(a), sum(b));
}

/** The plan with the lowest bottleneck found, from the latency optimum's `fastest` devices. */
export function balance(
  ix: IndexedProblem,
  fastest: number[],
  options: { maxStates: number; paretoStates: number },
): Partition {
  const devices = localSearch(ix, lagrangian(ix, fastest, options.maxStates));
  const bound = peak(measure(ix, devices));
  const exact = search(ix, "throughput", { maxStates: options.paretoStates, bound });
  if (exact === undefined) return evaluate(ix, devices, "throughput", false);
  return evaluate(ix, exact.devices, "throughput", exact.exact);
}

/** Multiplicative weights over the devices' loads; the best plan seen. */
function lagrangian(ix: IndexedProblem, fastest: number[], maxStates: number): number[] {
  let best = fastest;
  let bestLoads = measure(ix, fastest);
  let loads = bestLoads;
  const weights = loads.map(() => 1);
  for (let round = 0; round < ROUNDS; round++) {
    const top = peak(loads);
    if (top === 0) break;
    const mean = sum(loads) / loads.length;
    const step = STEP / Math.sqrt(round + 1);
    loads.forEach((load, d) => weights[d] *= Math.exp(step * (load - mean) / top));
    const total = sum(weights);
    weights.forEach((w, d) => weights[d] = (w * weights.length) / total);
    const found = search(ix, "latency", { maxStates, weights })!.devices;
    loads = measure(ix, found);
    if (improves(loads, bestLoads)) [best, bestLoads] = [found, loads];
  }
  return best;
}

/**
 * First-improvement moves of one operation to another device. On models where trying every
 * move would exhaust the budget in a pass, only operations at a subgraph boundary move, and
 * only to a neighbour's device (shifting the boundary).
 */
function localSearch(ix: IndexedProblem, start: number[]): number[] {
  const devices = [...start];
  const n = devices.length;
  const everywhere = n * n * ix.problem.devices.length <= LOCAL_WORK / 4;
  let loads = measure(ix, devices);
  let work = 0;
  for (let improved = true; improved && work < LOCAL_WORK;) {
    improved = false;
    for (let i = 0; i < n && work < LOCAL_WORK; i++) {
      const current = devices[i];
      const options = everywhere
        ? ix.operations[i].allowed
        : [devices[i - 1], devices[i + 1]].filter((d) => ix.operations[i].allowed.includes(d));
      for (const d of options) {
        if (d === current) continue;
        devices[i] = d;
        const trial = measure(ix, devices);
        work += n;
        if (improves(trial, loads)) {
          loads = trial;
          improved = true;
          break;
        }
        devices[i] = current;
      }
    }
  }
  return devices;
}
