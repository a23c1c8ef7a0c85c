/**
 * The house has no back doors: no file imports, directly or through others, a file that imports it
 * back (src/, js/, simulator/, harness/), and the core's shared floor (`src/guest/`) never imports
 * a method (`src/methods/`). How the graphs are read: imports.ts.
 */
import assert from "node:assert/strict";
import {
  circles,
  expandUse,
  type Graph,
  loopThrough,
  rustCode,
  rustGraph,
  rustPaths,
  tsGraph,
  tsImports,
} from "./imports.ts";

function assertNoCircle(name: string, graph: Graph) {
  assert.ok(graph.size > 0, `${name}: no files were read`);
  const found = circles(graph).map((group) => loopThrough(graph, group));
  assert.deepEqual(
    found,
    [],
    `${name} has import circles:\n${found.join("\n")}`,
  );
}

Deno.test("src/ (the Rust core) has no import circle between its modules", () => {
  assertNoCircle("src/", rustGraph());
});

for (const dir of ["js", "simulator", "harness"]) {
  Deno.test(`${dir}/ has no import circle`, () => {
    assertNoCircle(`${dir}/`, tsGraph(dir));
  });
}

Deno.test("src/guest/ never imports src/methods/", () => {
  const upward = [...rustGraph()].flatMap(([file, targets]) =>
    file.startsWith("src/guest/")
      ? [...targets].filter((t) => t.startsWith("src/methods/")).map((t) =>
        `${file} → ${t}`
      )
      : []
  );
  assert.deepEqual(upward, []);
});

// The reader itself: a check that reads nothing would pass on anything.

Deno.test("a circle of three files is found, a chain is not", () => {
  const graph: Graph = new Map([
    ["a", new Set(["b"])],
    ["b", new Set(["c"])],
    ["c", new Set(["a"])],
    ["d", new Set(["a"])],
  ]);
  assert.deepEqual(circles(graph), [["a", "b", "c"]]);
  assert.equal(loopThrough(graph, ["a", "b", "c"]), "a → b → c → a");
  graph.set("c", new Set());
  assert.deepEqual(circles(graph), []);
});

Deno.test("type-only and re-exporting TypeScript imports count as imports", () => {
  const text = [
    'import type { A } from "./a.ts";',
    'import { b,\n  c } from "../b.ts";',
    'export { d } from "./d.ts";',
    'export type { E } from "./e.ts";',
    'import "./side.ts";',
    'import { z } from "npm:zod@4";',
  ].join("\n");
  assert.deepEqual(tsImports("simulator/x.ts", text).sort(), [
    "b.ts",
    "simulator/a.ts",
    "simulator/d.ts",
    "simulator/e.ts",
    "simulator/side.ts",
  ]);
});

Deno.test("Rust use trees, super:: and inline crate:: paths resolve to modules", () => {
  assert.deepEqual(
    expandUse("crate::pve::{endpoints::{self, GuestKind}, flex}"),
    [
      "crate::pve::endpoints",
      "crate::pve::endpoints::GuestKind",
      "crate::pve::flex",
    ],
  );
  const code = rustCode([
    "use super::settle::read_status;",
    "// use crate::methods::lookup::x;",
    "fn f() { crate::pve::endpoints::guest_config(); }",
    "#[cfg(test)]",
    "mod tests {",
    "    use crate::testing::ScriptedHost;",
    "}",
  ].join("\n"));
  assert.deepEqual(rustPaths("src/guest/evidence.rs", code), [
    ["guest", "settle", "read_status"],
    ["pve", "endpoints", "guest_config"],
  ]);
});
