/**
 * Memories' bytes on this replica's own disk (the embedded mode): one file per memory under
 * the data directory, written in place region by region, so a small write to a large memory
 * costs its own size, not the memory's.
 */
import { DriverError } from "../nnapi/errors.ts";
import { removeIfPresent, writeFileAtomic } from "../store/atomic_file.ts";

/** The files of memories in one directory. */
export class MemoryFiles {
  readonly #dir: string;

  constructor(dir: string) {
    this.#dir = dir;
    Deno.mkdirSync(dir, { recursive: true });
  }

  #file(id: string): string {
    return `${this.#dir}/${id}.bin`;
  }

  /** A new memory's file, whole before it appears under its name. */
  create(id: string, bytes: Uint8Array): Promise<void> {
    return writeFileAtomic(this.#file(id), bytes);
  }

  /** Reads the memory's `into.byteLength` bytes; a file missing or short is a failure. */
  async read(id: string, into: Uint8Array): Promise<void> {
    let read = 0;
    try {
      using file = await Deno.open(this.#file(id), { read: true });
      while (read < into.byteLength) {
        const n = await file.read(into.subarray(read));
        if (n === null) break;
        read += n;
      }
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
    if (read !== into.byteLength) {
      throw new DriverError("GENERAL_FAILURE", `the stored contents of memory ${id} are short`);
    }
  }

  /** Writes `bytes` at `offset` of the memory's file and syncs; a removed file is left so. */
  async write(id: string, offset: number, bytes: Uint8Array): Promise<void> {
    let file: Deno.FsFile;
    try {
      file = await Deno.open(this.#file(id), { write: true });
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return; // deleted meanwhile
      throw error;
    }
    try {
      await file.seek(offset, Deno.SeekMode.Start);
      let written = 0;
      while (written < bytes.byteLength) written += await file.write(bytes.subarray(written));
      await file.syncData();
    } finally {
      file.close();
    }
  }

  remove(id: string): Promise<void> {
    return removeIfPresent(this.#file(id));
  }
}
