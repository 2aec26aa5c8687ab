/**
 * One contract, every blob store: a directory (the data dir), a shared directory (two
 * stores on one directory, as replicas on a network volume), and the S3 API (against
 * s3rver, an S3-compatible server, on loopback). Keys are the scope and the bytes' SHA-256;
 * reads check the bytes against it (a changed blob is refused); large blobs go whole
 * (multipart on S3); a reader never sees a blob half-written; deletes, listings and bad
 * scopes behave the same everywhere.
 */
import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict";
import { PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { DriverError } from "../nnapi/errors.ts";
import { type BlobStore, DirectoryBlobStore } from "../store/blob_store.ts";
import { sha256Hex } from "../store/bytes.ts";
import { PART_BYTES, S3BlobStore } from "../store/s3_blob_store.ts";
import { seededFloats } from "../kernels/seeded_random.ts";
import { startS3 } from "./s3_fixture.ts";

const isStatus = (status: string) => (e: unknown) =>
  e instanceof DriverError && e.status === status;

/** The contract: `writer` and `reader` may be two stores over the same place. */
async function contract(
  t: Deno.TestContext,
  writer: BlobStore,
  reader: BlobStore,
  tamper: (key: string, bytes: Uint8Array) => Promise<void>,
  /**
   * Whether a blob appears whole at once. s3rver assembles a multipart upload in place, so a
   * read may meet it half-assembled: then the hash check refuses it. (S3 itself is atomic.)
   */
  atomicVisibility = true,
) {
  await t.step("a blob's key is its scope and hash; it reads back the same", async () => {
    const parts = [new TextEncoder().encode("hello "), new TextEncoder().encode("blobs")];
    const key = await writer.put("models/m-1", parts);
    strictEqual(key, `models/m-1/${await sha256Hex(new TextEncoder().encode("hello blobs"))}`);
    deepStrictEqual(new TextDecoder().decode(await reader.get(key)), "hello blobs");
    strictEqual(await writer.put("models/m-1", [new TextEncoder().encode("hello blobs")]), key);
    strictEqual((await writer.put("empty", [])).length, "empty/".length + 64);
  });

  await t.step("absent blobs are NOT_FOUND; changed ones are refused", async () => {
    const missing = `models/none/${"0".repeat(64)}`;
    await rejects(reader.get(missing), isStatus("NOT_FOUND"));
    const key = await writer.put("cache/c", [Uint8Array.of(1, 2, 3, 4)]);
    await tamper(key, Uint8Array.of(1, 2, 3, 5));
    await rejects(
      reader.get(key),
      (e) => isStatus("GENERAL_FAILURE")(e) && /does not match its hash/.test((e as Error).message),
    );
    await tamper(key, Uint8Array.of(1, 2, 3));
    await rejects(reader.get(key), isStatus("GENERAL_FAILURE"), "cut short");
  });

  await t.step("large blobs go whole, and no reader sees one half-written", async () => {
    const bytes = new Uint8Array(seededFloats((2 * PART_BYTES + 12345) / 4 + 1, 5, 1).buffer)
      .subarray(0, 2 * PART_BYTES + 12345);
    const expected = `memories/big/${await sha256Hex(bytes)}`;
    let done = false;
    const writing = writer.put("memories/big", [bytes]).finally(() => done = true);
    let reads = 0;
    while (!done) {
      reads++;
      try {
        // Whatever a read returns is the whole blob, never a part of it.
        deepStrictEqual(await reader.get(expected), bytes);
      } catch (error) {
        const refused = !atomicVisibility && isStatus("GENERAL_FAILURE")(error);
        ok(isStatus("NOT_FOUND")(error) || refused, `a read while writing: ${error}`);
      }
    }
    strictEqual(await writing, expected);
    ok(reads > 0);
    deepStrictEqual(await reader.get(expected), bytes);
  });

  await t.step("deletes, listings and bad scopes", async () => {
    const a = await writer.put("list/x", [Uint8Array.of(1)]);
    const b = await writer.put("list/y", [Uint8Array.of(2)]);
    await writer.put("other/z", [Uint8Array.of(3)]);
    deepStrictEqual((await Array.fromAsync(reader.list("list/"))).sort(), [a, b].sort());
    await writer.delete(a);
    await writer.delete(a); // gone already: no error
    await rejects(reader.get(a), isStatus("NOT_FOUND"));
    deepStrictEqual(await Array.fromAsync(reader.list("list/")), [b]);
    for (const scope of ["", "../up", "a//b", "a/../b", "sp ace", "/abs"]) {
      await rejects(writer.put(scope, [Uint8Array.of(1)]), TypeError, `scope '${scope}'`);
    }
    await rejects(reader.get("models/x/not-a-hash"), TypeError);
  });
}

Deno.test("the directory blob store keeps the contract, alone and shared by two stores", async (t) => {
  const root = await Deno.makeTempDir({ prefix: "nnserve-blobs-" });
  const tamper = (key: string, bytes: Uint8Array) => Deno.writeFile(`${root}/${key}`, bytes);
  try {
    const store = new DirectoryBlobStore(root);
    await t.step("one store", (t) => contract(t, store, store, tamper));
    await Deno.remove(root, { recursive: true });
    await t.step(
      "two stores on one directory",
      (t) => contract(t, new DirectoryBlobStore(root), new DirectoryBlobStore(root), tamper),
    );
  } finally {
    await Deno.remove(root, { recursive: true }).catch(() => {});
  }
});

Deno.test("the S3 blob store keeps the contract (s3rver on loopback)", async (t) => {
  const s3 = await startS3("nnserve");
  const { endpoint, credentials } = s3;
  const writer = new S3BlobStore({ endpoint, bucket: "nnserve", credentials, prefix: "nn/" });
  const reader = new S3BlobStore({ endpoint, bucket: "nnserve", credentials, prefix: "nn/" });
  const raw = new S3Client({ endpoint, region: "us-east-1", forcePathStyle: true, credentials });
  const tamper = async (key: string, bytes: Uint8Array) => {
    await raw.send(new PutObjectCommand({ Bucket: "nnserve", Key: `nn/${key}`, Body: bytes }));
  };
  try {
    await contract(t, writer, reader, tamper, false);
  } finally {
    writer.close();
    reader.close();
    raw.destroy();
    await s3.stop();
  }
});
