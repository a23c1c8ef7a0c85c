/**
 * The fault matrix as tests, qemu and lxc models: one test per method (its cells run a few at a
 * time, each on a fresh fixture; a wrong cell fails unless listed in known_wrong.ts), then
 * MATRIX.md must match what the cells showed. Regenerate it with
 * `deno run -A tests/faults/print_matrix.ts`.
 */
import assert from "node:assert/strict";
import type { CellResult } from "./cell.ts";
import { staleKnownWrong, unlistedWrong } from "./known_wrong.ts";
import {
  describeWrong,
  formatMarkdown,
  jobs,
  pool,
  recordFigure,
  render,
  rows,
  uncovered,
  WIDTH,
} from "./matrix.ts";

const ALL = rows();
const results = new Map<string, CellResult[]>();

Deno.test("fault matrix: every method of both models has a row", () => {
  assert.deepEqual(
    uncovered(),
    [],
    "add these methods to tests/faults/methods.ts",
  );
});

for (const row of ALL) {
  Deno.test({
    name: row.present
      ? `fault matrix: ${row.spec.row}`
      : `fault matrix: ${row.spec.row} (not present in model.methods)`,
    ignore: !row.present,
    fn: async () => {
      const cells = await pool(jobs(row), WIDTH);
      results.set(row.spec.row, cells);
      // A wrong cell fails the matrix unless it is a known wrong cell (known_wrong.ts).
      const wrong = unlistedWrong(cells);
      assert.equal(wrong.length, 0, describeWrong(wrong));
      assert.deepEqual(
        staleKnownWrong([row.spec.row], cells),
        [],
        "these KNOWN_WRONG_CELLS are no longer wrong: remove them from tests/faults/known_wrong.ts",
      );
    },
  });
}

Deno.test("fault matrix: MATRIX.md shows these verdicts", async () => {
  const ran = ALL.filter((r) => r.present).every((r) =>
    results.has(r.spec.row)
  );
  if (!ran) return; // a filtered run (--filter) cannot judge the whole table
  const all = ALL.flatMap((r) => results.get(r.spec.row) ?? []);
  // The record check's figure, for test.sh's summary (a quiet test run shows no output).
  const figure = Deno.env.get("FAULT_MATRIX_FIGURE");
  if (figure) await Deno.writeTextFile(figure, `${recordFigure(all)}\n`);
  const current = await Deno.readTextFile(
    new URL("./MATRIX.md", import.meta.url),
  ).catch(() => "");
  assert.equal(
    current,
    await formatMarkdown(render(ALL, all)),
    "tests/faults/MATRIX.md is stale: run `deno run -A tests/faults/print_matrix.ts`",
  );
});
