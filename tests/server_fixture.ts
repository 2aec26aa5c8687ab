/**
 * A real nnserve instance for end-to-end tests: 127.0.0.1, a random port, Deno KV and
 * model files in a fresh temporary directory.
 */
import { type RunningServer, type ServerConfig, startServer } from "../server.ts";

/** A running test server and its data directory. */
export interface TestServer extends RunningServer {
  dataDir: string;
  /** JSON request helper: returns status and parsed body. */
  request(method: string, path: string, body?: unknown, headers?: HeadersInit): Promise<{
    status: number;
    body: Record<string, unknown>;
  }>;
}

/** Starts a server; pass `dataDir` to restart on the state of an earlier one. */
export async function startTestServer(
  options: Partial<ServerConfig> = {},
): Promise<TestServer> {
  const dataDir = options.dataDir ?? await Deno.makeTempDir({ prefix: "nnserve-test-" });
  const server = await startServer({
    hostname: "127.0.0.1",
    port: 0,
    verbose: false,
    workers: 2,
    ...options,
    dataDir,
  });
  return {
    ...server,
    dataDir,
    async request(method, path, body, headers) {
      const response = await fetch(`${server.url}${path}`, {
        method,
        headers: { "content-type": "application/json", ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await response.text();
      return { status: response.status, body: text ? JSON.parse(text) : {} };
    },
  };
}

/** Runs `fn` against a fresh server, then closes it and removes its data directory. */
export async function withTestServer(
  options: Partial<ServerConfig>,
  fn: (server: TestServer) => Promise<void>,
): Promise<void> {
  const server = await startTestServer(options);
  try {
    await fn(server);
  } finally {
    await server.close();
    await Deno.remove(server.dataDir, { recursive: true });
  }
}

/** A one-operation float model: out = a + b (both [n] float32 inputs), for quick checks. */
export function addModel(n: number) {
  const tensor = { type: "TENSOR_FLOAT32", dimensions: [n], scale: 0, zeroPoint: 0 };
  return {
    operands: [
      { ...tensor, lifetime: "MODEL_INPUT" },
      { ...tensor, lifetime: "MODEL_INPUT" },
      {
        type: "INT32",
        dimensions: [],
        scale: 0,
        zeroPoint: 0,
        lifetime: "CONSTANT_COPY",
        value: [0],
      },
      { ...tensor, lifetime: "MODEL_OUTPUT" },
    ],
    operations: [{ type: "ADD", inputs: [0, 1, 2], outputs: [3] }],
    inputIndexes: [0, 1],
    outputIndexes: [3],
  };
}
