/**
 * The benchmarks' load client (`bench/peers/throughput.ts`): wrk's latencies as it prints
 * them, and a throughput run against a real server on loopback with the client this machine
 * has (wrk where installed, else fetch loops), its server's CPU read from `/proc`.
 */
import { equal, ok, rejects, throws } from "node:assert/strict";
import { throughputs } from "../bench/peers/throughput.ts";
import { wrkMs } from "../bench/peers/wrk.ts";

Deno.test("wrk's latencies read in milliseconds, whatever their unit", () => {
  equal(wrkMs("987.00us"), 0.987);
  equal(wrkMs("10.45ms"), 10.45);
  equal(wrkMs("1.02s"), 1020);
  equal(wrkMs("2.00m"), 120_000);
  throws(() => wrkMs("12 ms"), /not understood/);
});

Deno.test("a throughput run counts answers, latencies and the server's CPU", async () => {
  const answer = new Uint8Array(16);
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (r) => {
    await r.arrayBuffer();
    return new Response(answer);
  });
  try {
    const endpoint = {
      url: `http://127.0.0.1:${server.addr.port}/`,
      headers: { "content-type": "application/octet-stream" },
      // This process serves: its threads' CPU is the server's.
      pid: Deno.pid,
      close: () => Promise.resolve(),
    };
    const body = new Uint8Array(new Float32Array(64).buffer);
    const [rate] = await throughputs([endpoint], body, answer.byteLength, {
      connections: 2,
      warmupSeconds: 0.2,
      seconds: 0.5,
      rounds: 2,
    });
    ok(rate.requests > 10, `${rate.requests} answers`);
    equal(rate.roundRates.length, 2);
    ok(rate.requestsPerSecond > 0);
    ok(rate.medianMs > 0 && rate.p99Ms >= rate.medianMs, `${rate.medianMs}, ${rate.p99Ms}`);
    ok(rate.cpu, "the server's CPU");
    ok(rate.cpu.total > 0 && rate.cpu.serving <= rate.cpu.total, JSON.stringify(rate.cpu));
    // An answer of another length than the model's output fails the run.
    await rejects(
      throughputs([endpoint], body, answer.byteLength + 4, {
        connections: 1,
        warmupSeconds: 0.2,
        seconds: 0.2,
      }),
      /bytes answered/,
    );
  } finally {
    await server.shutdown();
  }
});
