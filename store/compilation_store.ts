/**
 * Persistent compilation records (what was asked for, not the plan itself): after a restart
 * a compilation is prepared again from its model on first use, so nothing a client created
 * is lost. An index by model lets a deleted model's document live while compilations need it.
 */

/** A compilation as the client requested it. */
export interface CompilationRecord {
  id: string;
  owner: string;
  model: string;
  preference: "LOW_POWER" | "FAST_SINGLE_ANSWER" | "SUSTAINED_SPEED";
  priority: "LOW" | "MEDIUM" | "HIGH";
  devices: string[];
  createdAt: string;
  /** Compilation cache key, when it was created with a cache token. */
  cacheKey?: string;
}

/** Compilation records of all clients. */
export class CompilationStore {
  readonly #kv: Deno.Kv;

  constructor(kv: Deno.Kv) {
    this.#kv = kv;
  }

  /** Saves the record and its by-model index entry atomically. */
  async save(record: CompilationRecord): Promise<void> {
    await this.#kv.atomic()
      .set(["compilation", record.owner, record.id], record)
      .set(["model_compilation", record.owner, record.model, record.id], true)
      .commit();
  }

  /** The record, or null. */
  async get(owner: string, id: string): Promise<CompilationRecord | null> {
    return (await this.#kv.get<CompilationRecord>(["compilation", owner, id])).value;
  }

  /** Deletes the record and its index entry. */
  async remove(record: CompilationRecord): Promise<void> {
    await this.#kv.atomic()
      .delete(["compilation", record.owner, record.id])
      .delete(["model_compilation", record.owner, record.model, record.id])
      .commit();
  }

  /** Whether any compilation of the client still references the model. */
  async modelInUse(owner: string, model: string): Promise<boolean> {
    for await (const _ of this.#kv.list({ prefix: ["model_compilation", owner, model] })) {
      return true;
    }
    return false;
  }
}
