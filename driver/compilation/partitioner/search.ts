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
 * path per state is exact. Ties break on fewer switches, then on earlier devices (the sum of
 * device positions).
 *
 * Cost: O(n · S · D · (k + w)) for n operations, D devices, k inputs per operation, w live
 * operands and S states per step. S ≤ D · (M · 2^(M−1))^w for M memory spaces: tiny for
 * chains and the narrow DAGs of real models (w of 1–3); wide frontiers are capped at
 * `maxStates` by keeping the cheapest states so far (a beam), and the result then says it
 * is not exact. Memory: one label per kept state per step (back-pointers).
 */
import { type IndexedProblem, less } from "./problem.ts";

interface Label {
  /** Device position of this step's operation (−1 before the first). */
  device: number;
  /** Per live operand after this step: home space · 2^M + bitmask of spaces holding it. */
  codes: number[];
  cost: number;
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

/**
 * The live operands' codes once a subgraph in the transient space `space` ends: those it
 * homes move to the host (the charge), and its copies of the others are gone.
 */
function endSubgraph(
  ix: IndexedProblem,
  live: readonly number[],
  codes: readonly number[],
  space: number,
  full: number,
): { codes: number[]; charge: number } {
  const bit = 1 << space;
  const hostBit = 1 << ix.host;
  let charge = 0;
  const ended = codes.map((code, k) => {
    const home = Math.floor(code / full);
    const mask = code % full;
    if (home !== space) return home * full + (mask & ~bit);
    if ((mask & hostBit) === 0) charge += ix.transfer(live[k], space, ix.host);
    return ix.host * full + hostBit;
  });
  return { codes: ended, charge };
}

function better(a: Label, b: Label): boolean {
  if (less(a.cost, b.cost)) return true;
  if (less(b.cost, a.cost)) return false;
  return a.switches < b.switches || (a.switches === b.switches && a.rank < b.rank);
}

/**
 * The best device per operation: the least sum of costs. Past `maxStates` it keeps the
 * cheapest states (a beam) and says so.
 */
export function search(ix: IndexedProblem, options: { maxStates: number }): SearchResult {
  const live = liveFrontiers(ix);
  const full = 2 ** ix.spaces.length;
  const hostBit = 1 << ix.host;
  const start: Label = {
    device: -1,
    codes: live[0].map(() => ix.host * full + hostBit),
    cost: 0,
    switches: 0,
    rank: 0,
    prev: undefined,
  };
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
    const best = new Map<string, Label>();
    for (const label of labels) {
      // Leaving a subgraph in a transient space: its outputs still to be read go home first.
      const ended = label.device >= 0 && ix.transient[ix.spaceOf[label.device]]
        ? endSubgraph(ix, before, label.codes, ix.spaceOf[label.device], full)
        : undefined;
      for (const d of op.allowed) {
        const s = ix.spaceOf[d];
        const bit = 1 << s;
        const switched = d !== label.device;
        let charge = op.costs[d]! + (switched ? ix.overhead : 0);
        let codes = label.codes.slice();
        if (switched && ended) {
          codes = ended.codes.slice();
          charge += ended.charge;
        }
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
          cost: label.cost + charge,
          switches: label.switches + (label.device >= 0 && d !== label.device ? 1 : 0),
          rank: label.rank + d,
          prev: label,
        };
        const key = `${d}|${next.codes.join(",")}`;
        const kept = best.get(key);
        if (kept === undefined || better(next, kept)) best.set(key, next);
      }
    }
    labels = [...best.values()];
    if (labels.length > options.maxStates) {
      labels.sort((a, b) => better(a, b) ? -1 : better(b, a) ? 1 : 0);
      labels.length = options.maxStates;
      exact = false;
    }
  }
  const winner = labels.reduce((a, b) => better(b, a) ? b : a);
  const chosen: number[] = [];
  for (let l: Label | undefined = winner; l !== undefined && l.device >= 0; l = l.prev) {
    chosen.push(l.device);
  }
  return { devices: chosen.reverse(), exact };
}
