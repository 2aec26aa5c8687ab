import type { ModelRecord } from "./model_store.ts";
import { listPage, type Page } from "./kv_pages.ts";

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
  /** How the plan's costs were obtained: static estimates (default) or profiling. */
  partitioning?: "static" | "profile";
  /** The model's input and output names (imported models), for arguments by name. */
  inputNames?: string[];
  outputNames?: string[];
}

/** Compilation records of all clients. */
export class CompilationStore {
  readonly #kv: Deno.Kv;

  constructor(kv: Deno.Kv) {
    this.#kv = kv;
  }

  /**
   * Saves the record and its by-model index entry, in one atomic step with a check that the
   * model's record is still `model` (read after preparing, not deleted). The model's record
   * is rewritten as it is, which changes its versionstamp: a model delete that looked for
   * compilations before this commit then fails its own check and looks again. False when the
   * model changed meanwhile.
   */
  async save(record: CompilationRecord, model: Deno.KvEntry<ModelRecord>): Promise<boolean> {
    const { ok } = await this.#kv.atomic()
      .check(model)
      .set(model.key, model.value)
      .set(["compilation", record.owner, record.id], record)
      .set(["model_compilation", record.owner, record.model, record.id], true)
      .commit();
    return ok;
  }

  /** A page of this client's compilations, of one model when given. */
  list(
    owner: string,
    query: { model?: string; limit: number; cursor?: string },
  ): Promise<Page<CompilationRecord>> {
    const { model, limit, cursor } = query;
    return listPage<CompilationRecord>(this.#kv, ["compilation", owner], {
      keep: (r) => model === undefined || r.model === model,
      limit,
      cursor,
    });
  }

  /** The record, or null. */
  async get(owner: string, id: string): Promise<CompilationRecord | null> {
    return (await this.#kv.get<CompilationRecord>(["compilation", owner, id])).value;
  }

  /** Deletes the record and its index entry; null when absent (another delete took it first). */
  async remove(owner: string, id: string): Promise<CompilationRecord | null> {
    for (;;) {
      const entry = await this.#kv.get<CompilationRecord>(["compilation", owner, id]);
      if (!entry.value) return null;
      const { ok } = await this.#kv.atomic()
        .check(entry)
        .delete(entry.key)
        .delete(["model_compilation", owner, entry.value.model, id])
        .commit();
      if (ok) return entry.value;
    }
  }

  /** Whether any compilation of the client still references the model. */
  async modelInUse(owner: string, model: string): Promise<boolean> {
    for await (const _ of this.#kv.list({ prefix: ["model_compilation", owner, model] })) {
      return true;
    }
    return false;
  }
}
