/** Crash-safe file writes: a reader never sees a half-written file under the final name. */

/** The suffix of the temporary files {@link writeFileAtomic} writes beside their target. */
export const TEMPORARY_SUFFIX = ".tmp";

/**
 * Writes the parts, one after the other, to a temporary file, fsyncs it, then renames it
 * over `path`. A failure (a full disk, say) removes the temporary file; only a crash can
 * leave one behind ({@link removeTemporaries} sweeps those).
 */
export async function writeFileAtomic(
  path: string,
  ...parts: Uint8Array[]
): Promise<void> {
  const temp = `${path}.${crypto.randomUUID()}${TEMPORARY_SUFFIX}`;
  try {
    const file = await Deno.open(temp, { write: true, create: true, truncate: true });
    try {
      for (const bytes of parts) {
        let written = 0;
        while (written < bytes.byteLength) written += await file.write(bytes.subarray(written));
      }
      await file.sync();
    } finally {
      file.close();
    }
    await Deno.rename(temp, path);
  } catch (error) {
    await Deno.remove(temp).catch(() => {});
    throw namingPath(error, path);
  }
}

/**
 * An OS error with the file it was about in its message (a write's "no space left on
 * device" names no file), its `code` kept; other errors as they are.
 */
export function namingPath(error: unknown, path: string): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  if (!(error instanceof Error) || typeof code !== "string" || error.message.includes(path)) {
    return error;
  }
  return Object.assign(new Error(`${error.message}: writing ${path}`, { cause: error }), { code });
}

/** Removes a file, ignoring one that is already gone. */
export async function removeIfPresent(path: string): Promise<void> {
  try {
    await Deno.remove(path);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
}

/**
 * Removes the temporary files a crash left under `dir` (recursively) that were last written
 * at least `olderThanMs` ago: 0 where this process alone writes there (its data directory,
 * which it holds locked), longer where other processes may be writing theirs right now. The
 * number removed.
 */
export async function removeTemporaries(dir: string, olderThanMs: number): Promise<number> {
  let removed = 0;
  const now = Date.now();
  const visit = async (path: string): Promise<void> => {
    let entries: Deno.DirEntry[];
    try {
      entries = await Array.fromAsync(Deno.readDir(path));
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return;
      throw error;
    }
    for (const entry of entries) {
      const child = `${path}/${entry.name}`;
      if (entry.isDirectory) await visit(child);
      else if (entry.isFile && entry.name.endsWith(TEMPORARY_SUFFIX)) {
        const stat = await Deno.stat(child).catch(() => undefined);
        if (!stat || now - (stat.mtime?.getTime() ?? now) < olderThanMs) continue;
        await removeIfPresent(child);
        removed++;
      }
    }
  };
  await visit(dir);
  return removed;
}
