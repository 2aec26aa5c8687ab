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
  const stop = async () => {
    await server.close();
    Deno.exit(0);
  };
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
}
