/** Composition root: read the environment, start the server, stop cleanly on signals. */
import { configFromEnv, startServer } from "./server.ts";

if (import.meta.main) {
  const server = await startServer(configFromEnv());
  const stop = async () => {
    await server.close();
    Deno.exit(0);
  };
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
}
