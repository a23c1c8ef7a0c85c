/**
 * Every method's cost in the shipped module is measured and kept in README.md: `method_costs.json`
 * (written by tests/bench/method_costs.ts) weighs every method of both models, and the page shows
 * exactly those figures.
 */
import assert from "node:assert/strict";
import {
  COSTS_FILE,
  MARKERS,
  type MethodCosts,
  methodNames,
} from "../bench/method_costs.ts";

const costs = JSON.parse(await Deno.readTextFile(COSTS_FILE)) as MethodCosts;

/** The page's table rows as [method, bytes], whatever `deno fmt` made of their padding. */
async function shownRows(): Promise<[string, number][]> {
  const page = await Deno.readTextFile(
    new URL("../../README.md", import.meta.url),
  );
  const [open, close] = MARKERS;
  const table = page.slice(
    page.indexOf(open) + open.length,
    page.indexOf(close),
  );
  // Read across each row, as the bench writes it (several methods to a row). A figure may be
  // below zero: the module built without a method can come out larger.
  return [...table.matchAll(/`(\w+)`\s*\|\s*(-?[\d,]+)/g)].map((
    m,
  ) => [m[1], Number(m[2].replaceAll(",", ""))]);
}

Deno.test("method costs: every method of both models is weighed, and nothing else", () => {
  assert.deepEqual(Object.keys(costs.methods).sort(), methodNames());
});

Deno.test("method costs: README shows the measured figures, largest first", async () => {
  const expected = Object.entries(costs.methods).sort(([a, x], [b, y]) =>
    y - x || a.localeCompare(b)
  );
  assert.deepEqual(await shownRows(), expected);
});
