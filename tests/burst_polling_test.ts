/**
 * The burst polling window (driver/burst/polling_window.ts): a hold keeps the event loop
 * turning for the window without starving timers or sockets, the loop ends by itself, never
 * turns while executors run, and stops on close; a server polls after the results of a
 * client that asks again at once and not after those of a client slower than the window
 * (NNSERVE_BURST_POLLING_WINDOW), and counts the time in `/metrics`.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { PollingWindow } from "../driver/burst/polling_window.ts";
import { NnClient } from "../client/mod.ts";
import { configFromEnv, startServer } from "../server.ts";
import { pollUntil } from "./burst_fixture.ts";
import { addModel, metric } from "./server_fixture.ts";

/** A window whose polling time is summed, over an `idle` of the test's choosing. */
function windowOf(windowUs: number, idle: () => boolean = () => true) {
  const spent: number[] = [];
  const window = new PollingWindow(windowUs, { idle, spent: (s) => spent.push(s) });
  return { window, spent };
}

Deno.test("burst polling: a hold turns the event loop for the window; timers and sockets still run; close stops it", async () => {
  const { window, spent } = windowOf(60_000_000);
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => {
    return new Response("served");
  });
  try {
    window.hold();
    ok(window.polling, "polling after a hold");
    await new Promise((resolve) => setTimeout(resolve, 5));
    const response = await fetch(`http://127.0.0.1:${server.addr.port}/`);
    strictEqual(await response.text(), "served");
    ok(window.polling, "still polling within the minute's window");
  } finally {
    await window.close();
    await server.shutdown();
  }
  ok(!window.polling, "not polling once closed");
  strictEqual(spent.length, 1);
  ok(spent[0] > 0, `spent ${spent[0]} s`);
  window.hold();
  ok(!window.polling, "a closed window ignores holds");
});

Deno.test("burst polling: the loop ends by itself once the window passes; a window of 0 never starts", async () => {
  const { window, spent } = windowOf(20_000);
  try {
    window.hold();
    ok(window.polling);
    ok(!await pollUntil(() => Promise.resolve(window.polling), (p) => !p), "ended by itself");
    strictEqual(spent.length, 1);
    const off = windowOf(0);
    off.window.hold();
    ok(!off.window.polling, "a window of 0 never polls");
    await off.window.close();
    deepStrictEqual(off.spent, []);
  } finally {
    await window.close();
  }
});

Deno.test("burst polling: nothing turns while the executors run something", async () => {
  let asked = 0;
  const { window } = windowOf(60_000_000, () => {
    asked++;
    return false;
  });
  try {
    window.hold();
    ok(!await pollUntil(() => Promise.resolve(window.polling), (p) => !p), "ended at once");
    strictEqual(asked, 1);
  } finally {
    await window.close();
  }
});

Deno.test("burst polling: a server polls after results for a client that asks again at once, not for one slower than the window", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "nnserve-test-" });
  Deno.env.set("NNSERVE_BURST_POLLING_WINDOW", "300000");
  let config;
  try {
    config = configFromEnv();
  } finally {
    Deno.env.delete("NNSERVE_BURST_POLLING_WINDOW");
  }
  strictEqual(config.burstPollingWindowUs, 300_000);
  const server = await startServer({
    ...config,
    hostname: "127.0.0.1",
    port: 0,
    dataDir,
    verbose: false,
    logLevel: "warn",
    gpu: false,
  });
  const polled = async () => await metric(server.url, "nnserve_burst_polling_seconds_total");
  try {
    strictEqual(await polled(), 0, "declared at zero");
    const registered = await fetch(`${server.url}/v1/models`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(addModel(2)),
    });
    strictEqual(registered.status, 201);
    const compilation = await new NnClient({ baseUrl: server.url }).compile(
      (await registered.json()).id,
    );
    {
      // A request 0.4 s after the result before it: the window (0.3 s) would have been spent
      // for nothing, so none is.
      await using slow = await compilation.burst();
      for (let i = 0; i < 2; i++) {
        if (i > 0) await new Promise((resolve) => setTimeout(resolve, 400));
        const { outputs } = await slow.compute([[1, 2], [3, 4]]);
        deepStrictEqual(outputs[0].data, new Float32Array([4, 6]));
      }
      strictEqual(await polled(), 0, "no polling for a client slower than the window");
    }
    await using fast = await compilation.burst();
    for (let i = 0; i < 20; i++) {
      const { outputs } = await fast.compute([[i, 1], [1, i]]);
      deepStrictEqual(outputs[0].data, new Float32Array([i + 1, i + 1]));
    }
    const seconds = await pollUntil(polled, (s) => (s ?? 0) > 0);
    ok(seconds !== undefined && seconds > 0, `polled ${seconds} s`);
  } finally {
    await server.close();
    await Deno.remove(dataDir, { recursive: true });
  }
});
