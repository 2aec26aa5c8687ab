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
import type { CompilationDescription } from "./compilations.ts";
import type { Driver } from "./driver.ts";
import type { ModelInfo } from "./model_registry.ts";

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
function compilationsOf(driver: Driver, owner: string, model: string) {
  return all<CompilationDescription>(
    (cursor) => driver.listCompilations(owner, { model, limit: 1000, cursor }),
    "compilations",
  ).then((list) => list.sort(newestFirst));
}

/** The client's models named `name` (every name when absent). */
function namedModels(driver: Driver, owner: string, name?: string): Promise<ModelInfo[]> {
  return all<ModelInfo>(
    (cursor) => driver.listModels(owner, { name, limit: 1000, cursor }),
    "models",
  ).then((models) => models.filter((m) => m.name !== undefined));
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

/** Every version of a client's model `name`, ascending; NOT_FOUND when it has none. */
export async function servedVersions(
  driver: Driver,
  owner: string,
  name: string,
): Promise<ServedVersion[]> {
  const versions = byVersion(await namedModels(driver, owner, name)).get(name);
  if (!versions) throw notFound(`no model named '${name}'`);
  return Promise.all(versions.map((model) => served(driver, owner, model)));
}

/**
 * One version of a client's model `name`: the given one, or else the highest version that is
 * ready (the highest of all when none is). NOT_FOUND when the name or version is unknown.
 */
export async function resolveServed(
  driver: Driver,
  owner: string,
  name: string,
  version?: string,
): Promise<ServedVersion> {
  const versions = await servedVersions(driver, owner, name);
  if (version !== undefined) {
    const found = versions.find((v) => v.version === version);
    if (!found) throw notFound(`model '${name}' has no version ${version}`);
    return found;
  }
  const ready = versions.filter((v) => v.compilation);
  return (ready.length > 0 ? ready : versions).at(-1)!;
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

/** Every version of every named model of the client, by name then version. */
export async function servedIndex(driver: Driver, owner: string): Promise<ServedVersion[]> {
  const names = byVersion(await namedModels(driver, owner));
  const versions = [...names.keys()].sort().flatMap((name) => names.get(name)!);
  return Promise.all(versions.map((model) => served(driver, owner, model)));
}

/** Compiles every version of `name` that has no compilation (defaults of the driver). */
export async function loadServed(driver: Driver, owner: string, name: string): Promise<void> {
  for (const version of await servedVersions(driver, owner, name)) {
    if (!version.compilation) {
      await driver.createCompilation(owner, { model: version.model.id });
    }
  }
}

/** Deletes the compilations of every version of `name`; the models stay. */
export async function unloadServed(driver: Driver, owner: string, name: string): Promise<void> {
  for (const version of await servedVersions(driver, owner, name)) {
    for (const compilation of await compilationsOf(driver, owner, version.model.id)) {
      await driver.deleteCompilation(owner, compilation.id).catch((error) => {
        // Deleted meanwhile by another request: the end is the same.
        if (error?.status !== "NOT_FOUND") throw error;
      });
    }
  }
}
