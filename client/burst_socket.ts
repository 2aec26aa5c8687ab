/**
 * The message channel of a burst: the standard `WebSocket`, or in Deno a WebSocket client
 * over `Deno.connect` with TCP_NODELAY.
 *
 * Why a client of our own: Deno's `WebSocket` writes a message larger than 1 KiB as two
 * writes (header, then payload) on a socket with Nagle's algorithm on, so a request of 1 to
 * 64 KiB waits for the service's delayed ACK, about 40 ms, whenever nothing else is in
 * flight; a burst computing one frame at a time would run at ~23 frames/s. Browsers set
 * TCP_NODELAY on WebSockets and need none of this.
 *
 * The client here speaks RFC 6455 as far as a burst needs: the opening handshake (a refusal
 * is returned with the service's HTTP status and error body), masked frames written in one
 * write each, text/binary messages (fragmented or not), answers to pings, and the closing
 * handshake.
 */
import { toBase64 } from "./base64.ts";

/** How the channel ended. */
export interface SocketClose {
  code: number;
  reason: string;
}

/** What a burst needs of its channel. */
export interface BurstSocket {
  /** Sends a text or binary message (queued in order). */
  send(data: string | Uint8Array<ArrayBuffer>): void;
  /** Starts the closing handshake; `onClose` follows. */
  close(code: number, reason: string): void;
  /** True until the closing handshake starts or the connection is lost. */
  readonly isOpen: boolean;
  /** Each message: text as a string, binary as a whole ArrayBuffer of its own. */
  onMessage: (data: string | ArrayBuffer) => void;
  /** Once, when the channel is closed (code 1006 when it was lost without a close frame). */
  onClose: (close: SocketClose) => void;
  /** Starts delivering messages (call once the handlers are set). */
  start(): void;
}

/** The upgrade was refused: the service's HTTP answer. */
export class UpgradeRefused extends Error {
  constructor(readonly httpStatus: number, readonly body: string) {
    super(`the WebSocket upgrade was refused with HTTP ${httpStatus}`);
    this.name = "UpgradeRefused";
  }
}

/** A standard WebSocket as a burst channel. */
export function standardSocket(url: URL): BurstSocket {
  const ws = new WebSocket(url);
  ws.binaryType = "arraybuffer";
  const socket: BurstSocket = {
    send: (data) => ws.send(data),
    close: (code, reason) => {
      if (ws.readyState <= WebSocket.OPEN) ws.close(code, reason);
    },
    get isOpen() {
      return ws.readyState <= WebSocket.OPEN;
    },
    onMessage: () => {},
    onClose: () => {},
    start: () => {},
  };
  ws.addEventListener("message", (event) => socket.onMessage(event.data));
  ws.addEventListener(
    "close",
    (event) => socket.onClose({ code: event.code, reason: event.reason }),
  );
  return socket;
}

/** Whether this runtime offers `Deno.connect` for a socket of our own. */
export function hasDenoSockets(): boolean {
  const deno = (globalThis as { Deno?: { connect?: unknown } }).Deno;
  return typeof deno?.connect === "function";
}

const GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
const OP_CONTINUATION = 0x0;
const OP_TEXT = 0x1;
const OP_BINARY = 0x2;
const OP_CLOSE = 0x8;
const OP_PING = 0x9;
const OP_PONG = 0xa;
const MAX_HEADER_BYTES = 64 * 1024;
/** How long a close waits for the service's close frame before dropping the connection. */
const CLOSE_WAIT_MS = 3000;

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  let at = 0;
  while (at < bytes.byteLength) at += await conn.write(bytes.subarray(at));
}

function findHeaderEnd(bytes: Uint8Array, from: number): number {
  for (let i = Math.max(0, from - 3); i + 3 < bytes.byteLength; i++) {
    if (bytes[i] === 13 && bytes[i + 1] === 10 && bytes[i + 2] === 13 && bytes[i + 3] === 10) {
      return i;
    }
  }
  return -1;
}

/** A growable byte buffer of received data. */
class ReadBuffer {
  bytes = new Uint8Array(64 * 1024);
  start = 0;
  end = 0;

  get length(): number {
    return this.end - this.start;
  }

  /** Room for at least `n` more bytes at the end. */
  reserve(n: number): Uint8Array {
    if (this.bytes.byteLength - this.end < n) {
      const needed = this.length + n;
      const bigger = needed > this.bytes.byteLength
        ? new Uint8Array(Math.max(needed, this.bytes.byteLength * 2))
        : this.bytes;
      bigger.set(this.bytes.subarray(this.start, this.end), 0);
      this.bytes = bigger;
      this.end = this.length;
      this.start = 0;
    }
    return this.bytes.subarray(this.end);
  }

  take(n: number): Uint8Array {
    const out = this.bytes.subarray(this.start, this.start + n);
    this.start += n;
    if (this.start === this.end) this.start = this.end = 0;
    return out;
  }
}

/** One frame of the client: header, mask key and masked payload, in one buffer. */
function clientFrame(opcode: number, payload: Uint8Array): Uint8Array {
  const length = payload.byteLength;
  const lengthBytes = length < 126 ? 0 : length < 65536 ? 2 : 8;
  const headerBytes = 2 + lengthBytes + 4;
  // Lead padding puts the payload on a 4-byte boundary, so it is masked a word at a time.
  const pad = (4 - (headerBytes % 4)) % 4;
  const buffer = new Uint8Array(pad + headerBytes + length);
  const view = new DataView(buffer.buffer);
  buffer[pad] = 0x80 | opcode;
  if (lengthBytes === 0) buffer[pad + 1] = 0x80 | length;
  else if (lengthBytes === 2) {
    buffer[pad + 1] = 0x80 | 126;
    view.setUint16(pad + 2, length);
  } else {
    buffer[pad + 1] = 0x80 | 127;
    view.setBigUint64(pad + 2, BigInt(length));
  }
  const maskAt = pad + 2 + lengthBytes;
  crypto.getRandomValues(buffer.subarray(maskAt, maskAt + 4));
  const payloadAt = maskAt + 4;
  buffer.set(payload, payloadAt);
  const words = length >> 2;
  const mask32 = new Uint32Array(buffer.buffer, maskAt, 1)[0];
  const data32 = new Uint32Array(buffer.buffer, payloadAt, words);
  for (let i = 0; i < words; i++) data32[i] ^= mask32;
  for (let i = words << 2; i < length; i++) buffer[payloadAt + i] ^= buffer[maskAt + (i & 3)];
  return buffer.subarray(pad);
}

/**
 * A WebSocket client over `Deno.connect` / `Deno.connectTls` with TCP_NODELAY (see the
 * module documentation). Resolves once the upgrade is accepted; throws `UpgradeRefused`
 * when the service answers anything but 101.
 */
export async function denoSocket(url: URL): Promise<BurstSocket> {
  const secure = url.protocol === "wss:";
  const hostname = url.hostname.replace(/^\[(.*)\]$/, "$1");
  const port = Number(url.port || (secure ? 443 : 80));
  const conn: Deno.TcpConn | Deno.TlsConn = secure
    ? await Deno.connectTls({ hostname, port })
    : await Deno.connect({ hostname, port });
  try {
    if ("setNoDelay" in conn) conn.setNoDelay(true);
    const key = toBase64(crypto.getRandomValues(new Uint8Array(16)));
    const request = [
      `GET ${url.pathname}${url.search} HTTP/1.1`,
      `Host: ${url.host}`,
      "Upgrade: websocket",
      "Connection: Upgrade",
      `Sec-WebSocket-Key: ${key}`,
      "Sec-WebSocket-Version: 13",
      "",
      "",
    ].join("\r\n");
    await writeAll(conn, new TextEncoder().encode(request));
    const buffer = new ReadBuffer();
    let end = -1;
    while (end < 0) {
      if (buffer.length > MAX_HEADER_BYTES) throw new Error("the upgrade answer is too large");
      const room = buffer.reserve(16 * 1024);
      const n = await conn.read(room);
      if (n === null) throw new Error("the service closed the connection during the upgrade");
      const before = buffer.length;
      buffer.end += n;
      end = findHeaderEnd(buffer.bytes.subarray(buffer.start, buffer.end), before);
    }
    const head = new TextDecoder().decode(buffer.take(end + 4)).split("\r\n");
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head[0])?.[1] ?? 0);
    const headers = new Map(
      head.slice(1).filter(Boolean).map((line) => {
        const colon = line.indexOf(":");
        return [line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()];
      }),
    );
    if (status !== 101) {
      throw new UpgradeRefused(status, await readBody(conn, buffer, headers));
    }
    const digest = await crypto.subtle.digest("SHA-1", new TextEncoder().encode(key + GUID));
    if (headers.get("sec-websocket-accept") !== toBase64(new Uint8Array(digest))) {
      throw new Error("the service's Sec-WebSocket-Accept does not match the key");
    }
    return new NativeSocket(conn, buffer);
  } catch (error) {
    conn.close();
    throw error;
  }
}

/** The body of a refused upgrade (by Content-Length; what arrived otherwise). */
async function readBody(
  conn: Deno.Conn,
  buffer: ReadBuffer,
  headers: Map<string, string>,
): Promise<string> {
  const length = Number(headers.get("content-length") ?? NaN);
  if (Number.isSafeInteger(length) && length <= MAX_HEADER_BYTES) {
    while (buffer.length < length) {
      const room = buffer.reserve(length - buffer.length);
      const n = await conn.read(room);
      if (n === null) break;
      buffer.end += n;
    }
  }
  return new TextDecoder().decode(buffer.take(buffer.length));
}

class NativeSocket implements BurstSocket {
  onMessage: (data: string | ArrayBuffer) => void = () => {};
  onClose: (close: SocketClose) => void = () => {};
  readonly #conn: Deno.Conn;
  readonly #buffer: ReadBuffer;
  #writing: Promise<void> = Promise.resolve();
  #open = true;
  #closeSent = false;
  #ended = false;
  #closeTimer: ReturnType<typeof setTimeout> | undefined;
  #fragments: Uint8Array[] = [];
  #fragmentOpcode = 0;

  constructor(conn: Deno.Conn, buffer: ReadBuffer) {
    this.#conn = conn;
    this.#buffer = buffer;
  }

  start(): void {
    this.#readLoop();
  }

  get isOpen(): boolean {
    return this.#open;
  }

  send(data: string | Uint8Array<ArrayBuffer>): void {
    if (!this.#open) throw new Error("the socket is closed");
    const payload = typeof data === "string" ? new TextEncoder().encode(data) : data;
    this.#write(clientFrame(typeof data === "string" ? OP_TEXT : OP_BINARY, payload));
  }

  close(code: number, reason: string): void {
    if (this.#closeSent || this.#ended) return;
    this.#open = false;
    this.#sendClose(code, reason);
    this.#closeTimer = setTimeout(() => this.#end({ code: 1006, reason: "" }), CLOSE_WAIT_MS);
  }

  #sendClose(code: number, reason: string): void {
    this.#closeSent = true;
    const text = new TextEncoder().encode(reason).subarray(0, 123);
    const payload = new Uint8Array(2 + text.byteLength);
    new DataView(payload.buffer).setUint16(0, code);
    payload.set(text, 2);
    this.#write(clientFrame(OP_CLOSE, payload));
  }

  #write(frame: Uint8Array): void {
    this.#writing = this.#writing
      .then(() => writeAll(this.#conn, frame))
      .catch(() => this.#end({ code: 1006, reason: "" }));
  }

  #end(close: SocketClose): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#open = false;
    clearTimeout(this.#closeTimer);
    try {
      this.#conn.close();
    } catch {
      // Already closed.
    }
    this.onClose(close);
  }

  async #readLoop(): Promise<void> {
    try {
      for (;;) {
        const frame = this.#parse();
        if (frame) {
          if (this.#handle(frame.opcode, frame.fin, frame.payload)) return;
          continue;
        }
        const room = this.#buffer.reserve(64 * 1024);
        const n = await this.#conn.read(room);
        if (n === null) break;
        this.#buffer.end += n;
      }
    } catch {
      // The connection failed or was closed under the read.
    }
    this.#end({ code: 1006, reason: "" });
  }

  /** The next whole frame in the buffer, or undefined when more bytes are needed. */
  #parse(): { opcode: number; fin: boolean; payload: Uint8Array } | undefined {
    const b = this.#buffer;
    if (b.length < 2) return undefined;
    const bytes = b.bytes;
    const first = bytes[b.start];
    const second = bytes[b.start + 1];
    let length = second & 0x7f;
    let at = 2;
    if (length === 126) {
      if (b.length < 4) return undefined;
      length = (bytes[b.start + 2] << 8) | bytes[b.start + 3];
      at = 4;
    } else if (length === 127) {
      if (b.length < 10) return undefined;
      length = Number(new DataView(bytes.buffer, b.start + 2, 8).getBigUint64(0));
      at = 10;
    }
    const masked = (second & 0x80) !== 0;
    const maskAt = at;
    if (masked) at += 4;
    if (b.length < at + length) {
      b.reserve(at + length - b.length);
      return undefined;
    }
    const mask = masked ? bytes.slice(b.start + maskAt, b.start + maskAt + 4) : undefined;
    b.take(at);
    // A copy of its own: messages outlive the read buffer.
    const payload = b.take(length).slice();
    if (mask) { for (let i = 0; i < payload.length; i++) payload[i] ^= mask[i & 3]; }
    return { opcode: first & 0x0f, fin: (first & 0x80) !== 0, payload };
  }

  /** Handles one frame; true when the connection is done. */
  #handle(opcode: number, fin: boolean, payload: Uint8Array): boolean {
    switch (opcode) {
      case OP_PING:
        if (!this.#closeSent) this.#write(clientFrame(OP_PONG, payload));
        return false;
      case OP_PONG:
        return false;
      case OP_CLOSE: {
        const code = payload.byteLength >= 2
          ? new DataView(payload.buffer, payload.byteOffset).getUint16(0)
          : 1005;
        const reason = new TextDecoder().decode(payload.subarray(2));
        this.#open = false;
        if (!this.#closeSent) this.#sendClose(code === 1005 ? 1000 : code, "");
        this.#writing.finally(() => this.#end({ code, reason }));
        return true;
      }
      case OP_TEXT:
      case OP_BINARY:
      case OP_CONTINUATION: {
        if (opcode !== OP_CONTINUATION) {
          this.#fragments = [];
          this.#fragmentOpcode = opcode;
        }
        this.#fragments.push(payload);
        if (!fin) return false;
        const parts = this.#fragments;
        this.#fragments = [];
        let whole = parts[0];
        if (parts.length > 1) {
          whole = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
          let at = 0;
          for (const p of parts) {
            whole.set(p, at);
            at += p.byteLength;
          }
        }
        if (this.#ended) return true;
        this.onMessage(
          this.#fragmentOpcode === OP_TEXT
            ? new TextDecoder().decode(whole)
            : whole.buffer as ArrayBuffer,
        );
        return false;
      }
      default:
        // Unknown opcodes: a protocol error; end the connection.
        this.#sendClose(1002, "unknown opcode");
        this.#writing.finally(() => this.#end({ code: 1002, reason: "unknown opcode" }));
        return true;
    }
  }
}
