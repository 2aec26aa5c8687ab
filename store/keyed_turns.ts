/**
 * One operation at a time per key, in arrival order, within this process: the owner of a
 * read-modify-write that must not interleave with itself (a cache key's load and save, a
 * memory's reload and write). Keys with nothing in flight take no room.
 */
export class KeyedTurns {
  readonly #tails = new Map<string, Promise<void>>();

  /** Runs `run` after everything queued before it under `key` has settled. */
  run<T>(key: string, run: () => Promise<T>): Promise<T> {
    const next = (this.#tails.get(key) ?? Promise.resolve()).then(run, run);
    const settled = next.then(() => {}, () => {});
    this.#tails.set(key, settled);
    settled.then(() => {
      if (this.#tails.get(key) === settled) this.#tails.delete(key);
    });
    return next;
  }
}
