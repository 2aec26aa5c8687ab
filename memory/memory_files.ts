/**
 * Memories' bytes on this replica's own disk (the embedded mode): one file per memory under
 * the data directory. A region is written in place, so a small write to a large memory costs
 * its own size, not the memory's, and is all or nothing after any crash: the region is first
 * written whole to the memory's journal (aside and renamed, so it exists only complete), then
 * into the file, and the journal is removed. A journal found before a read is a write that
 * a crash interrupted: it is applied again (redo), so the memory holds the new region whole.
 */
import { DriverError } from "../nnapi/errors.ts";
import { namingPath, removeIfPresent, writeFileAtomic } from "../store/atomic_file.ts";
import { KeyedTurns } from "../store/keyed_turns.ts";

/** The journal's header: the region's offset (8 bytes) and length (8 bytes), little-endian. */
const JOURNAL_HEADER = 16;

/** The files of memories in one directory. */
export class MemoryFiles {
  readonly #dir: string;
  /** Per memory, one read or write at a time (a write and its journal are one step). */
  readonly #turns = new KeyedTurns();

  constructor(dir: string) {
    this.#dir = dir;
    Deno.mkdirSync(dir, { recursive: true });
  }

  #file(id: string): string {
    return `${this.#dir}/${id}.bin`;
  }

  #journal(id: string): string {
    return `${this.#dir}/${id}.journal`;
  }

  /** A new memory's file, whole before it appears under its name. */
  create(id: string, bytes: Uint8Array): Promise<void> {
    return writeFileAtomic(this.#file(id), bytes);
  }

  /** Reads the memory's `into.byteLength` bytes; a file missing or short is a failure. */
  read(id: string, into: Uint8Array): Promise<void> {
    return this.#turns.run(id, async () => {
      await this.#recover(id);
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
    });
  }

  /**
   * Writes `bytes` at `offset` of the memory's file, through its journal, and syncs; a
   * removed file is left so.
   */
  write(id: string, offset: number, bytes: Uint8Array): Promise<void> {
    return this.#turns.run(id, async () => {
      try {
        await Deno.stat(this.#file(id));
      } catch (error) {
        if (error instanceof Deno.errors.NotFound) return; // deleted meanwhile
        throw error;
      }
      const header = new DataView(new ArrayBuffer(JOURNAL_HEADER));
      header.setBigUint64(0, BigInt(offset), true);
      header.setBigUint64(8, BigInt(bytes.byteLength), true);
      await writeFileAtomic(this.#journal(id), new Uint8Array(header.buffer), bytes);
      await this.#writeInPlace(id, offset, bytes);
      await removeIfPresent(this.#journal(id));
    });
  }

  /** Applies a journal an interrupted write left (again, if it had been applied in part). */
  async #recover(id: string): Promise<void> {
    let journal: Uint8Array;
    try {
      journal = await Deno.readFile(this.#journal(id));
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return;
      throw error;
    }
    const header = new DataView(journal.buffer, journal.byteOffset, JOURNAL_HEADER);
    const offset = Number(header.getBigUint64(0, true));
    const length = Number(header.getBigUint64(8, true));
    if (journal.byteLength !== JOURNAL_HEADER + length) {
      throw new DriverError("GENERAL_FAILURE", `the journal of memory ${id} is damaged`);
    }
    await this.#writeInPlace(id, offset, journal.subarray(JOURNAL_HEADER));
    await removeIfPresent(this.#journal(id));
  }

  /** Writes `bytes` at `offset` of the memory's file and syncs; nothing if it is gone. */
  async #writeInPlace(id: string, offset: number, bytes: Uint8Array): Promise<void> {
    let file: Deno.FsFile;
    try {
      file = await Deno.open(this.#file(id), { write: true });
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return;
      throw error;
    }
    try {
      await file.seek(offset, Deno.SeekMode.Start);
      let written = 0;
      while (written < bytes.byteLength) written += await file.write(bytes.subarray(written));
      await file.syncData();
    } catch (error) {
      throw namingPath(error, this.#file(id));
    } finally {
      file.close();
    }
  }

  remove(id: string): Promise<void> {
    return this.#turns.run(id, async () => {
      await removeIfPresent(this.#file(id));
      await removeIfPresent(this.#journal(id));
    });
  }
}
