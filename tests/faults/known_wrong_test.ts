/**
 * The known-wrong list only excuses the cells it names: any other wrong cell still fails the
 * matrix, and a listed cell that behaves again must be removed from the list.
 */
import assert from "node:assert/strict";
import type { CellResult } from "./cell.ts";
import {
  KNOWN_WRONG_CELLS,
  staleKnownWrong,
  unlistedWrong,
} from "./known_wrong.ts";

const cell = (over: Partial<CellResult>): CellResult => ({
  row: "lxc start",
  endpoint: "POST status/start",
  column: "lost",
  expected: "fail",
  actual: "ok",
  problems: ["false success: succeeded but guest 320 is stopped"],
  ms: 1,
  ...over,
});

Deno.test("known wrong cells: an unlisted wrong cell is reported", () => {
  const wrong = cell({});
  assert.deepEqual(unlistedWrong([wrong, cell({ problems: [] })]), [wrong]);
});

Deno.test("known wrong cells: a listed wrong cell is tolerated, a fixed one is stale", () => {
  const listed = KNOWN_WRONG_CELLS.map((k) =>
    cell({ ...k, problems: ["message does not say what to check"] })
  );
  const rows = KNOWN_WRONG_CELLS.map((k) => k.row);
  assert.deepEqual(unlistedWrong(listed), []);
  assert.deepEqual(staleKnownWrong(rows, listed), []);
  for (const [i, k] of KNOWN_WRONG_CELLS.entries()) {
    const fixed = listed.map((c, j) => j === i ? { ...c, problems: [] } : c);
    assert.deepEqual(staleKnownWrong(rows, fixed), [k]);
  }
});
