/**
 * A burst's memory slot table (NNAPI's burst memory cache): slot numbers the client chose,
 * each holding a memory pool for the burst's lifetime, at most `maxSlots` of them; what a
 * request waits for when it names slots the table lacks (the client is asked for them,
 * NNAPI's `IBurstCallback::getMemories`); and the slots' memory held for a running request.
 */
import type { HeldPool, Pool } from "../../memory/pools.ts";
import { DriverError } from "../../nnapi/errors.ts";
import type { BurstRequest } from "./protocol.ts";

/** Slots a request waits for, and how its wait ends. */
interface SlotWaiter {
  slots: Set<number>;
  resolve(): void;
}

/** The slots of one burst. */
export class SlotTable {
  readonly #slots = new Map<number, HeldPool>();
  readonly #maxSlots: number;
  #released = false;
  #waiter?: SlotWaiter;

  constructor(maxSlots: number) {
    this.#maxSlots = maxSlots;
  }

  /** Slots mapped now. */
  get size(): number {
    return this.#slots.size;
  }

  /** Whether `slot` may be mapped: it is mapped already (a remap), or the table has room. */
  roomFor(slot: number): boolean {
    return this.#slots.has(slot) || this.#slots.size < this.#maxSlots;
  }

  /** The refusal of a slot the table has no room for. */
  full(): DriverError {
    return new DriverError(
      "RESOURCE_EXHAUSTED_PERSISTENT",
      `the burst maps ${this.#maxSlots} memory slots already (maxSlots): free one first`,
    );
  }

  /**
   * The one place a slot takes a memory, new or in place of the one it held. Keeps nothing
   * (false) when the burst has ended or the table filled up while the memory was resolved.
   */
  set(slot: number, held: HeldPool): boolean {
    if (this.#released || !this.roomFor(slot)) {
      held.release();
      return false;
    }
    this.#slots.get(slot)?.release();
    this.#slots.set(slot, held);
    return true;
  }

  /** The one place a slot lets go of its memory (freed, or the burst ended). */
  free(slot: number): void {
    this.#slots.get(slot)?.release();
    this.#slots.delete(slot);
  }

  /** A map of `slot` was answered (mapped or refused): a request waiting for it goes on. */
  settle(slot: number): void {
    const waiter = this.#waiter;
    if (!waiter) return;
    waiter.slots.delete(slot);
    if (waiter.slots.size === 0) waiter.resolve();
  }

  /**
   * Waits until every slot `request` names that the table lacks is settled, or `limitMs`;
   * `ask` asks the client for them (given once, when some are missing).
   */
  async resolve(
    request: BurstRequest,
    limitMs: number,
    ask: (missing: number[]) => void,
  ): Promise<void> {
    const missing = new Set<number>();
    for (const arg of [...request.inputs, ...request.outputs]) {
      if (arg.kind === "slot" && !this.#slots.has(arg.slot)) missing.add(arg.slot);
    }
    if (missing.size === 0) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, limitMs);
      this.#waiter = {
        slots: new Set(missing),
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      ask([...missing]);
    });
    this.#waiter = undefined;
  }

  /**
   * The memory of a mapped slot, held for a request (in `holds`) so that freeing the slot
   * while the request runs keeps it counted until the request is done.
   */
  hold(slot: number, what: string, holds: HeldPool[]): Pool {
    const held = this.#slots.get(slot);
    if (!held) {
      throw new DriverError("INVALID_ARGUMENT", `${what}: memory slot ${slot} is not mapped`);
    }
    holds.push(held.retain());
    return held.pool;
  }

  /** The burst ended: every slot lets go, a waiting request goes on, nothing maps again. */
  release(): void {
    this.#released = true;
    for (const slot of [...this.#slots.keys()]) this.free(slot);
    this.#waiter?.resolve();
  }
}
