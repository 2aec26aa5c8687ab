/**
 * Reading the model repository's files safely: a file there may be anything a symlink
 * points at. Only regular files are read, each up to a size cap; JSON faults say where, not
 * what; schema faults name the field and the rule, not the value; and every failure reason
 * is one bounded line. A reason never quotes a file's content (`/readyz` and the repository
 * index show reasons).
 */
import type { z } from "@hono/zod-openapi";

/** Longest failure reason kept: a converter's or the driver's message is one line. */
const MAX_REASON_LENGTH = 500;

/** What a file that is not a regular one is, for a reason. */
function fileKind(info: Deno.FileInfo): string {
  if (info.isDirectory) return "a directory";
  if (info.isFifo) return "a FIFO";
  if (info.isCharDevice) return "a character device";
  if (info.isBlockDevice) return "a block device";
  return info.isSocket ? "a socket" : "not a file";
}

/**
 * The bytes of `<dir>/<file>` (symlinks followed), or undefined when there is none. Only a
 * regular file is opened, after `stat` says it is one of at most `maxBytes`: opening a FIFO
 * blocks until a writer comes, and a device such as `/dev/zero` never ends. At most its size
 * plus one byte is read, so a file that grows meanwhile (or a `/proc` file, of size 0 but
 * not empty) fails too. Faults name the file, never its content.
 */
export async function readRepositoryFile(
  dir: string,
  file: string,
  maxBytes: number,
): Promise<Uint8Array | undefined> {
  const unreadable = (error: unknown) =>
    new Error(`${file} cannot be read (${(error as Error).name})`);
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(`${dir}/${file}`);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw unreadable(error);
  }
  if (!info.isFile) throw new Error(`${file} is not a regular file (${fileKind(info)})`);
  if (info.size > maxBytes) {
    throw new Error(
      `${file} is larger than ${maxBytes} bytes (NNSERVE_REPOSITORY_MAX_FILE_BYTES)`,
    );
  }
  using handle = await Deno.open(`${dir}/${file}`, { read: true }).catch((error) => {
    throw unreadable(error);
  });
  const bytes = new Uint8Array(info.size + 1);
  let length = 0;
  for (let read: number | null = 0; read !== null && length < bytes.length;) {
    read = await handle.read(bytes.subarray(length));
    length += read ?? 0;
  }
  if (length > info.size) throw new Error(`${file} changed while it was read`);
  return bytes.subarray(0, length);
}

/**
 * The offset of the first JSON syntax fault in `text` (its length when the text ends early):
 * where `JSON.parse` failed, found without its message, which quotes the text. A loop over
 * the characters, not a regular expression: a string of megabytes would overflow one's stack.
 */
function jsonFaultOffset(text: string): number {
  const closers: string[] = []; // "}" or "]" per open object or array
  const number = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
  let at = 0;
  let expecting: "value" | "key" | "colon" | "next" = "value";
  /** Moves past the string at `at`; false with `at` at its fault (or the end). */
  const string = (): boolean => {
    for (at++; at < text.length; at++) {
      const code = text.charCodeAt(at);
      if (code === 0x22) {
        at++;
        return true;
      }
      if (code < 0x20) return false;
      if (code !== 0x5c) continue;
      at++; // what the backslash escapes
      if (text[at] === "u" && /^[0-9a-fA-F]{4}$/.test(text.slice(at + 1, at + 5))) at += 4;
      else if (at >= text.length || !'"\\/bfnrt'.includes(text[at])) return false;
    }
    return false;
  };
  for (;;) {
    while (" \t\n\r".includes(text[at] ?? "x")) at++;
    if (at >= text.length) return at;
    const char = text[at];
    if (expecting === "next") {
      if (closers.length === 0) return at; // something after the whole value
      if (char === ",") expecting = closers.at(-1) === "}" ? "key" : "value";
      else if (char === closers.at(-1)) closers.pop();
      else return at;
      at++;
    } else if (expecting === "key") {
      if (char !== '"' || !string()) return at;
      expecting = "colon";
    } else if (expecting === "colon") {
      if (char !== ":") return at;
      at++;
      expecting = "value";
    } else if (char === "{" || char === "[") {
      closers.push(char === "{" ? "}" : "]");
      for (at++; " \t\n\r".includes(text[at] ?? "x"); at++);
      expecting = char === "{" ? "key" : "value";
      if (text[at] === closers.at(-1)) {
        closers.pop();
        at++;
        expecting = "next";
      }
    } else if (char === '"') {
      if (!string()) return at;
      expecting = "next";
    } else {
      const literal = ["true", "false", "null"].find((word) => text.startsWith(word, at));
      number.lastIndex = at;
      const end = literal ? at + literal.length : number.test(text) ? number.lastIndex : at;
      if (end === at) return at;
      at = end;
      expecting = "next";
    }
  }
}

/**
 * `bytes` (the file `file`) parsed as JSON; a fault says where (line and column), never what
 * the text there is.
 */
export function parseJsonFile(file: string, bytes: Uint8Array): unknown {
  const text = new TextDecoder().decode(bytes);
  try {
    return JSON.parse(text);
  } catch {
    const offset = jsonFaultOffset(text);
    const before = text.slice(0, offset).split("\n");
    const where = `line ${before.length}, column ${before.at(-1)!.length + 1}`;
    throw new Error(
      offset >= text.length
        ? `${file} is not JSON (it ends early, ${where})`
        : `${file} is not JSON (${where})`,
    );
  }
}

/** A key of a file shown in a reason: an index or a field-like name, else a placeholder. */
const shownKey = (key: PropertyKey) =>
  typeof key === "number" || /^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$/.test(String(key))
    ? String(key)
    : "(a key)";

/** A schema fault of `file` as a reason: the field and the rule, never the value. */
export function schemaFault(file: string, issue: z.core.$ZodIssue): Error {
  const path = issue.path.map(shownKey).join(".") || "(root)";
  const message = issue.code === "unrecognized_keys"
    ? `unrecognized key(s): ${issue.keys.map(shownKey).join(", ")}`
    : issue.message;
  return new Error(`${file}: ${path}: ${message}`);
}

/** A failure reason as shown: one line of printable characters, of bounded length. */
export function shownReason(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const line = message.replace(/\p{Cc}+/gu, " ").trim();
  return line.length > MAX_REASON_LENGTH ? `${line.slice(0, MAX_REASON_LENGTH - 3)}...` : line;
}
