/**
 * The side-by-side mechanism of `deno task bench --baseline <dir>`, proven with a stand-in package
 * (fixtures/standin: upstream-like, exit codes ignored, no `allowNonZeroExit`): the entry is found,
 * undeclared arguments are dropped, each package's verdicts land in its own column, and a tiny
 * benchmark produces numbers for both columns.
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
const STANDIN = fileURLToPath(new URL("./fixtures/standin", import.meta.url));
const scenario = (id: string) => SCENARIOS.find((s) => s.id === id)!;

Deno.test("compare: the stand-in's entry is found through its manifest, and by scanning without one", async () => {
  const pkg = await loadPackage(STANDIN);
  assert.equal(pkg.foundBy, "manifest");
  assert.equal(pkg.entry, join(STANDIN, "proxmox_qemu.ts"));
  assert.equal(pkg.label, "@bench/standin-proxmox@2026.06.12.1");
  assert.equal(pkg.model.type, "@stateless/proxmox/qemu");
  assert.deepEqual(await scanForModels(STANDIN), [
    join(STANDIN, "proxmox_qemu.ts"),
  ]);

  const bare = await Deno.makeTempDir({ prefix: "bench-bare-" });
  try {
    await Deno.mkdir(join(bare, "_lib"));
    await Deno.copyFile(
      join(STANDIN, "proxmox_qemu.ts"),
      join(bare, "qemu_model.ts"),
    );
    await Deno.writeTextFile(
      join(bare, "_lib", "helper.ts"),
      "export const model = {};\n",
    );
    await Deno.writeTextFile(
      join(bare, "qemu_model_test.ts"),
      "export const model = {};\n",
    );
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
  const standin = await loadPackage(STANDIN);
  const args = { vmid: 100, command: ["true"], allowNonZeroExit: true };
  const fitted = fitArgs(standin.model.methods.guestExec.arguments, args);
  assert.deepEqual(fitted.dropped, ["allowNonZeroExit"]);
  assert.deepEqual(fitted.args, { vmid: 100, command: ["true"] });
  assert.deepEqual(
    fitArgs(ours.model.methods.guestExec.arguments, args).dropped,
    [],
  );
  assert.deepEqual(
    fitArgs(standin.model.globalArguments, { name: "x", extra: 1 }).dropped,
    ["extra"],
  );
  assert.equal(
    cannotExpress(standin, scenario("exec-allow")),
    "no allowNonZeroExit argument",
  );
  assert.equal(cannotExpress(ours, scenario("exec-allow")), null);
  // Restating a default is not a need: the stand-in still expresses exit 42.
  assert.equal(cannotExpress(standin, scenario("exec-exit42")), null);
});

Deno.test("compare: each package's verdicts land in its own column, judged against the contract", async () => {
  const pkgs = [
    await loadPackage(join(ROOT, "js")),
    await loadPackage(STANDIN),
  ];
  const agent = await startGuestAgent();
  try {
    const results = await runScenarios(pkgs, agent, {
      only: ["exec-exit42", "exec-allow", "lookup-403"],
    });
    const [oursExit, standinExit] = results.get("exec-exit42")!;
    assert.ok(oursExit.kind === "ran" && standinExit.kind === "ran");
    assert.equal(oursExit.verdict, "failed");
    assert.equal(oursExit.asContract, true);
    assert.deepEqual(oursExit.written, ["vm-100-exec"]);
    assert.equal(standinExit.verdict, "succeeded");
    assert.equal(standinExit.asContract, false);
    assert.deepEqual(standinExit.dropped, ["allowNonZeroExit"]);
    assert.deepEqual(standinExit.written, ["vm-100-exec"]);

    const [oursAllow, standinAllow] = results.get("exec-allow")!;
    assert.ok(oursAllow.kind === "ran" && oursAllow.asContract);
    assert.deepEqual(standinAllow, {
      kind: "skipped",
      reason: "no allowNonZeroExit argument",
    });

    const [ours403, standin403] = results.get("lookup-403")!;
    assert.ok(ours403.kind === "ran" && ours403.asContract);
    assert.ok(standin403.kind === "ran" && !standin403.asContract);
    assert.equal(standin403.verdict, "succeeded");

    const table = scenarioTable(pkgs, results);
    assert.match(
      table,
      /\| guestExec exit 42 \| failed; vm-100-exec exitCode 42 \| ✓ failed · vm-100-exec \| ✗ succeeded · vm-100-exec — expected failed \(dropped allowNonZeroExit\) \|/,
    );
    assert.match(table, /skipped: no allowNonZeroExit argument/);
    assert.match(
      table,
      /\| \*\*total\*\* \| \| 3\/3 as the contract requires \| 0\/2 as the contract requires \|/,
    );
  } finally {
    await agent.stop();
  }
});

Deno.test("compare: a tiny benchmark produces numbers in both columns, with the ratio", async () => {
  const pkgs = [
    await loadPackage(join(ROOT, "js")),
    await loadPackage(STANDIN),
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
      rows.find((r) => r.benchmark === benchmark && r.measure === measure)!;

    const lookup = row("lookup (one run)", "requests");
    assert.ok(cellValue(lookup.cells[0])! >= 1, "this package counted");
    assert.equal(cellValue(lookup.cells[1]), 1, "stand-in: one status read");

    const sync = row("sync 10 guests @ 0 ms", "requests");
    assert.equal(cellValue(sync.cells[1]), 11, "stand-in: 1 + N requests");
    if ("sync" in pkgs[0].model.methods) {
      assert.ok(cellValue(sync.cells[0])! >= 1);
    } else {
      assert.deepEqual(sync.cells[0], { missing: "not implemented yet" });
    }

    const pkgBytes = row(
      "package (every file of the package folder)",
      "bytes",
    );
    assert.ok(cellValue(pkgBytes.cells[0])! > 0);
    assert.ok(cellValue(pkgBytes.cells[1])! > 0);

    const table = renderTable(pkgs.map((p) => p.label), rows);
    assert.match(table, /ratio \(baseline ÷ this\)/);
    assert.match(
      table,
      /\| lookup \(one run\) \| requests \| \d+ \| 1 \| [\d.]+× \|/,
    );
  } finally {
    await agent.stop();
  }
});
