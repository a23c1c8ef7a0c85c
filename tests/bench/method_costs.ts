/**
 * What each method costs in the shipped module, measured: the core built without it
 * (`PROXMOX_CORE_OMIT`, see marginal.ts) against the full build, for every method of both models.
 * `deno run -A tests/bench/method_costs.ts [--jobs N] [method ...]` builds once per method (about
 * a minute each; named methods alone when given, the others kept; `--jobs 2` runs two builds at a
 * time, each in its own cargo folder, for a machine with the cores to spare), writes
 * `method_costs.json` and README.md's table between its markers; tests/docs/method_costs_test.ts holds
 * the two equal and the list complete.
 *
 * @module
 */
import { model as qemu } from "../../js/proxmox_qemu.ts";
import { model as lxc } from "../../js/proxmox_lxc.ts";
import { parseArgs } from "node:util";
import { moduleBytes } from "./marginal.ts";

const ROOT = new URL("../../", import.meta.url);
export const COSTS_FILE = new URL("method_costs.json", ROOT);

/** The measurement: the full module's bytes, and what leaving each method out saves. */
export interface MethodCosts {
  measuredOn: string;
  moduleBytes: number;
  methods: Record<string, number>;
}

/** Every method name of both models, once, sorted (a name both models use is weighed once: leaving it out leaves it out of both). */
export function methodNames(): string[] {
  return [
    ...new Set([...Object.keys(qemu.methods), ...Object.keys(lxc.methods)]),
  ].sort();
}

/** How many methods share a row of README's table (it keeps the front page short). */
const PER_ROW = 4;

/** README's table of `costs`: largest first, read across, {@link PER_ROW} methods to a row. */
export function costTable(costs: MethodCosts): string {
  const cells = Object.entries(costs.methods)
    .sort(([a, x], [b, y]) => y - x || a.localeCompare(b))
    .map(([name, bytes]) => `\`${name}\` | ${bytes.toLocaleString("en")}`);
  const rows = [];
  for (let i = 0; i < cells.length; i += PER_ROW) {
    const row = cells.slice(i, i + PER_ROW);
    while (row.length < PER_ROW) row.push(" | ");
    rows.push(`| ${row.join(" | ")} |`);
  }
  const head = Array(PER_ROW).fill("method | bytes it adds").join(" | ");
  const rule = Array(PER_ROW).fill("--- | ---:").join(" | ");
  return [`| ${head} |`, `| ${rule} |`, ...rows].join("\n");
}

/** The markers around the table in README.md. */
export const MARKERS = [
  "<!-- method costs: tests/bench/method_costs.ts -->",
  "<!-- /method costs -->",
] as const;

if (import.meta.main) {
  const root = ROOT.pathname;
  const { values, positionals } = parseArgs({
    args: Deno.args,
    options: { jobs: { type: "string", default: "1" } },
    allowPositionals: true,
  });
  const jobs = Number(values.jobs);
  if (!Number.isInteger(jobs) || jobs < 1) {
    throw new Error(`--jobs must be a whole number ≥ 1, not ${values.jobs}`);
  }
  const full = await moduleBytes(root, "");
  // Names on the command line weigh only those, keeping the other figures of method_costs.json.
  const only = positionals.length > 0;
  const methods: Record<string, number> = only
    ? (JSON.parse(await Deno.readTextFile(COSTS_FILE)) as MethodCosts).methods
    : {};
  const queue = only ? [...positionals] : methodNames();
  for (const name of queue) {
    if (!methodNames().includes(name)) throw new Error(`no method ${name}`);
  }
  // Each worker takes the next name and builds in its own cargo folder.
  const worker = async (cargoDir: string) => {
    for (let name = queue.shift(); name; name = queue.shift()) {
      methods[name] = full - await moduleBytes(root, name, cargoDir);
      console.error(`${name}: ${methods[name]} bytes`);
    }
  };
  await Promise.all(
    Array.from(
      { length: jobs },
      (_, i) => worker(i === 0 ? "size-weigh" : `size-weigh-${i + 1}`),
    ),
  );
  const costs: MethodCosts = {
    measuredOn: new Date().toISOString().slice(0, 10),
    moduleBytes: full,
    // In name order, whichever build finished first.
    methods: Object.fromEntries(
      Object.entries(methods).sort(([a], [b]) => a.localeCompare(b)),
    ),
  };
  await Deno.writeTextFile(COSTS_FILE, JSON.stringify(costs, null, 2) + "\n");
  const readme = new URL("README.md", ROOT);
  const text = await Deno.readTextFile(readme);
  const [open, close] = MARKERS;
  const at = text.indexOf(open);
  const end = text.indexOf(close);
  if (at < 0 || end < at) {
    throw new Error("README.md lacks the method-cost markers");
  }
  await Deno.writeTextFile(
    readme,
    `${text.slice(0, at + open.length)}\n\n${costTable(costs)}\n\n${
      text.slice(end)
    }`,
  );
  // The table as written is what `deno fmt` would leave (the gate checks README too).
  const fmt = new Deno.Command(Deno.execPath(), {
    args: ["fmt", "--quiet", readme.pathname],
  });
  if (!(await fmt.output()).success) {
    throw new Error("deno fmt could not format README.md's new table");
  }
  console.log(costTable(costs));
}
