/**
 * A real PVE 9.2.11 node's answers (`../shared/realpve/transcript-2026-12-03.jsonl`, beside the
 * repository) and the comparison of the simulator's answers with them: the same status, the same
 * shape (keys and value types) and the same wording, values compared where they do not depend on
 * the run or the machine.
 *
 * The transcript keeps only the first 500 characters of each answer, so an answer is read as far as
 * it goes: a cut object or list tells which keys and entries it has, not which it lacks.
 *
 * @module
 */

/** One request the package sent to the node, and the node's answer. */
export interface NodeExchange {
  step: string;
  method: string;
  /** `/api2/json/...` with the query. */
  path: string;
  /** The form body as sent (`null` for GET and DELETE). */
  body: string | null;
  status?: number;
  /** The first 500 characters of the answer's body. */
  answer?: string;
  /** Set instead of an answer when the package gave up on the request. */
  error?: string;
}

/** Where the transcript is: `<repo>/../shared/realpve/`. */
export const TRANSCRIPT_PATH = new URL(
  "../../../shared/realpve/transcript-2026-12-03.jsonl",
  import.meta.url,
).pathname;

/** The node's exchanges in order; a missing transcript is an error that says what is needed. */
export async function readTranscript(): Promise<NodeExchange[]> {
  let text: string;
  try {
    text = await Deno.readTextFile(TRANSCRIPT_PATH);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
    throw new Error(
      `the real node's transcript is not at ${TRANSCRIPT_PATH}: this test needs ` +
        "transcript-2026-12-03.jsonl (a real PVE 9.2.11 node's answers to the package's requests) " +
        "in ../shared/realpve/ beside the repository, as CI has it.",
    );
  }
  return text.split("\n").filter((l) => l.trim()).map((l) =>
    JSON.parse(l) as NodeExchange
  );
}

/** Objects and lists the transcript cut short: they show some of their members, not all. */
const cut = new WeakSet<object>();
const CUT = Symbol("cut");

/**
 * Parses as much of a JSON text as it holds: a value cut short is left out, and every object or
 * list it was in is marked as cut (see {@link isCut}).
 */
export function parsePrefix(text: string): unknown {
  let i = 0;
  let ended = false;
  const end = (): typeof CUT => {
    ended = true;
    return CUT;
  };
  const space = () => {
    while (i < text.length && /\s/.test(text[i])) i++;
  };
  const string = (): string | typeof CUT => {
    let j = i + 1;
    while (j < text.length && text[j] !== '"') j += text[j] === "\\" ? 2 : 1;
    if (j >= text.length) return end();
    const s = JSON.parse(text.slice(i, j + 1)) as string;
    i = j + 1;
    return s;
  };
  const container = <T extends object>(
    out: T,
    close: string,
    member: (out: T) => void,
  ): T => {
    i++;
    for (;;) {
      space();
      if (i >= text.length || ended) break;
      if (text[i] === close) {
        i++;
        return out;
      }
      if (text[i] === ",") {
        i++;
        continue;
      }
      member(out);
    }
    ended = true;
    cut.add(out);
    return out;
  };
  const value = (): unknown => {
    space();
    if (i >= text.length) return end();
    const c = text[i];
    if (c === "{") {
      return container({} as Record<string, unknown>, "}", (out) => {
        const key = string();
        space();
        if (key === CUT || i >= text.length) return void end();
        i++; // ':'
        const v = value();
        if (v !== CUT) out[key] = v;
      });
    }
    if (c === "[") {
      return container([] as unknown[], "]", (out) => {
        const v = value();
        if (v !== CUT) out.push(v);
      });
    }
    if (c === '"') return string();
    const rest = text.slice(i);
    const m = /^(-?\d+(\.\d+)?([eE][+-]?\d+)?|true|false|null)/.exec(rest);
    // A number or word at the very end may be cut short.
    if (!m || m[0].length === rest.length) {
      if (["true", "false", "null"].some((w) => w.startsWith(rest)) || m) {
        return end();
      }
      throw new Error(`not JSON at ${i}: ${rest.slice(0, 40)}`);
    }
    i += m[0].length;
    return JSON.parse(m[0]);
  };
  const v = value();
  return v === CUT ? undefined : v;
}

/** Whether the transcript cut this object or list short. */
export function isCut(value: object): boolean {
  return cut.has(value);
}

function kind(v: unknown): string {
  return v === null ? "null" : Array.isArray(v) ? "list" : typeof v;
}

/**
 * How values compare at one place: `shape` compares only keys and types there and below, `set` a
 * comma-separated list as a set, `upid` a UPID but its run-dependent fields, `machine` nothing
 * (the value is what the node's machine is).
 */
export type Rule = "exact" | "shape" | "set" | "upid" | "machine";

/** What decides the rule for the value of `key` (the last key of `at`). */
export type Rules = (at: string, key: string) => Rule;

/** The members a list's entries are told apart by, first that the node's entries have. */
const ENTRY_IDS = ["vmid", "volid", "storage", "key", "n", "name"];

/**
 * The differences between the node's value and the simulator's, one line each naming where: a
 * missing or extra key (extra only where the node's object is whole), another type, another value
 * where `rules` says values compare. Lists of objects are matched entry by entry by their id.
 */
export function differences(
  node: unknown,
  sim: unknown,
  rules: Rules,
  at = "",
  key = "",
): string[] {
  const rule = rules(at, key);
  if (rule === "machine") return [];
  const show = (v: unknown) => JSON.stringify(v)?.slice(0, 160);
  if (kind(node) !== kind(sim)) {
    return [
      `${at || "the answer"}: the node has ${kind(node)} ${
        show(node)
      }, the simulator ${kind(sim)} ${show(sim)}`,
    ];
  }
  if (Array.isArray(node)) {
    return listDifferences(node, sim as unknown[], rules, at);
  }
  if (node !== null && typeof node === "object") {
    const s = sim as Record<string, unknown>;
    const n = node as Record<string, unknown>;
    const out: string[] = [];
    for (const [k, v] of Object.entries(n)) {
      if (!(k in s)) {
        out.push(`${at}.${k}: the simulator lacks it (node: ${show(v)})`);
      } else {
        out.push(
          ...differences(
            v,
            s[k],
            rule === "shape" ? shapeBelow(rules) : rules,
            `${at}.${k}`,
            k,
          ),
        );
      }
    }
    if (!isCut(n)) {
      const extra = (k: string) =>
        !(k in n) && rules(`${at}.${k}`, k) !== "machine";
      for (const k of Object.keys(s).filter(extra)) {
        out.push(
          `${at}.${k}: the node has no such key (simulator: ${show(s[k])})`,
        );
      }
    }
    return out;
  }
  const same = rule === "shape" ||
    (rule === "set"
      ? sameSet(String(node), String(sim))
      : rule === "upid"
      ? upidShape(String(node)) === upidShape(String(sim))
      : node === sim);
  return same ? [] : [
    `${at || "the answer"}: the node has ${show(node)}, the simulator ${
      show(sim)
    }`,
  ];
}

function listDifferences(
  node: unknown[],
  sim: unknown[],
  rules: Rules,
  at: string,
): string[] {
  const first = node.find((e) => e !== null && typeof e === "object") as
    | Record<string, unknown>
    | undefined;
  const id = first && ENTRY_IDS.find((k) => k in first);
  if (rules(at, "") === "shape") {
    // Compared by shape: the first entries stand for all.
    return node.length > 0 && sim.length > 0
      ? differences(node[0], sim[0], shapeBelow(rules), `${at}[0]`)
      : [];
  }
  if (!id) {
    const whole = !isCut(node);
    const out = node.flatMap((e, i) =>
      i < sim.length ? differences(e, sim[i], rules, `${at}[${i}]`) : []
    );
    if (whole && node.length !== sim.length) {
      out.push(
        `${at}: the node lists ${node.length} entries, the simulator ${sim.length}`,
      );
    }
    return out;
  }
  const idOf = (e: unknown) => (e as Record<string, unknown>)?.[id];
  const out: string[] = [];
  for (const entry of node) {
    // An entry the transcript cut before its id cannot be told apart.
    if (isCut(entry as object) && idOf(entry) === undefined) continue;
    const twin = sim.find((s) => idOf(s) === idOf(entry));
    const where = `${at}[${id}=${idOf(entry)}]`;
    if (twin === undefined) {
      out.push(`${where}: the simulator does not list it`);
    } else out.push(...differences(entry, twin, rules, where));
  }
  if (!isCut(node)) {
    for (
      const extra of sim.filter((s) => !node.some((e) => idOf(e) === idOf(s)))
    ) {
      out.push(`${at}[${id}=${idOf(extra)}]: the node does not list it`);
    }
  }
  return out;
}

/** Below a place compared by shape everything is, but what is the node's machine. */
function shapeBelow(rules: Rules): Rules {
  return (at, key) => rules(at, key) === "machine" ? "machine" : "shape";
}

function sameSet(a: string, b: string): boolean {
  const set = (t: string) => t.split(",").sort().join(",");
  return set(a) === set(b);
}

/** A UPID with its run-dependent hex fields (pid, pstart, starttime) blanked. */
export function upidShape(text: string): string {
  return text.replace(
    /^UPID:([^:]+):[0-9A-F]{8}:[0-9A-F]{8}:[0-9A-F]{8}:/,
    "UPID:$1:<pid>:<pstart>:<starttime>:",
  );
}
