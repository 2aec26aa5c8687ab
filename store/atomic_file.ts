/** Crash-safe file writes: a reader never sees a half-written file under the final name. */

/**
 * Writes the parts, one after the other, to a temporary file, fsyncs it, then renames it
 * over `path`.
 */
export async function writeFileAtomic(
  path: string,
  ...parts: Uint8Array[]
): Promise<void> {
  const temp = `${path}.${crypto.randomUUID()}.tmp`;
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
  try {
    await Deno.rename(temp, path);
  } catch (error) {
    await Deno.remove(temp).catch(() => {});
    throw error;
  }
}

/** Removes a file, ignoring one that is already gone. */
export async function removeIfPresent(path: string): Promise<void> {
  try {
    await Deno.remove(path);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
}
