/**
 * The server's own TCP connections as the kernel sees them, through libc (Deno's FFI), and
 * the one thing done to them: `shutdown(2)`, which Deno.serve then takes as the client
 * leaving and closes the connection. Linux only (`/proc/self/status`, `struct tcp_info`).
 *
 * Called on the thread that runs Deno.serve. Its connections are accepted and closed on that
 * thread's event loop, which cannot run during a synchronous call, so a descriptor found
 * here is still the same connection when it is shut down in the same call.
 */

/** One accepted connection on the server's port. */
export interface Connection {
  fd: number;
  /** The server's port it was accepted on. */
  localPort: number;
  /** The client's address and port, as {@link peerKey} writes them. */
  peer: string;
  /** The TCP state is past ESTABLISHED: the client's end closed (it sends nothing more). */
  clientEnded: boolean;
  /** Bytes received from the client so far. */
  bytesReceived: number;
  /** Milliseconds since the kernel last received data on it (since it was set up if none). */
  msSinceReceived: number;
}

/** The server's connections, and shutting one down. */
export interface Sockets {
  /** Every connection accepted on local `port` that is still open. */
  connections(port: number): Connection[];
  /** Shuts `connection` down both ways if its descriptor still holds it; true if it did. */
  shutDown(connection: Connection): boolean;
}

const AF_INET = 2;
const AF_INET6 = 10;
const IPPROTO_TCP = 6;
const TCP_INFO = 11;
const TCP_ESTABLISHED = 1;
const SHUT_RDWR = 2;
/** Offsets in Linux's `struct tcp_info` (stable since 4.1). */
const INFO_STATE = 0;
const INFO_LAST_DATA_RECV = 52;
const INFO_BYTES_RECEIVED = 128;

const SYMBOLS = {
  getsockname: { parameters: ["i32", "buffer", "buffer"], result: "i32" },
  getpeername: { parameters: ["i32", "buffer", "buffer"], result: "i32" },
  getsockopt: { parameters: ["i32", "i32", "i32", "buffer", "buffer"], result: "i32" },
  shutdown: { parameters: ["i32", "i32"], result: "i32" },
} as const;

/** The address bytes as a key (IPv4-mapped IPv6 as the IPv4 address it maps). */
export function addressKey(address: ArrayLike<number>): string {
  let from = 0;
  if (address.length === 16) {
    let mapped = address[10] === 0xff && address[11] === 0xff;
    for (let i = 0; mapped && i < 10; i++) mapped = address[i] === 0;
    if (mapped) from = 12;
  }
  let key = String(address[from]);
  for (let i = from + 1; i < address.length; i++) key += `.${address[i]}`;
  return key;
}

/**
 * A client's address and port as one key: what both a socket address and Deno's
 * `remoteAddr` turn into, so each finds the other.
 */
export function peerKey(address: string, port: number): string {
  return `${address}/${port}`;
}

/** The address bytes of Deno's text form of an IP address (v4 dotted, or v6). */
export function addressBytes(hostname: string): number[] {
  const text = hostname.replace(/^\[|\]$/g, "").split("%")[0];
  if (!text.includes(":")) return text.split(".").map(Number);
  const groups = (part: string): number[] => {
    if (part === "") return [];
    const out: number[] = [];
    for (const group of part.split(":")) {
      if (group.includes(".")) {
        const [a, b, c, d] = group.split(".").map(Number);
        out.push((a << 8) | b, (c << 8) | d);
      } else out.push(parseInt(group, 16));
    }
    return out;
  };
  const [head, tail] = text.split("::");
  const front = groups(head);
  const back = tail === undefined ? [] : groups(tail);
  const words = [...front, ...new Array(8 - front.length - back.length).fill(0), ...back];
  return words.flatMap((word) => [word >> 8, word & 0xff]);
}

/** The server's sockets through libc, or the reason they cannot be reached here. */
export function openSockets(): Sockets | string {
  if (Deno.build.os !== "linux") return `${Deno.build.os} is not Linux`;
  let libc: Deno.DynamicLibrary<typeof SYMBOLS> | undefined;
  for (const name of ["libc.so.6", "libc.so"]) {
    try {
      libc = Deno.dlopen(name, SYMBOLS);
      break;
    } catch {
      // the next name (musl's)
    }
  }
  if (!libc) return "libc cannot be loaded (FFI not permitted, or no libc.so.6)";
  const { getsockname, getpeername, getsockopt, shutdown } = libc.symbols;
  const address = new Uint8Array(128);
  const addressView = new DataView(address.buffer);
  const length = new Uint32Array(1);
  const info = new Uint8Array(232);
  const infoView = new DataView(info.buffer);
  const infoLength = new Uint32Array(1);

  /** The local (or peer) address of `fd` into `address`: its family, or 0. */
  const name = (call: typeof getsockname, fd: number): number => {
    length[0] = address.length;
    return call(fd, address, length) === 0 ? addressView.getUint16(0, true) : 0;
  };
  const port = () => addressView.getUint16(2, false);
  const peer = (family: number) =>
    peerKey(
      addressKey(family === AF_INET ? address.subarray(4, 8) : address.subarray(8, 24)),
      port(),
    );
  /** The connection `fd` holds if it is one accepted on `localPort`. */
  const describe = (fd: number, localPort: number): Connection | undefined => {
    const family = name(getsockname, fd);
    if ((family !== AF_INET && family !== AF_INET6) || port() !== localPort) return undefined;
    const peerFamily = name(getpeername, fd);
    if (peerFamily === 0) return undefined; // the listener itself
    infoLength[0] = info.length;
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, info, infoLength) !== 0) return undefined;
    return {
      fd,
      localPort,
      peer: peer(peerFamily),
      clientEnded: info[INFO_STATE] !== TCP_ESTABLISHED,
      bytesReceived: infoView.getUint32(INFO_BYTES_RECEIVED, true) +
        infoView.getUint32(INFO_BYTES_RECEIVED + 4, true) * 2 ** 32,
      msSinceReceived: infoView.getUint32(INFO_LAST_DATA_RECV, true),
    };
  };

  return {
    connections(localPort) {
      // Every descriptor the table can hold is asked (an unused one answers at once): listing
      // /proc/self/fd took 6.7 ms for 4,000 descriptors, asking them all 2 ms.
      const status = Deno.readTextFileSync("/proc/self/status");
      const size = Number(/^FDSize:\s+(\d+)/m.exec(status)?.[1] ?? 1024);
      const found: Connection[] = [];
      for (let fd = 0; fd < size; fd++) {
        const connection = describe(fd, localPort);
        if (connection) found.push(connection);
      }
      return found;
    },
    shutDown(connection) {
      const now = describe(connection.fd, connection.localPort);
      if (now?.peer !== connection.peer) return false;
      return shutdown(connection.fd, SHUT_RDWR) === 0;
    },
  };
}
