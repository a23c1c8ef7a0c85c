/**
 * Runs the whole fault matrix and writes tests/faults/MATRIX.md.
 *
 * Usage: `deno run -A tests/faults/print_matrix.ts [--check] [--messages=<file>]` — `--check`
 * only compares; `--messages` also writes every cell's verdict and message to a file.
 *
 * @module
 */
import {
  describeWrong,
  formatMarkdown,
  jobs,
  pool,
  recordFigure,
  render,
  rows,
  WIDTH,
} from "./matrix.ts";
import { staleKnownWrong, unlistedWrong } from "./known_wrong.ts";

// The harness captures `console.*` while a method runs, as swamp does; with cells running
// concurrently a capture can outlive its run, so keep the real one.
const print = console.log.bind(console);

const started = performance.now();
const all = rows();
const results = [];
for (const row of all) {
  if (!row.present) {
    print(`${row.spec.row}: not present in model.methods`);
    continue;
  }
  const t = performance.now();
  const cells = await pool(jobs(row), WIDTH);
  results.push(...cells);
  const wrong = cells.filter((c) => c.problems.length > 0).length;
  print(
    `${row.spec.row}: ${cells.length} cells, ${wrong} wrong (${
      ((performance.now() - t) / 1000).toFixed(1)
    } s)`,
  );
}
const text = await formatMarkdown(render(all, results));
const dump = Deno.args.find((a) => a.startsWith("--messages="));
if (dump) {
  // Every cell's verdict and message, for reviewing the wording.
  const lines = results.map((c) =>
    `${c.row} × ${c.endpoint ?? "scenario"} × ${c.column} → ${c.actual}\n  ${
      c.message ?? "(succeeded)"
    }`
  );
  await Deno.writeTextFile(dump.slice("--messages=".length), lines.join("\n"));
}
const target = new URL("./MATRIX.md", import.meta.url);
const seconds = ((performance.now() - started) / 1000).toFixed(1);
if (Deno.args.includes("--check")) {
  const current = await Deno.readTextFile(target).catch(() => "");
  print(current === text ? "MATRIX.md is current" : "MATRIX.md is stale");
} else {
  await Deno.writeTextFile(target, text);
  print(`wrote ${target.pathname}`);
}
print(`${results.length} cells in ${seconds} s`);
print(recordFigure(results));
const listed = results.filter((c) => c.problems.length > 0).length -
  unlistedWrong(results).length;
if (listed > 0) print(`${listed} known wrong cells (known_wrong.ts)`);
const wrong = describeWrong(unlistedWrong(results));
if (wrong) {
  print(wrong);
  Deno.exitCode = 1;
}
const stale = staleKnownWrong(all.map((r) => r.spec.row), results);
if (stale.length > 0) {
  print(
    `known wrong cells no longer wrong (remove them): ${JSON.stringify(stale)}`,
  );
  Deno.exitCode = 1;
}
