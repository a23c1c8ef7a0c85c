/**
 * `deno task bench [--baseline <package dir>]`: benchmarks of this package (js/) through the
 * swamp-faithful harness against the PVE simulator and a real qemu-ga, printed as one markdown table
 * of medians: this package's column alone. With `--baseline <dir>` (e.g. an upstream package folder
 * you fetched yourself, never committed), the same benchmarks and the end-to-end scenario list also
 * run against the baseline package in the same run, side by side, with the ratio; targets relative
 * to the baseline are judged against its column. There is no default baseline.
 *
 * Options: `--reps N` (default 5), `--cold-reps N` (default 9), `--only sync,exec,task,requests,cold,size,marginal,archive,fleet`,
 * `--scenarios` (print the scenario table without a baseline too), `--sync-sizes 10,100,1000`.
 * Progress goes to stderr, the report to stdout. Not part of the pass/fail tests.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { startGuestAgent } from "../../simulator/qga.ts";
import {
  type BenchOptions,
  defaultOptions,
  type Group,
  GROUPS,
  runBenchmarks,
} from "./benchmarks.ts";
import { machineInfo } from "./machine.ts";
import { loadPackage, type Package } from "./package.ts";
import { runScenarios, scenarioTable } from "./scenarios.ts";
import { renderTable } from "./table.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

const USAGE =
  `usage: deno task bench [--baseline <package dir>] [--reps N] [--cold-reps N]
                       [--only ${
    GROUPS.join(",")
  }] [--sync-sizes 10,100,1000] [--scenarios]`;

function positiveInt(name: string, value: string | undefined, dflt: number) {
  if (value === undefined) return dflt;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 1000) {
    console.error(`--${name} must be an integer from 1 to 1000\n${USAGE}`);
    Deno.exit(2);
  }
  return n;
}

const { values } = parseArgs({
  args: Deno.args,
  options: {
    baseline: { type: "string" },
    reps: { type: "string" },
    "cold-reps": { type: "string" },
    only: { type: "string" },
    "sync-sizes": { type: "string" },
    scenarios: { type: "boolean", default: false },
    help: { type: "boolean", short: "h", default: false },
  },
});
if (values.help) {
  console.log(USAGE);
  Deno.exit(0);
}

const opts: BenchOptions = {
  ...defaultOptions(ROOT),
  progress: (line) => console.error(`… ${line}`),
};
opts.reps = positiveInt("reps", values.reps, opts.reps);
opts.coldReps = positiveInt("cold-reps", values["cold-reps"], opts.coldReps);
if (values.only) {
  const groups = values.only.split(",").map((g) => g.trim());
  const unknown = groups.filter((g) => !GROUPS.includes(g as Group));
  if (unknown.length) {
    console.error(`unknown group(s) ${unknown.join(", ")}\n${USAGE}`);
    Deno.exit(2);
  }
  opts.groups = groups as Group[];
}
if (values["sync-sizes"]) {
  opts.syncSizes = values["sync-sizes"].split(",").map((s) =>
    positiveInt("sync-sizes", s.trim(), 10)
  );
}

let pkgs: Package[];
try {
  pkgs = [await loadPackage(`${ROOT}js`)];
  if (values.baseline) pkgs.push(await loadPackage(values.baseline));
} catch (error) {
  console.error(
    `could not load a package: ${(error as Error).message}\n` +
      "(is js/_lib/generated/ built? run ./build.sh)",
  );
  Deno.exit(1);
}
// The manifest's name and version (what swamp would push), not the model's own version field.
pkgs[0].label = `this package (${pkgs[0].label})`;

const machine = await machineInfo();
const started = new Date();
const agent = await startGuestAgent();
let report: string[];
try {
  const rows = await runBenchmarks(pkgs, agent, opts);
  report = [
    "## Benchmarks",
    "",
    `- command: \`deno task bench${
      Deno.args.length ? " " + Deno.args.join(" ") : ""
    }\` (= \`deno run --allow-all tests/bench/main.ts\`)`,
    `- date: ${started.toISOString()}`,
    `- machine: ${machine}`,
    `- medians of ${opts.reps} runs (cold start: ${opts.coldReps} processes after one warm-up); ` +
    "PVE simulator on 127.0.0.1, real qemu-ga; every column measured in this run",
    ...pkgs.map((p, i) =>
      `- ${
        i === 0 ? "this package" : "baseline"
      }: ${p.label}: ${p.entry} (found by ${p.foundBy})`
    ),
    "",
    renderTable(pkgs.map((p) => p.label), rows),
  ];
  if (values.baseline || values.scenarios) {
    console.error("… scenarios");
    const results = await runScenarios(pkgs, agent);
    report.push(
      "",
      "## Scenarios (verdict · records written; ✓ = as the contract requires)",
      "",
      scenarioTable(pkgs, results),
    );
  }
} finally {
  await agent.stop();
}
console.log(report.join("\n"));
