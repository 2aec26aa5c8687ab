/**
 * Executor spawner: builds and terminates the executor workers that replace failed or
 * overrun ones, on its own thread, because constructing a Worker blocks the constructing
 * thread while the new isolate starts, and the server's thread must never stall. It keeps
 * one spare executor warm (module loaded, port attached), so a replacement is ready at once.
 * Each executor serves the pool over a MessageChannel whose other end goes to the pool in
 * "spawned". Messages are defined in `protocol.ts`.
 */
/// <reference lib="deno.worker" />
import type { ExecutorConnect, SpawnerRequest, SpawnerResponse } from "./protocol.ts";

interface Executor {
  worker: Worker;
  port: MessagePort;
  /** The pool's name for it, once handed over. */
  name?: number;
}

const EXECUTOR_URL = new URL("./worker.ts", import.meta.url).href;
const executors = new Map<number, Executor>();
let spare: Executor | undefined = start();

function respond(message: SpawnerResponse, transfer: Transferable[] = []): void {
  self.postMessage(message, transfer);
}

/** A new executor worker, connected to a fresh channel whose `port` is for the pool. */
function start(): Executor {
  const worker = new Worker(EXECUTOR_URL, { type: "module" });
  const channel = new MessageChannel();
  const executor: Executor = { worker, port: channel.port1 };
  worker.onerror = (event) => {
    event.preventDefault();
    worker.terminate();
    if (executor === spare) {
      spare = undefined;
      console.error(`nnserve: spare executor failed to start (${event.message})`);
    } else if (executor.name !== undefined) {
      executors.delete(executor.name);
      respond({ kind: "failed", executor: executor.name, message: event.message });
    }
  };
  worker.postMessage({ port: channel.port2 } satisfies ExecutorConnect, [channel.port2]);
  return executor;
}

self.onmessage = (event: MessageEvent<SpawnerRequest>) => {
  const request = event.data;
  if (request.kind === "terminate") {
    executors.get(request.executor)?.worker.terminate();
    executors.delete(request.executor);
    return;
  }
  const executor = spare ?? start();
  spare = undefined;
  executor.name = request.executor;
  executors.set(request.executor, executor);
  respond({ kind: "spawned", executor: request.executor, port: executor.port }, [executor.port]);
  // The next spare, once this answer is out.
  setTimeout(() => spare ??= start(), 0);
};
