/**
 * Models as the Open Inference Protocol serves them: by name and version, per client. A
 * client's named models (`?name=&version=`, or the model repository's) are the versions of
 * that name; the newest model registered under a name and version is the one served. A
 * version is ready when it has a compilation (the newest one serves), as models are loaded
 * in Triton's explicit model control: the repository compiles its models at start, `load`
 * compiles (and re-reads a repository model from its files), `unload` drops the
 * compilations and keeps the models.
 */
import { invalid, notFound } from "../nnapi/errors.ts";
import type { CompilationDescription } from "../driver/compilation/compilations.ts";
import type { Driver } from "../driver/driver.ts";
import type { ModelInfo } from "../driver/model/models.ts";

/** One version of a named model and the compilation serving it, if any. */
export interface ServedVersion {
  name: string;
  version: string;
  model: ModelInfo;
  /** The compilation that serves it (the newest); absent when the version is not loaded. */
  compilation?: string;
}

/** Everything of `list` page by page. */
async function all<T>(
  list: (cursor?: string) => Promise<{ next?: string } & Record<string, unknown>>,
  key: string,
): Promise<T[]> {
  const items: T[] = [];
  let cursor: string | undefined;
  do {
    const page = await list(cursor);
    items.push(...page[key] as T[]);
    cursor = page.next;
  } while (cursor);
  return items;
}

const newestFirst = (a: { createdAt: string }, b: { createdAt: string }) =>
  b.createdAt.localeCompare(a.createdAt);

/** The compilations of a model, newest first. */
async function compilationsOf(
  driver: Driver,
  owner: string,
  model: string,
): Promise<CompilationDescription[]> {
  return (await driver.compilationsOfModel(owner, model)).sort(newestFirst);
}

/** The client's models named `name` (by the name index), or every named one (a scan). */
async function namedModels(driver: Driver, owner: string, name?: string): Promise<ModelInfo[]> {
  if (name !== undefined) return await driver.namedModels(owner, name);
  const models = await all<ModelInfo>(
    (cursor) => driver.listModels(owner, { limit: 1000, cursor }),
    "models",
  );
  return models.filter((m) => m.name !== undefined);
}

/** Per name and version, the newest model; versions in ascending order. */
function byVersion(models: ModelInfo[]): Map<string, ModelInfo[]> {
  const names = new Map<string, Map<string, ModelInfo>>();
  for (const model of [...models].sort(newestFirst)) {
    const versions = names.get(model.name!) ?? new Map<string, ModelInfo>();
    if (!versions.has(model.version!)) versions.set(model.version!, model);
    names.set(model.name!, versions);
  }
  return new Map(
    [...names].map(([name, versions]) => [
      name,
      [...versions.values()].sort((a, b) => Number(a.version) - Number(b.version)),
    ]),
  );
}

async function served(driver: Driver, owner: string, model: ModelInfo): Promise<ServedVersion> {
  const [newest] = await compilationsOf(driver, owner, model.id);
  return {
    name: model.name!,
    version: model.version!,
    model,
    ...(newest ? { compilation: newest.id } : {}),
  };
}

/** The ready version's compilation, or a clear error for one that is not loaded. */
export function servingCompilation(version: ServedVersion): string {
  if (!version.compilation) {
    throw invalid(
      `model '${version.name}' version ${version.version} is not ready: load it ` +
        `(POST /v2/repository/models/${version.name}/load) or compile it (POST /v1/compilations)`,
    );
  }
  return version.compilation;
}

/** How long a lookup is kept at most (another replica's changes show after it). */
const MAX_AGE_MS = 1000;

/** A kept lookup of a client's model's versions. */
interface Lookup {
  /** The client's count of changes when it began. */
  generation: number;
  /** When it began (`performance.now()`). */
  at: number;
  versions: Promise<ServedVersion[]>;
  /** The versions, once the lookup is done. */
  found?: ServedVersion[];
}

/**
 * The served models of every client, looked up in the stores and kept per client and name
 * until the client's models or compilations change: the driver says so (`changed`) after
 * each registration, deletion and compilation, so an inference does not read the stores.
 * A lookup that overlapped a change is not kept, and none is kept longer than a second:
 * replicas sharing the state see each other's changes within that.
 */
export class ServedModels {
  readonly #driver: Driver;
  /** Per client, how many changes it has had. */
  readonly #generations = new Map<string, number>();
  readonly #cache = new Map<string, Lookup>();

  constructor(driver: Driver) {
    this.#driver = driver;
  }

  /** The client's models or compilations changed: forget what was looked up for it. */
  changed(owner: string): void {
    this.#generations.set(owner, (this.#generations.get(owner) ?? 0) + 1);
    for (const key of this.#cache.keys()) {
      if (key.startsWith(`${owner}\0`)) this.#cache.delete(key);
    }
  }

  /** Every version of a client's model `name`, ascending; NOT_FOUND when it has none. */
  versions(owner: string, name: string): Promise<ServedVersion[]> {
    const fresh = this.#fresh(owner, name);
    if (fresh) return fresh.versions;
    const key = `${owner}\0${name}`;
    const generation = this.#generations.get(owner) ?? 0;
    const versions = this.#lookUp(owner, name);
    const entry: Lookup = { generation, at: performance.now(), versions };
    this.#cache.set(key, entry);
    versions.then(
      (found) => {
        // A change landed while it was looked up: it may be stale.
        if ((this.#generations.get(owner) ?? 0) !== generation) this.#cache.delete(key);
        else entry.found = found;
      },
      () => this.#cache.delete(key),
    );
    return versions;
  }

  /** The kept lookup of a client's model `name`, if no change came since and it is young. */
  #fresh(owner: string, name: string): Lookup | undefined {
    const cached = this.#cache.get(`${owner}\0${name}`);
    if (cached?.generation !== (this.#generations.get(owner) ?? 0)) return undefined;
    return performance.now() - cached.at < MAX_AGE_MS ? cached : undefined;
  }

  async #lookUp(owner: string, name: string): Promise<ServedVersion[]> {
    const versions = byVersion(await namedModels(this.#driver, owner, name)).get(name);
    if (!versions) throw notFound(`no model named '${name}'`);
    return Promise.all(versions.map((model) => served(this.#driver, owner, model)));
  }

  /**
   * One version of a client's model `name`: the given one, or else the highest version that
   * is ready (the highest of all when none is). NOT_FOUND when the name or version is unknown.
   * Answered at once from a kept lookup (an inference awaits one layer less), else when the
   * lookup is done.
   */
  resolve(
    owner: string,
    name: string,
    version?: string,
  ): ServedVersion | Promise<ServedVersion> {
    const found = this.#fresh(owner, name)?.found;
    if (found) return pick(found, name, version);
    return this.versions(owner, name).then((versions) => pick(versions, name, version));
  }

  /** Every version of every named model of the client, by name then version. */
  async index(owner: string): Promise<ServedVersion[]> {
    const names = byVersion(await namedModels(this.#driver, owner));
    const versions = [...names.keys()].sort().flatMap((name) => names.get(name)!);
    return Promise.all(versions.map((model) => served(this.#driver, owner, model)));
  }

  /** Compiles every version of `name` that has no compilation (defaults of the driver). */
  async load(owner: string, name: string): Promise<void> {
    for (const version of await this.versions(owner, name)) {
      if (!version.compilation) {
        await this.#driver.createCompilation(owner, { model: version.model.id });
      }
    }
  }

  /** Deletes the compilations of every version of `name`; the models stay. */
  async unload(owner: string, name: string): Promise<void> {
    for (const version of await this.versions(owner, name)) {
      for (const compilation of await compilationsOf(this.#driver, owner, version.model.id)) {
        await this.#driver.deleteCompilation(owner, compilation.id).catch((error) => {
          // Deleted meanwhile by another request: the end is the same.
          if (error?.status !== "NOT_FOUND") throw error;
        });
      }
    }
  }
}

/** The version `version` of a model's versions, else the highest ready one (or highest). */
function pick(versions: ServedVersion[], name: string, version?: string): ServedVersion {
  if (version !== undefined) {
    const found = versions.find((v) => v.version === version);
    if (!found) throw notFound(`model '${name}' has no version ${version}`);
    return found;
  }
  const ready = versions.filter((v) => v.compilation);
  return (ready.length > 0 ? ready : versions).at(-1)!;
}
