/**
 * The side by side of `deno task bench --baseline <dir>`, tested against the stand-in for the
 * upstream package in `standin/` (our own small model reproducing upstream's documented false
 * successes; `PROXMOX_BASELINE=<dir>` runs the same tests against an upstream package folder you
 * fetched yourself, never committed): the baseline's entry is found as swamp finds models,
 * undeclared arguments are dropped, one scenario list runs against both packages, and the
 * benchmarks fill both columns.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { startGuestAgent } from "../../simulator/qga.ts";
import { defaultOptions, runBenchmarks } from "./benchmarks.ts";
import {
  fitArgs,
  loadPackage,
  manifestModels,
  scanForModels,
} from "./package.ts";
import {
  cannotExpress,
  runScenarios,
  SCENARIOS,
  scenarioTable,
} from "./scenarios.ts";
import { cellValue, renderTable } from "./table.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
/** The baseline: the stand-in (`standin/`), or the folder `PROXMOX_BASELINE` names. */
const BASELINE = Deno.env.get("PROXMOX_BASELINE") ??
  fileURLToPath(new URL("./standin/", import.meta.url));
const scenario = (id: string) => SCENARIOS.find((s) => s.id === id)!;

Deno.test("compare: the baseline package's entry is found through its manifest", async () => {
  const pkg = await loadPackage(BASELINE);
  assert.equal(pkg.foundBy, "manifest");
  assert.equal(pkg.entry, join(pkg.dir, "proxmox_qemu.ts"));
  assert.match(pkg.label, /^@stateless\/proxmox@\d{4}\.\d{2}\.\d{2}\.\d+$/);
  assert.equal(pkg.model.type, "@stateless/proxmox/qemu");
});

Deno.test("compare: without a manifest the entry is found by scanning, skipping _-folders and tests", async () => {
  const bare = await Deno.makeTempDir({ prefix: "bench-bare-" });
  try {
    await Deno.mkdir(join(bare, "_lib"));
    const model =
      'export const model = { type: "@stateless/proxmox/qemu", version: "1", methods: {} };\n';
    await Deno.writeTextFile(join(bare, "qemu_model.ts"), model);
    await Deno.writeTextFile(join(bare, "_lib", "helper.ts"), model);
    await Deno.writeTextFile(join(bare, "qemu_model_test.ts"), model);
    assert.deepEqual(await scanForModels(bare), [join(bare, "qemu_model.ts")]);
    const found = await loadPackage(bare);
    assert.equal(found.foundBy, "scan");
    assert.equal(found.entry, join(bare, "qemu_model.ts"));
  } finally {
    await Deno.remove(bare, { recursive: true });
  }
});

Deno.test("compare: manifest models are read as a block list or a flow list", () => {
  assert.deepEqual(
    manifestModels('name: x\nmodels:\n  - a.ts\n  - "b.ts"\nlabels:\n  - y\n'),
    ["a.ts", "b.ts"],
  );
  assert.deepEqual(manifestModels("models: [a.ts, 'b.ts']\n"), [
    "a.ts",
    "b.ts",
  ]);
  assert.equal(manifestModels("name: x\n"), undefined);
});

Deno.test("compare: arguments the baseline does not declare are dropped; a scenario that needs one is skipped", async () => {
  const ours = await loadPackage(join(ROOT, "js"));
  const baseline = await loadPackage(BASELINE);
  const args = { vmid: 100, command: ["true"], allowNonZeroExit: true };
  const fitted = fitArgs(baseline.model.methods.guestExec.arguments, args);
  assert.deepEqual(fitted.dropped, ["allowNonZeroExit"]);
  assert.deepEqual(fitted.args, { vmid: 100, command: ["true"] });
  assert.deepEqual(
    fitArgs(ours.model.methods.guestExec.arguments, args).dropped,
    [],
  );
  assert.equal(
    cannotExpress(baseline, scenario("exec-allow")),
    "no allowNonZeroExit argument",
  );
  assert.equal(cannotExpress(ours, scenario("exec-allow")), null);
  // Restating a default is not a need: the baseline still expresses exit 42.
  assert.equal(cannotExpress(baseline, scenario("exec-exit42")), null);
});

Deno.test("compare: over one scenario list this package meets the contract everywhere, and its verdicts differ from the baseline's exactly where the baseline reports a false success", async () => {
  const pkgs = [
    await loadPackage(join(ROOT, "js")),
    await loadPackage(BASELINE),
  ];
  const agent = await startGuestAgent();
  try {
    const results = await runScenarios(pkgs, agent);
    const differ: string[] = [];
    const falseSuccesses: string[] = [];
    for (const s of SCENARIOS) {
      const [ours, theirs] = results.get(s.id)!;
      assert.ok(ours.kind === "ran", `${s.id}: this package ran it`);
      assert.ok(ours.asContract, `${s.id}: ${ours.note}`);
      if (theirs.kind !== "ran") continue;
      if (theirs.verdict !== ours.verdict) differ.push(s.id);
      if (s.expects === "failed" && theirs.verdict === "succeeded") {
        falseSuccesses.push(s.id);
      }
    }
    assert.deepEqual(differ, falseSuccesses);
    // What the upstream report (../shared/docs/upstream-report.md) describes, and the stand-in
    // reproduces: an exit code and a signal ignored, a state that could not be read recorded as a
    // success, an HA start that never happened reported done.
    assert.deepEqual(falseSuccesses, [
      "exec-exit42",
      "exec-signal",
      "lookup-403",
      "lookup-hidden",
      "start-ha-queued",
    ]);
    const table = scenarioTable(pkgs, results);
    assert.match(
      table,
      /\| guestExec exit 42 \| failed; vm-100-exec exitCode 42 \| ✓ failed · vm-100-exec \| ✗ succeeded · vm-100-exec — expected failed \(dropped allowNonZeroExit\) \|/,
    );
    assert.match(table, /skipped: no allowNonZeroExit argument/);
  } finally {
    await agent.stop();
  }
});

Deno.test("compare: a tiny benchmark produces numbers in both columns, with the ratio", async () => {
  const pkgs = [
    await loadPackage(join(ROOT, "js")),
    await loadPackage(BASELINE),
  ];
  const agent = await startGuestAgent();
  try {
    const rows = await runBenchmarks(pkgs, agent, {
      ...defaultOptions(ROOT),
      reps: 1,
      groups: ["sync", "requests", "size"],
      syncSizes: [10],
      latenciesMs: [0],
      methods: ["lookup"],
    });
    const row = (benchmark: string, measure: string) =>
      rows.find((r) =>
        r.benchmark === benchmark && r.measure.startsWith(measure)
      )!;
    const lookup = row("lookup (one run)", "requests");
    assert.equal(cellValue(lookup.cells[0]), 2, "status and config");
    assert.equal(cellValue(lookup.cells[1]), 1, "baseline: one status read");
    const sync = row("sync 10 guests @ 0 ms", "requests");
    assert.ok(cellValue(sync.cells[0])! >= 1 && cellValue(sync.cells[1])! >= 1);
    const tarGz = row("package (every file of the package folder)", "tar.gz");
    assert.ok(cellValue(tarGz.cells[0])! > 0 && cellValue(tarGz.cells[1])! > 0);
    const table = renderTable(pkgs.map((p) => p.label), rows);
    assert.match(table, /ratio \(baseline ÷ this\)/);
    assert.match(
      table,
      /\| lookup \(one run\) \| requests \(besides swamp's GET \/version check\) \| 2 \| 1 \| 0\.50× \| ≤ 2 \| ✓ met \|/,
    );
  } finally {
    await agent.stop();
  }
});
