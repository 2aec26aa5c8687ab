/**
 * Helpers of the burst tests: a message queue over a standard WebSocket (for raw frames),
 * a hand-made WebSocket client over TCP (for peers that never read or never answer pings),
 * and readers of the burst gauges.
 */
import { decodeResult } from "../driver/burst/protocol.ts";
import type { BurstResult } from "../driver/burst/protocol.ts";
import { metric } from "./server_fixture.ts";

/** The burst gauges of `GET /metrics`. */
export interface BurstGauges {
  active: number;
  slots: number;
  inFlight: number;
}

/** The burst gauges now. */
export async function burstGauges(baseUrl: string): Promise<BurstGauges> {
  return {
    active: await metric(baseUrl, "nnserve_bursts_active") ?? NaN,
    slots: await metric(baseUrl, "nnserve_burst_slots") ?? NaN,
    inFlight: await metric(baseUrl, "nnserve_burst_requests_in_flight") ?? NaN,
  };
}

/**
 * Polls until `check` holds (at most `attempts` times, `intervalMs` apart); returns the last
 * value. Waiting for the service to notice something is not a timing assertion: the bound
 * only keeps a broken service from hanging the test.
 */
export async function pollUntil<T>(
  read: () => Promise<T>,
  check: (value: T) => boolean,
  options: { attempts?: number; intervalMs?: number } = {},
): Promise<T> {
  const attempts = options.attempts ?? 200;
  let value = await read();
  for (let i = 1; i < attempts && !check(value); i++) {
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 50));
    value = await read();
  }
  return value;
}

/** Waits for the burst gauges to return to zero; returns them. */
export function burstGaugesAtZero(baseUrl: string): Promise<BurstGauges> {
  return pollUntil(
    () => burstGauges(baseUrl),
    (g) => g.active === 0 && g.slots === 0 && g.inFlight === 0,
  );
}

/** A message of a burst socket: a control message or a decoded RESULT frame. */
export type SocketMessage =
  | { kind: "control"; message: Record<string, unknown> }
  | { kind: "result"; result: BurstResult; bytes: Uint8Array };

/** A standard WebSocket whose messages are read one at a time, in order. */
export class MessageSocket {
  readonly socket: WebSocket;
  readonly closed: Promise<{ code: number; reason: string }>;
  readonly #messages: SocketMessage[] = [];
  #wake: (() => void) | undefined;
  #isClosed = false;

  constructor(url: string) {
    this.socket = new WebSocket(url);
    this.socket.binaryType = "arraybuffer";
    this.socket.addEventListener("message", (event) => {
      const data = event.data;
      this.#messages.push(
        typeof data === "string" ? { kind: "control", message: JSON.parse(data) } : {
          kind: "result",
          result: decodeResult(new Uint8Array(data as ArrayBuffer)),
          bytes: new Uint8Array(data as ArrayBuffer),
        },
      );
      this.#wake?.();
    });
    this.closed = new Promise((resolve) => {
      this.socket.addEventListener("close", (event) => {
        this.#isClosed = true;
        this.#wake?.();
        resolve({ code: event.code, reason: event.reason });
      });
    });
  }

  /** Opens a socket and reads its `ready` message. */
  static async open(
    url: string,
  ): Promise<{ socket: MessageSocket; ready: Record<string, unknown> }> {
    const socket = new MessageSocket(url);
    const ready = await socket.control();
    if (ready.type !== "ready") throw new Error(`expected ready, got ${JSON.stringify(ready)}`);
    return { socket, ready };
  }

  /** The next message; throws when the socket closed with none left. */
  async next(): Promise<SocketMessage> {
    while (this.#messages.length === 0) {
      if (this.#isClosed) throw new Error("the socket closed");
      await new Promise<void>((resolve) => this.#wake = resolve);
      this.#wake = undefined;
    }
    return this.#messages.shift()!;
  }

  /** The next message, which must be a control message. */
  async control(): Promise<Record<string, unknown>> {
    const m = await this.next();
    if (m.kind !== "control") {
      throw new Error(`expected a control message, got result ${m.result.id}`);
    }
    return m.message;
  }

  /** The next message, which must be a result. */
  async result(): Promise<BurstResult> {
    const m = await this.next();
    if (m.kind !== "result") {
      throw new Error(`expected a result, got control ${JSON.stringify(m.message)}`);
    }
    return m.result;
  }

  send(data: string | Uint8Array<ArrayBuffer>): void {
    this.socket.send(data);
  }

  sendControl(message: Record<string, unknown>): void {
    this.socket.send(JSON.stringify(message));
  }

  close(): Promise<{ code: number; reason: string }> {
    if (this.socket.readyState <= WebSocket.OPEN) this.socket.close();
    return this.closed;
  }
}

/** The ws: URL of a compilation's burst. */
export function burstUrl(baseUrl: string, compilation: string, accessToken?: string): string {
  const url = new URL(`${baseUrl}/v1/compilations/${compilation}/burst`);
  url.protocol = "ws:";
  if (accessToken) url.searchParams.set("access_token", accessToken);
  return url.href;
}

const OP_TEXT = 0x1;
const OP_BINARY = 0x2;
const OP_CLOSE = 0x8;

/** One WebSocket frame as read off the wire. */
export interface WireFrame {
  opcode: number;
  payload: Uint8Array;
}

/**
 * A WebSocket client written by hand over a TCP connection, so that a test decides when (and
 * whether) it reads: it never answers pings and reads only when asked.
 */
export class RawWebSocket {
  readonly conn: Deno.TcpConn;
  #buffer: Uint8Array;

  private constructor(conn: Deno.TcpConn, rest: Uint8Array) {
    this.conn = conn;
    this.#buffer = rest;
  }

  /** Connects and performs the opening handshake (101 expected). */
  static async connect(port: number, path: string): Promise<RawWebSocket> {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    const key = crypto.getRandomValues(new Uint8Array(16)).toBase64();
    const request = [
      `GET ${path} HTTP/1.1`,
      `Host: 127.0.0.1:${port}`,
      "Upgrade: WebSocket", // mixed case, as RFC 6455 allows: the server must accept it
      "Connection: Upgrade",
      `Sec-WebSocket-Key: ${key}`,
      "Sec-WebSocket-Version: 13",
      "",
      "",
    ].join("\r\n");
    await writeAll(conn, new TextEncoder().encode(request));
    let buffer: Uint8Array = new Uint8Array(0);
    let end = -1;
    while (end < 0) {
      const chunk = new Uint8Array(4096);
      const n = await conn.read(chunk);
      if (n === null) throw new Error("the server closed during the handshake");
      buffer = concat(buffer, chunk.subarray(0, n));
      end = indexOfHeaderEnd(buffer);
    }
    const head = new TextDecoder().decode(buffer.subarray(0, end));
    if (!head.startsWith("HTTP/1.1 101")) {
      conn.close();
      throw new Error(`handshake refused: ${head.split("\r\n")[0]}`);
    }
    return new RawWebSocket(conn, buffer.slice(end + 4));
  }

  /** Sends one masked frame (client frames must be masked). */
  async send(opcode: number, payload: Uint8Array): Promise<void> {
    const length = payload.byteLength;
    const header: number[] = [0x80 | opcode];
    if (length < 126) header.push(0x80 | length);
    else if (length < 65536) header.push(0x80 | 126, length >> 8, length & 0xff);
    else {
      header.push(0x80 | 127, 0, 0, 0, 0);
      header.push((length >>> 24) & 0xff, (length >>> 16) & 0xff, (length >>> 8) & 0xff);
      header.push(length & 0xff);
    }
    const mask = crypto.getRandomValues(new Uint8Array(4));
    const frame = new Uint8Array(header.length + 4 + length);
    frame.set(header);
    frame.set(mask, header.length);
    for (let i = 0; i < length; i++) frame[header.length + 4 + i] = payload[i] ^ mask[i & 3];
    await writeAll(this.conn, frame);
  }

  sendBinary(payload: Uint8Array): Promise<void> {
    return this.send(OP_BINARY, payload);
  }

  sendText(text: string): Promise<void> {
    return this.send(OP_TEXT, new TextEncoder().encode(text));
  }

  async #fill(n: number): Promise<void> {
    while (this.#buffer.byteLength < n) {
      const chunk = new Uint8Array(1 << 16);
      const read = await this.conn.read(chunk);
      if (read === null) throw new Error("the connection closed");
      this.#buffer = concat(this.#buffer, chunk.subarray(0, read));
    }
  }

  /** Reads the next frame (server frames are not masked; no fragmentation expected). */
  async read(): Promise<WireFrame> {
    await this.#fill(2);
    const opcode = this.#buffer[0] & 0x0f;
    let length = this.#buffer[1] & 0x7f;
    let at = 2;
    if (length === 126) {
      await this.#fill(4);
      length = (this.#buffer[2] << 8) | this.#buffer[3];
      at = 4;
    } else if (length === 127) {
      await this.#fill(10);
      const view = new DataView(this.#buffer.buffer, this.#buffer.byteOffset);
      length = Number(view.getBigUint64(2));
      at = 10;
    }
    await this.#fill(at + length);
    const payload = this.#buffer.slice(at, at + length);
    this.#buffer = this.#buffer.slice(at + length);
    return { opcode, payload };
  }

  /** Reads frames until a data frame (skipping pings), decoded as a burst message. */
  async message(): Promise<SocketMessage> {
    for (;;) {
      const frame = await this.read();
      if (frame.opcode === OP_TEXT) {
        return { kind: "control", message: JSON.parse(new TextDecoder().decode(frame.payload)) };
      }
      if (frame.opcode === OP_BINARY) {
        return { kind: "result", result: decodeResult(frame.payload), bytes: frame.payload };
      }
      if (frame.opcode === OP_CLOSE) {
        const { code, reason } = closeOf(frame.payload);
        throw new Error(`the server closed the socket (${code} ${reason})`);
      }
    }
  }

  /**
   * Reads (and drops) frames until the server's close frame, answers it as RFC 6455 asks
   * and returns its code and reason.
   */
  async closeFrame(): Promise<{ code: number; reason: string }> {
    for (;;) {
      const frame = await this.read().catch((error) => {
        throw new Error(`the connection ended without a close frame (${error.message})`);
      });
      if (frame.opcode !== OP_CLOSE) continue;
      await this.send(OP_CLOSE, frame.payload.slice(0, 2)).catch(() => {});
      return closeOf(frame.payload);
    }
  }

  close(): void {
    try {
      this.conn.close();
    } catch {
      // Already closed by the server.
    }
  }
}

/** The code and reason of a close frame's payload (1005 when it has no code). */
function closeOf(payload: Uint8Array): { code: number; reason: string } {
  if (payload.byteLength < 2) return { code: 1005, reason: "" };
  return {
    code: (payload[0] << 8) | payload[1],
    reason: new TextDecoder().decode(payload.subarray(2)),
  };
}

async function writeAll(conn: Deno.TcpConn, bytes: Uint8Array): Promise<void> {
  let at = 0;
  while (at < bytes.byteLength) at += await conn.write(bytes.subarray(at));
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.byteLength + b.byteLength);
  out.set(a);
  out.set(b, a.byteLength);
  return out;
}

function indexOfHeaderEnd(bytes: Uint8Array): number {
  for (let i = 0; i + 3 < bytes.byteLength; i++) {
    if (bytes[i] === 13 && bytes[i + 1] === 10 && bytes[i + 2] === 13 && bytes[i + 3] === 10) {
      return i;
    }
  }
  return -1;
}
