/**
 * Changes replicas tell each other through the state store's announcements (PostgreSQL's
 * LISTEN/NOTIFY; Deno KV: this process only): what each holds in memory of a changed thing
 * (a deleted compilation's prepared plan, the served models of a client, a deleted memory's
 * loaded bytes) is stale.
 */
import type { Change } from "../driver/driver_config.ts";
import type { StateStore } from "../store/state_store.ts";

/** Announces this replica's changes and hears every replica's (this one's included). */
export class ReplicaChanges {
  readonly #state: StateStore;
  /** Resolves to the function that stops hearing. */
  readonly #listening: Promise<() => Promise<void>>;

  constructor(state: StateStore, heard: (change: Change) => void) {
    this.#state = state;
    this.#listening = state.listen((message) => {
      let change: Change;
      try {
        change = JSON.parse(message);
      } catch {
        return; // not one of ours
      }
      heard(change);
    });
  }

  /** Tells every replica; a failure is logged (the change itself is already committed). */
  async announce(change: Change): Promise<void> {
    try {
      await this.#state.announce(JSON.stringify(change));
    } catch (error) {
      // Replicas that miss it keep stale memory of the change.
      console.error(`nnserve: could not announce ${change.kind}: ${(error as Error).message}`);
    }
  }

  /** Stops hearing announcements. */
  async close(): Promise<void> {
    await (await this.#listening)();
  }
}
