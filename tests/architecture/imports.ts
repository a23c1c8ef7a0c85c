/**
 * The import graph of the project's sources, read from the text of each file, and the circles in
 * it. TypeScript: every relative `import`/`export … from` (type-only ones too: a type a file needs
 * ties it to the file that declares it). Rust (`src/`): every `crate::…` and `super::…` path in a
 * file's code outside its `#[cfg(test)]` part, resolved to the deepest module file it names
 * (`crate::guest::evidence::Evidence` → `src/guest/evidence.rs`); test-only modules are left out,
 * since `testing.rs` reaches every method by design.
 */

import { dirname, join, normalize, relative } from "node:path";

/** file → the files it imports (paths relative to the project root). */
export type Graph = Map<string, Set<string>>;

const ROOT = normalize(
  join(dirname(new URL(import.meta.url).pathname), "../.."),
);

/** Every file under `dir` (relative to the root) whose name ends in one of `exts`. */
function filesUnder(dir: string, exts: string[]): string[] {
  const out: string[] = [];
  const walk = (abs: string) => {
    for (const entry of Deno.readDirSync(abs)) {
      const path = join(abs, entry.name);
      if (entry.isDirectory) {
        if (entry.name !== "node_modules" && entry.name !== "generated") {
          walk(path);
        }
      } else if (exts.some((e) => entry.name.endsWith(e))) {
        out.push(relative(ROOT, path));
      }
    }
  };
  walk(join(ROOT, dir));
  return out.sort();
}

const TS_IMPORT =
  /(?:^|\n)\s*(?:import|export)\b[^;'"]*?\bfrom\s*["']([^"']+)["']/g;
const TS_SIDE_EFFECT = /(?:^|\n)\s*import\s*["']([^"']+)["']/g;

/** The relative imports of one TypeScript file, as root-relative paths. */
export function tsImports(file: string, text: string): string[] {
  const out: string[] = [];
  for (const re of [TS_IMPORT, TS_SIDE_EFFECT]) {
    for (const m of text.matchAll(re)) {
      const spec = m[1];
      if (!spec.startsWith(".")) continue;
      out.push(normalize(join(dirname(file), spec)));
    }
  }
  return out;
}

/** The import graph of the TypeScript files under `dir`: only edges between those files. */
export function tsGraph(dir: string): Graph {
  const files = filesUnder(dir, [".ts"]);
  const known = new Set(files);
  const graph: Graph = new Map();
  for (const file of files) {
    const text = Deno.readTextFileSync(join(ROOT, file));
    graph.set(
      file,
      new Set(tsImports(file, text).filter((f) => known.has(f) && f !== file)),
    );
  }
  return graph;
}

/** `src/guest/evidence.rs` → `["guest", "evidence"]`; `src/guest/mod.rs` → `["guest"]`. */
function rustModulePath(file: string): string[] {
  const parts = relative("src", file).replace(/\.rs$/, "").split("/");
  if (parts.at(-1) === "mod" || parts.at(-1) === "lib") parts.pop();
  return parts;
}

/** The code of a Rust file without comments and without its `#[cfg(test)]` module. */
export function rustCode(text: string): string {
  const noTests = text.split(/\n#\[cfg\(test\)\]\s*\nmod \w+\s*\{/)[0];
  return noTests
    .replace(/\/\*[\s\S]*?\*\//g, "")
    .split("\n")
    .map((line) => line.replace(/\/\/.*$/, ""))
    .join("\n");
}

/** Expands `use a::{b, c::{d, e}}` groups into whole paths (`a::b`, `a::c::d`, `a::c::e`). */
export function expandUse(tree: string): string[] {
  const s = tree.replace(/\s+/g, "");
  const open = s.indexOf("{");
  if (open < 0) return [s.replace(/::self$/, "").replace(/\bas\w+$/, "")];
  const prefix = s.slice(0, open);
  const inner = s.slice(open + 1, s.lastIndexOf("}"));
  const items: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < inner.length; i++) {
    if (inner[i] === "{") depth++;
    if (inner[i] === "}") depth--;
    if (inner[i] === "," && depth === 0) {
      items.push(inner.slice(start, i));
      start = i + 1;
    }
  }
  items.push(inner.slice(start));
  return items.filter((i) => i !== "").flatMap((item) =>
    item === "self" ? [prefix.replace(/::$/, "")] : expandUse(prefix + item)
  );
}

/** The module paths (`crate::`-rooted, as segment lists) a Rust file's code names. */
export function rustPaths(file: string, code: string): string[][] {
  const here = rustModulePath(file);
  // `super::` is the parent of the file's module (a mod.rs file's module is its folder).
  const parentOf = (mod: string[]) => mod.slice(0, -1);
  const out: string[][] = [];
  const resolve = (path: string) => {
    const segs = path.split("::").filter((s) => s !== "");
    if (segs[0] === "crate") return segs.slice(1);
    if (segs[0] === "super") {
      let mod = parentOf(here);
      let rest = segs.slice(1);
      while (rest[0] === "super") {
        mod = parentOf(mod);
        rest = rest.slice(1);
      }
      return [...mod, ...rest];
    }
    if (segs[0] === "self") return [...here, ...segs.slice(1)];
    return undefined;
  };
  for (const m of code.matchAll(/\buse\s+([^;]+);/g)) {
    for (const path of expandUse(m[1])) {
      const resolved = resolve(path);
      if (resolved) out.push(resolved);
    }
  }
  // Paths written inline: `crate::pve::endpoints::guest_config(…)`, `super::x::y`.
  const inline = code.replace(/\buse\s+[^;]+;/g, "");
  for (const m of inline.matchAll(/(?<![\w:])((?:crate|super)(?:::\w+)+)/g)) {
    const resolved = resolve(m[1]);
    if (resolved) out.push(resolved);
  }
  return out;
}

/** The import graph of the core's modules (`src/`), test-only modules left out. */
export function rustGraph(): Graph {
  const files = filesUnder("src", [".rs"]);
  const lib = Deno.readTextFileSync(join(ROOT, "src/lib.rs"));
  const testOnly = [
    ...lib.matchAll(/#\[cfg\(test\)\]\s*\n\s*(?:pub\s+)?mod\s+(\w+);/g),
  ]
    .map((m) => m[1]);
  const byModule = new Map<string, string>();
  for (const file of files) byModule.set(rustModulePath(file).join("::"), file);
  const moduleFile = (path: string[]): string | undefined => {
    for (let n = path.length; n > 0; n--) {
      const file = byModule.get(path.slice(0, n).join("::"));
      if (file) return file;
    }
    return undefined;
  };
  const graph: Graph = new Map();
  for (const file of files) {
    const mod = rustModulePath(file);
    if (testOnly.includes(mod[0])) continue;
    const code = rustCode(Deno.readTextFileSync(join(ROOT, file)));
    const targets = new Set<string>();
    for (const path of rustPaths(file, code)) {
      if (testOnly.includes(path[0])) continue;
      const target = moduleFile(path);
      // A folder's mod.rs only declares its children: naming `crate::guest` alone is no import.
      if (
        target && target !== file && !target.endsWith("mod.rs") &&
        target !== "src/lib.rs"
      ) {
        targets.add(target);
      }
    }
    graph.set(file, targets);
  }
  return graph;
}

/** The circles of a graph: each strongly connected group of two or more files (Tarjan). */
export function circles(graph: Graph): string[][] {
  let index = 0;
  const indexOf = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const groups: string[][] = [];
  const visit = (v: string) => {
    indexOf.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!indexOf.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, indexOf.get(w)!));
      }
    }
    if (low.get(v) === indexOf.get(v)) {
      const group: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        group.push(w);
      } while (w !== v);
      if (group.length > 1) groups.push(group.sort());
    }
  };
  for (const v of graph.keys()) if (!indexOf.has(v)) visit(v);
  return groups;
}

/** One path around a circle, for messages: `a.ts → b.ts → a.ts`. */
export function loopThrough(graph: Graph, group: string[]): string {
  const members = new Set(group);
  const start = group[0];
  const prev = new Map<string, string>();
  const queue = [start];
  const seen = new Set([start]);
  while (queue.length > 0) {
    const v = queue.shift()!;
    for (const w of graph.get(v) ?? []) {
      if (!members.has(w)) continue;
      if (w === start) {
        const path = [v];
        while (path[0] !== start) path.unshift(prev.get(path[0])!);
        return [...path, start].join(" → ");
      }
      if (!seen.has(w)) {
        seen.add(w);
        prev.set(w, v);
        queue.push(w);
      }
    }
  }
  return group.join(", ");
}
