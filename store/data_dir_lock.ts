/**
 * One process per data directory. In the embedded mode the data directory's state (the KV
 * file, model documents, memory files, the compilation cache and its budget) is also held
 * in the serving process's memory, so two processes on one directory would disagree. The
 * server takes an exclusive OS lock (flock) on `<dataDir>/nnserve.lock` for its lifetime:
 * the kernel drops it when the holder closes the file or dies however it dies (SIGKILL
 * included), so there is never a stale lock to clean up. The file holds the holder's pid,
 * read only to name it in the refusal.
 */

/** The lock file's name inside the data directory. */
export const LOCK_FILE = "nnserve.lock";

/** The data directory is held by another server (of this process or another one). */
export class DataDirLockedError extends Error {
  override name = "DataDirLockedError";
  /** The directory as configured. */
  readonly dir: string;
  /** The holder's pid as it wrote it, if it could be read. */
  readonly pid: number | undefined;

  constructor(dir: string, pid: number | undefined) {
    const holder = pid === undefined ? "another process (pid unknown)" : `process pid ${pid}`;
    super(
      `data directory ${dir} is in use by ${holder}; one nnserve process per data directory ` +
        `(stop it, or set NNSERVE_DATA_DIR to another directory)`,
    );
    this.dir = dir;
    this.pid = pid;
  }
}

/** A held lock; `release()` gives the directory back (idempotent). */
export interface DataDirLock {
  readonly path: string;
  release(): void;
}

// flock is per open file description, so a second open of the file in this process is
// refused like another process's; this set also covers filesystems where the kernel maps
// flock to per-process fcntl locks (NFS), where it would not be.
const heldHere = new Set<string>();

/** Takes the directory's lock or throws DataDirLockedError naming the holder's pid. */
export async function lockDataDir(dir: string): Promise<DataDirLock> {
  const path = `${dir}/${LOCK_FILE}`;
  const file = await Deno.open(path, { read: true, write: true, create: true });
  const key = await Deno.realPath(path);
  let locked = false;
  try {
    locked = !heldHere.has(key) && await file.tryLock(true);
    if (locked) {
      await file.truncate(0);
      const bytes = new TextEncoder().encode(`${Deno.pid}\n`);
      for (let written = 0; written < bytes.length;) {
        written += await file.write(bytes.subarray(written));
      }
    }
  } catch (error) {
    file.close();
    throw error;
  }
  if (!locked) {
    file.close();
    throw new DataDirLockedError(dir, await holderPid(path));
  }
  heldHere.add(key);
  let held = true;
  return {
    path,
    release() {
      if (!held) return;
      held = false;
      heldHere.delete(key);
      file.close(); // closing the descriptor releases the flock
    },
  };
}

/** The pid in the lock file; retried briefly, as the holder may be between truncate and write. */
async function holderPid(path: string): Promise<number | undefined> {
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      const text = (await Deno.readTextFile(path)).trim();
      if (/^\d+$/.test(text)) return Number(text);
    } catch {
      return undefined; // unreadable (e.g. a mandatory lock on Windows): say so
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return undefined;
}
