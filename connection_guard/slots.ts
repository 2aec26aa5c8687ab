/**
 * What the connection guard's worker and the server's thread share about each forwarded
 * connection, without a message per request: one row of int32 fields per loopback port of
 * the guard's connection to the private server (the port is how the private server's
 * handler finds its connection).
 */

/** Fields of a connection's row. */
export const Field = {
  /** Nonzero while a guarded connection holds the port: which one (the worker's count). */
  generation: 0,
  /** Requests the handler has begun and not yet ended. */
  inFlight: 1,
  /** 1 once a request head arrived (the header timeout no longer applies). */
  started: 2,
  /** 1 once a response was a WebSocket upgrade (101): never timed out again. */
  upgraded: 3,
  /** When the last request ended: milliseconds since `epoch`, wrapping at 2^32. */
  lastEnded: 4,
  /** 1 once the client's end of the connection closed (it sends nothing more). */
  clientEnded: 5,
} as const;

const FIELDS = 6;
const PORTS = 65_536;

/** Shared rows, and the clock both threads write times with. */
export interface Slots {
  buffer: SharedArrayBuffer;
  /** `Date.now()` when the rows were made; times are stored relative to it. */
  epoch: number;
}

export function newSlots(): Slots {
  return {
    buffer: new SharedArrayBuffer(PORTS * FIELDS * Int32Array.BYTES_PER_ELEMENT),
    epoch: Date.now(),
  };
}

/** Index of `field` of the row of `port`. */
export function at(port: number, field: number): number {
  return port * FIELDS + field;
}

/** Now, as stored in `lastEnded`. */
export function tick(slots: Slots): number {
  return (Date.now() - slots.epoch) | 0;
}

/** Milliseconds from stored time `then` to now (correct across the 2^32 wrap). */
export function since(slots: Slots, then: number): number {
  return (tick(slots) - then) | 0;
}

/** Messages between the server's thread and the guard's worker. */
export type ToWorker =
  | {
    type: "listen";
    hostname: string;
    port: number;
    headerMs: number;
    idleMs: number;
    slots: Slots;
  }
  | { type: "start"; upstreamPort: number }
  | { type: "stopAccepting" }
  | { type: "closeAll"; graceMs: number };

export type FromWorker =
  | { type: "listening"; port: number; hostname: string }
  | { type: "listenFailed"; name: string; message: string }
  | { type: "clientEnded"; port: number; generation: number }
  | { type: "closed"; port: number; generation: number }
  | { type: "done"; of: "stopAccepting" | "closeAll" };
