/** Composition root: read the environment, start the server, stop cleanly on signals. */
import { configFromEnv, startServer, StartupError } from "./server.ts";

if (import.meta.main) {
  let server;
  try {
    server = await startServer(configFromEnv());
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
    const cut = await server.close();
    const what = cut.requests + cut.burstRequests === 0
      ? "nothing cut"
      : `cut ${cut.requests} request(s) and ${cut.burstRequests} burst request(s) at the ` +
        "shutdown timeout";
    console.log(`nnserve: stopped (${what})`);
    Deno.exit(0);
  };
  Deno.addSignalListener("SIGINT", stop("SIGINT"));
  Deno.addSignalListener("SIGTERM", stop("SIGTERM"));
}
