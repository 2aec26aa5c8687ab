/**
 * The search: dynamic programming over the run order, exact for the accounting of
 * `evaluate.ts`.
 *
 * A Viterbi over "device of operation i" alone is not exact: what a read costs depends on
 * where its operand was written and on which spaces already hold a copy, i.e. on decisions
 * made arbitrarily far back. So the state after step i is everything the future can see:
 * the device of step i (subgraph overhead, switch count) and, for each operand still to be
 * read after i (the "live" frontier), its home space and the set of spaces holding a copy.
 * Two paths reaching the same state have the same cheapest completion, so keeping the best
 * path per state (latency) or the Pareto front of per-device loads per state (throughput) is
 * exact. Ties break on fewer switches, then on earlier devices (the sum of device positions).
 * Pareto fronts can grow exponentially (the throughput problem is NP-hard): past
 * `maxStates` that search gives up and `throughput.ts` falls back to a heuristic.
 *
 * Cost: O(n · S · D · (k + w)) for n operations, D devices, k inputs per operation, w live
 * operands and S states per step. S ≤ D · (M · 2^(M−1))^w for M memory spaces: tiny for
 * chains and the narrow DAGs of real models (w of 1–3); wide frontiers are capped at
 * `maxStates` by keeping the cheapest states so far (a beam), and the result then says it
 * is not exact. Memory: one label per kept state per step (back-pointers).
 */
import { type IndexedProblem, less, type Objective } from "./problem.ts";

interface Label {
  /** Device position of this step's operation (−1 before the first). */
  device: number;
  /** Per live operand after this step: home space · 2^M + bitmask of spaces holding it. */
  codes: number[];
  cost: number;
  /** Per-device share of `cost` (throughput only). */
  loads: number[];
  switches: number;
  /** Sum of device positions along the path: ties go to earlier devices. */
  rank: number;
  prev: Label | undefined;
}

/** A device position per operation position, and whether the search stayed exact. */
export interface SearchResult {
  devices: number[];
  exact: boolean;
}

/** Operands live before each step: read at that step or later. */
function liveFrontiers(ix: IndexedProblem): number[][] {
  const read = (x: number) => ix.lastRead.has(x);
  const live = [[...new Set(ix.problem.modelInputs)].filter(read).sort((a, b) => a - b)];
  ix.operations.forEach((op, i) => {
    const next = live[i].filter((x) => ix.lastRead.get(x)! > i);
    next.push(...op.outputs.filter(read));
    live.push(next.sort((a, b) => a - b));
  });
  return live;
}

function better(a: Label, b: Label): boolean {
  if (less(a.cost, b.cost)) return true;
  if (less(b.cost, a.cost)) return false;
  return a.switches < b.switches || (a.switches === b.switches && a.rank < b.rank);
}

function sum(values: number[]): number {
  return values.reduce((a, b) => a + b, 0);
}

function bottleneck(label: Label): number {
  return Math.max(0, ...label.loads);
}

/** Better for throughput: lower bottleneck, then lower latency, switches, rank. */
function betterThroughput(a: Label, b: Label): boolean {
  const [x, y] = [bottleneck(a), bottleneck(b)];
  if (less(x, y)) return true;
  if (less(y, x)) return false;
  return better(a, b);
}

/** No completion can make `b` beat `a` under any throughput tie-break. */
function dominates(a: Label, b: Label): boolean {
  return a.switches <= b.switches && a.rank <= b.rank &&
    a.loads.every((load, k) => !less(b.loads[k], load));
}

/**
 * The best device per operation. "latency" minimises the sum of costs, each device's share
 * scaled by `weights` when given (the throughput heuristic's scalarisation); past
 * `maxStates` it keeps the cheapest states (a beam) and says so. "throughput" keeps Pareto
 * fronts, pruned by `bound` (a known plan's bottleneck); past `maxStates` it gives up and
 * answers undefined, as a beam on partial loads would balance prefixes greedily.
 */
export function search(
  ix: IndexedProblem,
  objective: Objective,
  options: { maxStates: number; bound?: number; weights?: number[] },
): SearchResult | undefined {
  const live = liveFrontiers(ix);
  const full = 2 ** ix.spaces.length;
  const devices = ix.problem.devices.length;
  const throughput = objective === "throughput";
  const weights = options.weights ?? new Array(devices).fill(1);
  const hostBit = 1 << ix.host;
  const start: Label = {
    device: -1,
    codes: live[0].map(() => ix.host * full + hostBit),
    cost: 0,
    loads: throughput ? new Array(devices).fill(0) : [],
    switches: 0,
    rank: 0,
    prev: undefined,
  };
  // Least compute still to come: no plan's bottleneck is below the average device's share.
  const rest = ix.operations.map((op) => Math.min(...op.allowed.map((d) => op.costs[d]!)));
  rest.push(0);
  for (let i = rest.length - 2; i >= 0; i--) rest[i] += rest[i + 1];
  let labels: Label[] = [start];
  let exact = true;
  for (let i = 0; i < ix.operations.length; i++) {
    const op = ix.operations[i];
    const before = live[i];
    const inputAt = op.inputs.map((x) => before.indexOf(x));
    const carry = live[i + 1].map((x) => {
      const p = before.indexOf(x);
      return p >= 0 ? p : -1 - op.outputs.indexOf(x);
    });
    const best = new Map<string, Label[]>();
    for (const label of labels) {
      for (const d of op.allowed) {
        const s = ix.spaceOf[d];
        const bit = 1 << s;
        let charge = op.costs[d]! + (d === label.device ? 0 : ix.overhead);
        const codes = label.codes.slice();
        op.inputs.forEach((x, k) => {
          const code = codes[inputAt[k]];
          if (((code % full) & bit) === 0) {
            charge += ix.transfer(x, Math.floor(code / full), s);
            codes[inputAt[k]] = code + bit;
          }
        });
        const outCodes = op.outputs.map((y) => {
          if (!ix.modelOutputs.has(y) || s === ix.host) return s * full + bit;
          charge += ix.transfer(y, s, ix.host);
          return s * full + (bit | hostBit);
        });
        const next: Label = {
          device: d,
          codes: carry.map((c) => c >= 0 ? codes[c] : outCodes[-1 - c]),
          cost: label.cost + charge * weights[d],
          loads: label.loads,
          switches: label.switches + (label.device >= 0 && d !== label.device ? 1 : 0),
          rank: label.rank + d,
          prev: label,
        };
        const key = `${d}|${next.codes.join(",")}`;
        const kept = best.get(key);
        if (!throughput) {
          if (kept === undefined) best.set(key, [next]);
          else if (better(next, kept[0])) kept[0] = next;
          continue;
        }
        next.loads = label.loads.slice();
        next.loads[d] += charge;
        if (
          options.bound !== undefined &&
          (less(options.bound, bottleneck(next)) ||
            less(options.bound, (sum(next.loads) + rest[i + 1]) / devices))
        ) continue;
        if (kept === undefined) best.set(key, [next]);
        else if (!kept.some((k) => dominates(k, next))) {
          best.set(key, [...kept.filter((k) => !dominates(next, k)), next]);
        }
      }
    }
    labels = [...best.values()].flat();
    if (labels.length > options.maxStates) {
      if (throughput) return undefined;
      labels.sort((a, b) => better(a, b) ? -1 : better(b, a) ? 1 : 0);
      labels.length = options.maxStates;
      exact = false;
    }
  }
  if (labels.length === 0) return undefined; // the bound was below every plan
  const winner = labels.reduce((a, b) =>
    (throughput ? betterThroughput(b, a) : better(b, a)) ? b : a
  );
  const chosen: number[] = [];
  for (let l: Label | undefined = winner; l !== undefined && l.device >= 0; l = l.prev) {
    chosen.push(l.device);
  }
  return { devices: chosen.reverse(), exact };
}
