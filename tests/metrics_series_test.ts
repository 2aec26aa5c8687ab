import { deepStrictEqual, ok } from "node:assert/strict";
import { Metrics } from "../metrics/metrics.ts";

Deno.test("a series found once records into the series observe finds, shown from its first value", async () => {
  const metrics = new Metrics();
  const labels = { client: "a", model: "m", version: "1" };
  const record = metrics.series("t_seconds", "test", labels, [0.1, 1]);
  ok(!(await metrics.render()).includes("t_seconds_count"), "nothing shown before a value");
  record(0.05);
  metrics.observe("t_seconds", "test", { client: "a", model: "m", version: "1" }, 0.5, [0.1, 1]);
  record(2);
  deepStrictEqual(metrics.totals("t_seconds", { model: "m" }).count, 3);
  const text = await metrics.render();
  ok(text.includes('t_seconds_bucket{client="a",model="m",version="1",le="0.1"} 1'), text);
  ok(text.includes('t_seconds_bucket{client="a",model="m",version="1",le="1"} 2'), text);
  ok(text.includes('t_seconds_count{client="a",model="m",version="1"} 3'), text);
  // A series forgotten (its compilation deleted) is no longer shown, whatever still holds it.
  metrics.forget({ model: "m" });
  record(0.05);
  ok(!(await metrics.render()).includes("t_seconds_count"));
});
