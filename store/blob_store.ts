/**
 * Large bytes (model documents and weights, compilation cache files, memory contents) by
 * content: a blob's key is its scope (what owns it, e.g. `models/<id>`) and the SHA-256 of
 * its bytes, and every read checks the bytes against that hash, so a blob changed or cut
 * short anywhere (a disk, a network volume, an object store) is refused, never used. A
 * write is visible only once whole. Implementations: a directory (the data dir, or a
 * network volume every replica mounts) and the S3 API (`s3_blob_store.ts`).
 * `tests/blob_store_contract_test.ts` runs the same cases against each.
 */
import { DriverError, notFound } from "../nnapi/errors.ts";
import { removeIfPresent, writeFileAtomic } from "./atomic_file.ts";
import { joinBytes, sha256Hex } from "./bytes.ts";

/** Where blobs live. */
export interface BlobStore {
  /** Stores the parts, one after the other, under `scope`; the blob's key. */
  put(scope: string, parts: readonly Uint8Array[]): Promise<string>;
  /** The blob's bytes, checked against the hash in its key. */
  get(key: string): Promise<Uint8Array>;
  /** Removes a blob; one already gone is no error. */
  delete(key: string): Promise<void>;
  /** The keys under a scope prefix (for clean-up and migration), in no set order. */
  list(prefix: string): AsyncIterable<string>;
}

/** Scopes are paths of letters, digits, `-`, `_` and `.` parts: they name files and objects. */
const SCOPE = /^[A-Za-z0-9_.-]+(\/[A-Za-z0-9_.-]+)*$/;
const KEY = /^([A-Za-z0-9_.-]+(?:\/[A-Za-z0-9_.-]+)*)\/([0-9a-f]{64})$/;

/** The key of `parts` under `scope`, and the parts joined. */
export async function blobKey(
  scope: string,
  parts: readonly Uint8Array[],
): Promise<{ key: string; bytes: Uint8Array }> {
  if (!SCOPE.test(scope) || scope.split("/").some((p) => p === "." || p === "..")) {
    throw new TypeError(`'${scope}' is not a blob scope`);
  }
  const bytes = joinBytes(parts);
  return { key: `${scope}/${await sha256Hex(bytes)}`, bytes };
}

/** The hash a key names; a malformed key is an error of the caller. */
export function keyHash(key: string): string {
  const match = KEY.exec(key);
  if (!match || match[1].split("/").some((p) => p === "." || p === "..")) {
    throw new TypeError(`'${key}' is not a blob key`);
  }
  return match[2];
}

/** Checks bytes read for `key` against its hash. */
export async function verified(key: string, bytes: Uint8Array): Promise<Uint8Array> {
  if (await sha256Hex(bytes) !== keyHash(key)) {
    throw new DriverError(
      "GENERAL_FAILURE",
      `blob ${key} does not match its hash: it was changed or cut short where it is stored`,
    );
  }
  return bytes;
}

/** Blobs as files under a directory: the data dir's, or a volume every replica mounts. */
export class DirectoryBlobStore implements BlobStore {
  readonly #root: string;

  constructor(root: string) {
    this.#root = root;
  }

  async put(scope: string, parts: readonly Uint8Array[]): Promise<string> {
    const { key, bytes } = await blobKey(scope, parts);
    const path = `${this.#root}/${key}`;
    await Deno.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true });
    // Written aside and renamed: a reader sees the whole blob or none.
    await writeFileAtomic(path, bytes);
    return key;
  }

  async get(key: string): Promise<Uint8Array> {
    keyHash(key);
    try {
      return await verified(key, await Deno.readFile(`${this.#root}/${key}`));
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) throw notFound(`no blob ${key}`);
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    keyHash(key);
    await removeIfPresent(`${this.#root}/${key}`);
    // The scope's directory goes with its last blob.
    await Deno.remove(`${this.#root}/${key.slice(0, key.lastIndexOf("/"))}`).catch(() => {});
  }

  async *list(prefix: string): AsyncIterable<string> {
    const walk = async function* (dir: string, relative: string): AsyncIterable<string> {
      let entries: Deno.DirEntry[];
      try {
        entries = await Array.fromAsync(Deno.readDir(dir));
      } catch (error) {
        if (error instanceof Deno.errors.NotFound) return;
        throw error;
      }
      for (const entry of entries) {
        const path = relative ? `${relative}/${entry.name}` : entry.name;
        if (entry.isDirectory) yield* walk(`${dir}/${entry.name}`, path);
        else if (KEY.test(path)) yield path;
      }
    };
    for await (const key of walk(this.#root, "")) if (key.startsWith(prefix)) yield key;
  }
}
