/**
 * The shipped module has a size budget that cannot drift: `size_budget.json` holds it, this test
 * fails the day the module built by ./build.sh outgrows it, and docs/performance.md shows the
 * same figure. (swamp's push refuses any file over 1,000,000 bytes; the budget is the room left.)
 */
import assert from "node:assert/strict";
import budget from "../../size_budget.json" with { type: "json" };

const root = new URL("../../", import.meta.url);
const SHIPPED = new URL("js/_lib/generated/proxmox_core.wasm", root);
const figure = (n: number) => n.toLocaleString("en");

Deno.test("size budget: the shipped module weighs no more than size_budget.json allows", async () => {
  const bytes = (await Deno.stat(SHIPPED)).size;
  assert.ok(
    bytes <= budget.wasmBytes,
    `js/_lib/generated/proxmox_core.wasm is ${
      figure(bytes)
    } bytes, over its budget of ${
      figure(budget.wasmBytes)
    } (size_budget.json): shrink the core, or raise the budget in the same change and say why`,
  );
});

Deno.test("size budget: it stays under swamp's per-file push limit", () => {
  assert.ok(budget.wasmBytes < 1_000_000);
});

Deno.test("size budget: the performance page states the budget size_budget.json holds", async () => {
  const readme = await Deno.readTextFile(new URL("docs/performance.md", root));
  assert.match(
    readme,
    new RegExp(`size budget is \\*\\*${figure(budget.wasmBytes)} bytes\\*\\*`),
  );
});

Deno.test("size budget: the core formats no floating-point numbers (core's flt2dec weighs 13 KB; src/units.rs prints quantities)", async () => {
  // The build keeps function names in wasm-bindgen's output (before wasm-opt strips them).
  const named = await Deno.readFile(
    new URL("target/wasm-bindgen/proxmox_core_bg.wasm", root),
  );
  const names = new TextDecoder("latin1").decode(named);
  assert.ok(names.includes("proxmox_core"), "the names section is there");
  assert.ok(
    !names.includes("flt2dec"),
    "a float is formatted somewhere (a `{:.N}` or `{}` of an f64): print it with src/units.rs",
  );
});
