/**
 * Composition root: read the environment, start the server, stop cleanly on signals, and
 * stop at all, whatever is stuck, soon after the shutdown timeout.
 */
import {
  configFromEnv,
  DEFAULT_SHUTDOWN_TIMEOUT_SECONDS,
  type RunningServer,
  SHUTDOWN_EXIT_MARGIN_SECONDS,
  startServer,
  StartupError,
} from "./server.ts";

/**
 * After `seconds`, ends the process whether or not the graceful shutdown finished, with one
 * line naming what it was doing, the requests in flight when it began and those still
 * running; the returned function disarms it.
 */
function exitAfter(server: RunningServer, seconds: number): () => void {
  const timer = setTimeout(() => {
    const { step, inFlightAtStart, running } = server.shutdownState();
    const list = (requests: string[]) => requests.join(", ") || "none";
    console.error(
      `nnserve: the shutdown did not finish within ${seconds} s (it was ${step}); exiting ` +
        `now, cutting what was left. Requests in flight at the signal: ` +
        `${list(inFlightAtStart)}; still running: ${list(running)}`,
    );
    Deno.exit(1);
  }, seconds * 1000);
  return () => clearTimeout(timer);
}

if (import.meta.main) {
  let server: RunningServer;
  let shutdownTimeoutSeconds: number;
  try {
    const config = configFromEnv();
    shutdownTimeoutSeconds = config.shutdownTimeoutSeconds ?? DEFAULT_SHUTDOWN_TIMEOUT_SECONDS;
    server = await startServer(config);
  } catch (error) {
    // A configuration the server cannot start with: one line, what and where, no stack.
    if (!(error instanceof StartupError)) throw error;
    console.error(`nnserve: ${error.message}`);
    Deno.exit(1);
  }
  let stopping = false;
  const stop = (signal: Deno.Signal) => async () => {
    if (stopping) return;
    stopping = true;
    console.log(`nnserve: ${signal}: draining in-flight requests and bursts`);
    // close() cuts what runs at the timeout, but cannot end everything (a request on a
    // connection Deno.serve will not close, a store that does not answer): a hard deadline.
    const disarm = exitAfter(server, shutdownTimeoutSeconds + SHUTDOWN_EXIT_MARGIN_SECONDS);
    let cut;
    try {
      cut = await server.close();
    } catch (error) {
      console.error(`nnserve: the shutdown failed: ${(error as Error).message}`);
      Deno.exit(1);
    }
    disarm();
    const what = [
      ...cut.requests + cut.burstRequests === 0 ? [] : [
        `cut ${cut.requests} request(s) and ${cut.burstRequests} burst request(s) at the ` +
        "shutdown timeout",
      ],
      ...cut.closedConnections ? ["closed the connections still open at the deadline"] : [],
    ];
    console.log(`nnserve: stopped (${what.join("; ") || "nothing cut"})`);
    Deno.exit(0);
  };
  Deno.addSignalListener("SIGINT", stop("SIGINT"));
  Deno.addSignalListener("SIGTERM", stop("SIGTERM"));
}
