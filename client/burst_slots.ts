/**
 * The memory slots of a burst: small integers standing for service memories in requests
 * (`{slot, offset, length}`), so a frame names a memory in 4 bytes instead of its id.
 *
 * The table owns the slot → memory map and the `map`/`free` control messages awaiting the
 * service's answer. A slot is either mapped up front (`map`, answered `mapped`) or only
 * registered here (`set`), in which case the service asks for it the first time a request
 * uses it (`getMemories`, NNAPI `IBurstCallback::getMemories`) and the table answers.
 */
import type { Memory } from "./memory.ts";

/** Sends one control message (JSON text) to the service, if the socket is still open. */
export type SendControl = (message: Record<string, unknown>) => void;

interface ControlWaiter {
  resolve(): void;
  reject(error: unknown): void;
}

/** Takes the oldest waiter of `slot` (answers come in the order the messages were sent). */
function settle(waiters: Map<number, ControlWaiter[]>, slot: number): ControlWaiter | undefined {
  const list = waiters.get(slot);
  const waiter = list?.shift();
  if (list?.length === 0) waiters.delete(slot);
  return waiter;
}

function wait(waiters: Map<number, ControlWaiter[]>, slot: number, waiter: ControlWaiter): void {
  const list = waiters.get(slot);
  if (list) list.push(waiter);
  else waiters.set(slot, [waiter]);
}

/** The slot table of one burst; the burst checks slots and the socket before calling it. */
export class SlotTable {
  readonly #send: SendControl;
  readonly #slots = new Map<number, Memory>();
  /** Per slot, the `map` messages sent and not yet answered (`mapped` or `error`). */
  readonly #mapWaiters = new Map<number, ControlWaiter[]>();
  readonly #freeWaiters = new Map<number, ControlWaiter[]>();

  constructor(send: SendControl) {
    this.#send = send;
  }

  /** Registers `memory` as `slot` without telling the service (it asks when it needs it). */
  set(slot: number, memory: Memory): void {
    this.#slots.set(slot, memory);
  }

  /**
   * Maps `slot` to `memory` on the service; resolves once it answered `mapped`. A refused
   * map also unregisters the slot, unless it was given another memory since.
   */
  map(slot: number, memory: Memory): Promise<void> {
    this.#slots.set(slot, memory);
    return new Promise((resolve, reject) => {
      wait(this.#mapWaiters, slot, {
        resolve: () => resolve(),
        reject: (error) => {
          if (this.#slots.get(slot) === memory) this.#slots.delete(slot);
          reject(error);
        },
      });
      this.#send({ type: "map", slot, memory: memory.id });
    });
  }

  /** Evicts `slot` here and on the service; resolves once it answered `freed`. */
  free(slot: number): Promise<void> {
    this.#slots.delete(slot);
    return new Promise((resolve, reject) => {
      wait(this.#freeWaiters, slot, { resolve: () => resolve(), reject });
      this.#send({ type: "free", slot });
    });
  }

  /**
   * The service's `getMemories`: maps each asked slot from the table. An unknown slot is
   * answered with a `map` naming no memory, which fails the request at once instead of
   * after the service's callback time limit.
   */
  answerGetMemories(slots: unknown): void {
    if (!Array.isArray(slots)) return;
    for (const slot of slots) {
      if (typeof slot !== "number") continue;
      const memory = this.#slots.get(slot);
      wait(this.#mapWaiters, slot, { resolve() {}, reject() {} });
      this.#send({ type: "map", slot, ...(memory ? { memory: memory.id } : {}) });
    }
  }

  /** The service's `mapped` for `slot`. */
  mapped(slot: number): void {
    settle(this.#mapWaiters, slot)?.resolve();
  }

  /** The service's `freed` for `slot`. */
  freed(slot: number): void {
    settle(this.#freeWaiters, slot)?.resolve();
  }

  /**
   * The service's `error` naming `slot`: fails the oldest `map` of it. False when none was
   * waiting, so the error belongs to the burst.
   */
  mapFailed(slot: number, error: unknown): boolean {
    const waiter = settle(this.#mapWaiters, slot);
    waiter?.reject(error);
    return waiter !== undefined;
  }

  /** Fails every `map` and `free` still waiting (the socket closed). */
  rejectAll(error: unknown): void {
    for (const waiters of [...this.#mapWaiters.values(), ...this.#freeWaiters.values()]) {
      for (const waiter of waiters) waiter.reject(error);
    }
    this.#mapWaiters.clear();
    this.#freeWaiters.clear();
  }
}
