/**
 * `deploy/haproxy.cfg` in front of three replicas on one machine (PostgreSQL for the state,
 * s3rver for the blobs, Debian's haproxy): models registered and compiled through the
 * balancer; one compilation's executions always reach one replica (consistent hashing on
 * its id), other compilations spread over the replicas; every replica gives the same
 * results; a burst through the balancer keeps working while another replica stops; and the
 * compilations of the stopped replica move to the others, which prepare them again.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { NnClient } from "../client/mod.ts";
import {
  Balancer,
  closeReplica,
  executeVia,
  startReplicas,
  startSharedStores,
} from "./cluster_fixture.ts";
import { addModel } from "./server_fixture.ts";

const INPUTS = { inputs: [{ data: [1, 2, 3] }, { data: [10, 20, 30] }] };

/** One execution through `base`: the replica that answered and the outputs. */
async function execute(base: string, compilation: string) {
  const { status, replica, body } = await executeVia(base, compilation, INPUTS);
  return { status, replica, outputs: body.outputs };
}

Deno.test("haproxy with deploy/haproxy.cfg routes each compilation to one replica of three, and moves it when that replica stops", async () => {
  // Undone in reverse order, whatever fails: haproxy, the replicas, then the stores.
  await using cleanup = new AsyncDisposableStack();
  const stores = await startSharedStores("cluster");
  cleanup.defer(() => stores.stop());
  const replicas = await startReplicas(stores, ["r1", "r2", "r3"], cleanup);
  const balancer = await Balancer.start(replicas.map((r) => `127.0.0.1:${r.port}`));
  cleanup.defer(() => balancer.stop());
  const lb = balancer.url;
  const client = new NnClient({ baseUrl: lb });
  const registered = await fetch(`${lb}/v1/models`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(addModel(3)),
  }).then((r) => r.json());
  const compiled = [];
  for (let i = 0; i < 12; i++) compiled.push(await client.compile(registered.id));
  const compilations = compiled.map((c) => c.info.id);
  // Each compilation: always the same replica; all of them: more than one replica.
  const owners = new Map<string, string>();
  for (const id of compilations) {
    const seen = new Set<string>();
    for (let k = 0; k < 4; k++) {
      const run = await execute(lb, id);
      strictEqual(run.status, 200);
      deepStrictEqual(run.outputs[0].data, [11, 22, 33]);
      seen.add(run.replica!);
    }
    strictEqual(seen.size, 1, `compilation ${id} stays on one replica: ${[...seen]}`);
    owners.set(id, [...seen][0]);
  }
  ok(new Set(owners.values()).size > 1, `compilations spread: ${[...owners.values()]}`);
  // Every replica computes the same.
  for (const replica of replicas) {
    deepStrictEqual(
      (await execute(replica.url, compilations[0])).outputs,
      (await execute(lb, compilations[0])).outputs,
    );
  }

  // A burst on a compilation of one replica; another replica stops meanwhile.
  const victimName = [...new Set(owners.values())].find((r) => r !== owners.get(compilations[0]))!;
  const victim = replicas.find((r) => r.driver.replica === victimName)!;
  await using burst = await compiled[0].burst();
  const before = await burst.compute([[1, 2, 3], [1, 1, 1]]);
  deepStrictEqual([...before.outputs[0].data as Float32Array], [2, 3, 4]);
  replicas.splice(replicas.indexOf(victim), 1);
  await closeReplica(victim);
  const during = await burst.compute([[4, 5, 6], [1, 1, 1]]);
  deepStrictEqual([...during.outputs[0].data as Float32Array], [5, 6, 7]);
  // The stopped replica's compilations answer from the others once the checks see it down.
  const moved = compilations.filter((id) => owners.get(id) === victimName);
  ok(moved.length > 0);
  for (const id of moved) {
    let run = await execute(lb, id);
    for (let i = 0; i < 50 && run.status !== 200; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      run = await execute(lb, id);
    }
    strictEqual(run.status, 200, `compilation ${id} moved`);
    ok(run.replica !== victimName);
    deepStrictEqual(run.outputs[0].data, [11, 22, 33]);
  }
});
