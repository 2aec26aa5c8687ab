/**
 * One contract, every state store: the embedded Deno KV store and PostgreSQL (a real
 * cluster from `postgres_fixture.ts`) answer the same cases the same way. Reads of absent
 * keys, versionstamps that change with every write, listings in key order (strings, then
 * numbers numerically, prefixes kept apart, `start` and `limit`), getMany in order, values
 * exactly as written, and atomic commits: checks that fail apply nothing, concurrent
 * read-modify-write loops lose no update, and of racing "create if absent" commits exactly
 * one wins. Named locks: holders of one name (in this process and, on PostgreSQL, in
 * another) never overlap, other names never wait, and a lock is released when its holder
 * throws or (PostgreSQL) its process's connection closes.
 */
import { deepStrictEqual, notStrictEqual, ok, strictEqual } from "node:assert/strict";
import { Buffer } from "node:buffer";
import { decodeKey, encodeKey } from "../store/state_keys.ts";
import { PostgresStateStore } from "../store/postgres_state.ts";
import { KvStateStore, type StateKey, type StateStore } from "../store/state_store.ts";
import { startPostgres, type TestPostgres } from "./postgres_fixture.ts";

async function collect<T>(iterable: AsyncIterable<{ key: StateKey; value: T }>) {
  const out: [StateKey, T][] = [];
  for await (const entry of iterable) out.push([entry.key, entry.value]);
  return out;
}

/**
 * The contract, run against one store (empty when it starts); `peer` is another process's
 * view of the same store where there can be one (PostgreSQL), else the store itself.
 */
async function contract(t: Deno.TestContext, store: StateStore, peer: StateStore) {
  await t.step("announcements reach every listener on the store, once each", async () => {
    const heard: string[] = [];
    const mine: string[] = [];
    const stopPeer = await peer.listen((m) => heard.push(m));
    const stopMine = await store.listen((m) => mine.push(m));
    await store.announce("compilation-deleted 42");
    await store.announce("model-deleted 7");
    const until = Date.now() + 2000;
    while ((heard.length < 2 || mine.length < 2) && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    deepStrictEqual(heard, ["compilation-deleted 42", "model-deleted 7"]);
    deepStrictEqual(mine, ["compilation-deleted 42", "model-deleted 7"]);
    await stopPeer();
    await stopMine();
    await store.announce("after");
    await new Promise((resolve) => setTimeout(resolve, 100));
    strictEqual(heard.length + mine.length, 4, "stopped listeners hear nothing more");
  });

  await t.step("absent keys read as null; writes change the versionstamp", async () => {
    deepStrictEqual(await store.get(["none"]), { key: ["none"], value: null, versionstamp: null });
    await store.set(["thing", "a"], { n: 1 });
    const first = await store.get<{ n: number }>(["thing", "a"]);
    deepStrictEqual(first.value, { n: 1 });
    ok(typeof first.versionstamp === "string");
    await store.set(["thing", "a"], { n: 2 });
    const second = await store.get(["thing", "a"]);
    notStrictEqual(second.versionstamp, first.versionstamp);
    await store.delete(["thing", "a"]);
    strictEqual((await store.get(["thing", "a"])).versionstamp, null);
  });

  await t.step("values come back exactly as written", async () => {
    const value = {
      z: "last key first",
      a: [1, -0.5, 1e300, 2 ** 53 - 1],
      nested: { text: "naïve ✓ \u0000 end", empty: {}, none: null, yes: true },
    };
    await store.set(["value"], value);
    const read = (await store.get<typeof value>(["value"])).value!;
    deepStrictEqual(read, value);
    deepStrictEqual(Object.keys(read), ["z", "a", "nested"], "key order kept");
    for (const scalar of [0, 42.25, "text", false, true, ["a", 1]]) {
      await store.set(["scalar"], scalar);
      deepStrictEqual((await store.get(["scalar"])).value, scalar);
    }
  });

  await t.step(
    "listings are in key order, under their prefix only, from start, to limit",
    async () => {
      const names = ["b", "a", "ab", "a\u0000z", "é", "B", "a b"];
      for (const name of names) await store.set(["list", name], name);
      await store.set(["list"], "the prefix itself");
      await store.set(["listing", "x"], "another prefix");
      await store.set(["lis"], "shorter");
      const listed = (await collect<string>(store.list({ prefix: ["list"] }))).map(([, v]) => v);
      deepStrictEqual(
        listed,
        [...names].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y))),
      );
      deepStrictEqual(listed, ["B", "a", "a\u0000z", "a b", "ab", "b", "é"]);
      const from = await collect<string>(store.list({ prefix: ["list"], start: ["list", "ab"] }));
      deepStrictEqual(from.map(([, v]) => v), ["ab", "b", "é"]);
      deepStrictEqual(
        (await collect<string>(store.list({ prefix: ["list"] }, { limit: 2 }))).map(([k]) => k),
        [["list", "B"], ["list", "a"]],
      );
      const numbers = [3, -1, 0.5, -10.25, 1e9, 0, -0.001];
      for (const n of numbers) await store.set(["num", n, "x"], n);
      const sorted = (await collect<number>(store.list({ prefix: ["num"] }))).map(([, v]) => v);
      deepStrictEqual(sorted, [...numbers].sort((a, b) => a - b));
      await store.set(["mixed", 5], "number");
      await store.set(["mixed", "5"], "string");
      deepStrictEqual(
        (await collect<string>(store.list({ prefix: ["mixed"] }))).map(([, v]) => v),
        ["string", "number"],
        "strings before numbers, as Deno KV orders them",
      );
      // A long listing comes whole (stores that page internally).
      for (let i = 0; i < 1203; i++) await store.set(["many", String(i).padStart(5, "0")], i);
      const many = await collect<number>(store.list({ prefix: ["many"] }));
      strictEqual(many.length, 1203);
      deepStrictEqual(many.at(-1)![1], 1202);
    },
  );

  await t.step("getMany answers in the order asked, absent ones as null", async () => {
    await store.set(["gm", 1], "one");
    await store.set(["gm", 3], "three");
    const keys = Array.from({ length: 23 }, (_, i) => ["gm", i % 5] as StateKey);
    const values = (await store.getMany<string>(keys)).map((e) => e.value);
    deepStrictEqual(values, keys.map(([, i]) => (i === 1 ? "one" : i === 3 ? "three" : null)));
  });

  await t.step("atomic commits: a failed check applies nothing", async () => {
    await store.set(["acct", "a"], 10);
    const entry = await store.get<number>(["acct", "a"]);
    await store.set(["acct", "a"], 11); // another writer
    const stale = await store.atomic()
      .check(entry)
      .set(["acct", "a"], entry.value! - 5)
      .set(["acct", "b"], 5)
      .commit();
    strictEqual(stale.ok, false);
    strictEqual((await store.get(["acct", "a"])).value, 11);
    strictEqual((await store.get(["acct", "b"])).value, null, "nothing of it applied");
    const fresh = await store.get<number>(["acct", "a"]);
    const absent = await store.get(["acct", "b"]);
    const done = await store.atomic()
      .check(fresh, absent)
      .set(["acct", "a"], 6)
      .set(["acct", "b"], 5)
      .delete(["acct", "c"])
      .commit();
    strictEqual(done.ok, true);
    deepStrictEqual([
      (await store.get(["acct", "a"])).value,
      (await store.get(["acct", "b"])).value,
    ], [6, 5]);
  });

  await t.step("concurrent read-modify-write loops lose no update", async () => {
    await store.set(["counter"], 0);
    const workers = 8, each = 12;
    await Promise.all(Array.from({ length: workers }, async () => {
      for (let i = 0; i < each; i++) {
        for (;;) {
          const entry = await store.get<number>(["counter"]);
          const { ok } = await store.atomic().check(entry).set(["counter"], entry.value! + 1)
            .commit();
          if (ok) break;
        }
      }
    }));
    strictEqual((await store.get(["counter"])).value, workers * each);
  });

  await t.step("of racing create-if-absent commits exactly one wins", async () => {
    const results = await Promise.all(
      Array.from(
        { length: 10 },
        (_, i) =>
          store.atomic().check({ key: ["once"], versionstamp: null }).set(["once"], i).commit(),
      ),
    );
    strictEqual(results.filter((r) => r.ok).length, 1);
    ok(typeof (await store.get(["once"])).value === "number");
  });
}

/** Resolves after `ms`. */
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A promise and the function that resolves it. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => open = resolve);
  return { opened, open };
}

/** The named-lock cases: `store` and `peer` as in {@link contract}. */
async function lockContract(t: Deno.TestContext, store: StateStore, peer: StateStore) {
  await t.step("holders of one lock never overlap, here and in another process", async () => {
    let inside = 0, most = 0;
    const order: number[] = [];
    await Promise.all(
      Array.from(
        { length: 8 },
        (_, i) =>
          (i % 2 === 0 ? store : peer).withLock("prepare:one", async () => {
            inside++;
            most = Math.max(most, inside);
            await sleep(15);
            order.push(i);
            inside--;
            return i;
          }),
      ),
    );
    strictEqual(most, 1, "one holder at a time");
    strictEqual(order.length, 8, "every holder ran");
  });

  await t.step("a held lock does not block another name, and returns run's value", async () => {
    const release = gate();
    const held = store.withLock("prepare:held", () => release.opened.then(() => "held"));
    await sleep(20);
    const other = await peer.withLock("prepare:other", () => Promise.resolve(42));
    strictEqual(other, 42, "another name was taken while the first is held");
    const same = peer.withLock("prepare:held", () => Promise.resolve("after"));
    let settled = false;
    same.then(() => settled = true);
    await sleep(150);
    strictEqual(settled, false, "the same name waits for its holder");
    release.open();
    strictEqual(await held, "held");
    strictEqual(await same, "after");
  });

  await t.step("a lock whose holder throws is released", async () => {
    await store.withLock("prepare:throws", () => Promise.reject(new Error("boom"))).then(
      () => assertFail("the holder's error reaches the caller"),
      (error: Error) => strictEqual(error.message, "boom"),
    );
    const started = Date.now();
    strictEqual(await peer.withLock("prepare:throws", () => Promise.resolve("next")), "next");
    ok(Date.now() - started < 2000, "taken at once");
  });
}

function assertFail(message: string): never {
  throw new Error(message);
}

Deno.test("state keys encode to bytes in key order and decode back", () => {
  const keys: StateKey[] = [
    ["a"],
    ["a", ""],
    ["a", "\u0000"],
    ["a", "b"],
    ["a", 1],
    ["a", -1.5],
    ["é", 0],
    [-Infinity],
    [Infinity],
    [0, "x"],
  ];
  for (const key of keys) deepStrictEqual(decodeKey(encodeKey(key)), key);
  const order = (a: Uint8Array, b: Uint8Array) => Buffer.compare(a, b);
  const encoded = [["a", -2], ["a", -1.5], ["a", 0], ["a", 1], ["a", 1e10]].map((k) =>
    encodeKey(k)
  );
  deepStrictEqual([...encoded].sort(order), encoded, "numbers in numeric order");
});

Deno.test("the Deno KV state store keeps the contract", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "nnserve-state-" });
  const store = await KvStateStore.open(`${dir}/state.kv`);
  try {
    await contract(t, store, store);
    await lockContract(t, store, store);
  } finally {
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the PostgreSQL state store keeps the contract", async (t) => {
  const postgres: TestPostgres = await startPostgres();
  try {
    const url = await postgres.database("contract");
    // Opened twice: the second open finds the schema at its version and changes nothing.
    await (await PostgresStateStore.open(url)).close();
    const store = await PostgresStateStore.open(url);
    const peer = await PostgresStateStore.open(url);
    try {
      await contract(t, store, peer);
      await lockContract(t, store, peer);
      await t.step(
        "a lock held by a replica that dies is released with its connection",
        async () => {
          const doomed = await PostgresStateStore.open(url);
          const release = gate();
          const taken = gate();
          const held = doomed.withLock("prepare:doomed", () => {
            taken.open();
            return release.opened;
          });
          await taken.opened;
          let settled = false;
          const waiting = peer.withLock("prepare:doomed", () => Promise.resolve(1))
            .finally(() => settled = true);
          await sleep(150);
          strictEqual(settled, false, "held while the replica lives");
          const closed = Date.now();
          await doomed.close();
          strictEqual(await waiting, 1);
          ok(Date.now() - closed < 2000, "taken once its connection closed");
          release.open();
          await held;
        },
      );
    } finally {
      await store.close();
      await peer.close();
    }
  } finally {
    await postgres.stop();
  }
});
