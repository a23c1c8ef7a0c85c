/**
 * The fault matrix: every method of the qemu and lxc models × every fault that can reach it, as
 * cells to run, and the MATRIX.md tables of their verdicts.
 *
 * @module
 */
import { model } from "../../js/proxmox_qemu.ts";
import { model as lxcModel } from "../../js/proxmox_lxc.ts";
import {
  answered,
  type CellResult,
  execRecord,
  faultCell,
  FILE_SCENARIOS,
  LEFT_LOCK_SCENARIOS,
  type LeftLockScenario,
  LOCK_CLEARS_MS,
  LOCK_SCENARIOS,
  type LockScenario,
  SCENARIO_IDS,
  SCENARIO_LEGEND,
  scenarioCell,
  type ScenarioId,
  type ScenarioPlan,
} from "./cell.ts";
import { FAULT_IDS, FAULTS } from "./faults.ts";
import {
  EXPECTED_LXC_METHODS,
  lxcFleet,
  lxcMethodSpecs,
} from "./lxc_methods.ts";
import { KNOWN_WRONG_CELLS } from "./known_wrong.ts";
import {
  EXPECTED_METHODS,
  fleet,
  lastWrite,
  type MethodSpec,
  methodSpecs,
  type Verdict,
} from "./methods.ts";

/** One row of the matrix: a method driven one way, on pve1 (and its pve2 twin for node faults). */
export interface Row {
  spec: MethodSpec;
  /** The same method on pve2's guests (node scenarios). */
  twin?: MethodSpec;
  /** Whether `model.methods` has the method; a missing one is reported, never run. */
  present: boolean;
}

/** The rows, in order: the qemu model's, then the lxc model's. */
export function rows(): Row[] {
  return [
    ...modelRows(
      methodSpecs("pve1"),
      methodSpecs("pve2"),
      model.methods as Record<string, unknown>,
    ),
    ...modelRows(
      lxcMethodSpecs("pve1"),
      lxcMethodSpecs("pve2"),
      lxcModel.methods as Record<string, unknown>,
    ),
  ];
}

function modelRows(
  pve1: MethodSpec[],
  pve2: MethodSpec[],
  methods: Record<string, unknown>,
): Row[] {
  const out: Row[] = [];
  for (const spec of pve1) {
    // A method driven two ways (suspend, suspend (toDisk)) has a twin per way.
    const twin = pve2.find((t) => t.row === spec.row) ??
      pve2.find((t) => t.name === spec.name);
    out.push({ spec, twin, present: spec.name in methods });
    // sync's twin is a different way of driving it (scope cluster): a row of its own too.
    if (twin && twin.row !== spec.row) {
      out.push({ spec: twin, twin, present: spec.name in methods });
    }
  }
  return out;
}

/** Methods of the models the matrix has no row for (each must get one); lxc ones as `lxc <name>`. */
export function uncovered(): string[] {
  const known = new Set(EXPECTED_METHODS);
  const knownLxc = new Set(EXPECTED_LXC_METHODS);
  return [
    ...Object.keys(model.methods).filter((m) => !known.has(m)),
    ...Object.keys(lxcModel.methods).filter((m) => !knownLxc.has(m)).map((
      m,
    ) => `lxc ${m}`),
  ];
}

/**
 * The guest a row's lock scenarios lock: its `lockedVmid` (a clone's template), else the `vmid` of
 * its arguments, when the fixture holds it (a create names a VMID yet to exist: its lock case is a
 * re-run, tests/e2e/long_tail_test.ts).
 */
function lockedGuest(spec: MethodSpec): number | undefined {
  const vmid = spec.lockedVmid ?? (spec.argsFor?.() ?? spec.args).vmid;
  const guests = spec.model === "lxc" ? lxcFleet() : fleet();
  return guests.some((g) => g.vmid === vmid) ? vmid as number : undefined;
}

/** What a failure over the lock must quote: PVE's `VM is locked (backup)`, or the core's wait. */
const LOCK_NAMED = /locked \(backup\)|locked: backup|lock backup/;

/**
 * A lock scenario: the guest carries `lock: backup` from the start (as its config does while vzdump
 * runs), cleared after {@link LOCK_CLEARS_MS} or never. A method that acts on the guest waits the
 * lock out within its budget and then acts (cleared), or fails naming it (held); it never succeeds
 * over it. A lock-free one (a read, a command inside the guest) succeeds and records the lock.
 */
function lockPlan(
  spec: MethodSpec,
  vmid: number,
  id: LockScenario,
): ScenarioPlan {
  const free = spec.lockFree !== undefined;
  const prefix = spec.model === "lxc" ? "ct" : "vm";
  return {
    expected: free || id === "lock cleared" ? "ok" : "fail",
    happened: LOCK_NAMED,
    arm: (env) => env.sim.setGuest(vmid, { lock: "backup" }),
    during: id === "lock held" ? undefined : async (env) => {
      await new Promise((resolve) => setTimeout(resolve, LOCK_CLEARS_MS));
      env.sim.setGuest(vmid, { lock: undefined });
    },
    check: (_env, r) => {
      const rec = lastWrite(r, `${prefix}-${vmid}`);
      if (r.status !== "succeeded" || rec?.present !== true) return [];
      if (!free && rec.lock === "backup") {
        return ["succeeded, but its record shows the guest still locked"];
      }
      if (free && id === "lock held" && rec.lock !== "backup") {
        return [`read a locked guest, but its record says lock ${rec.lock}`];
      }
      return [];
    },
  };
}

/**
 * A lock left as the task ends OK (the simulator's `leaveLock`), on the guest of the row's `vmid`
 * argument: cleared after {@link LOCK_CLEARS_MS} (the method waits it out and succeeds, its record
 * free of it) or never (it fails naming it). A lock is not a result.
 */
function leftLockPlan(
  spec: MethodSpec,
  lock: string,
  id: LeftLockScenario,
): ScenarioPlan {
  const vmid = (spec.argsFor?.() ?? spec.args).vmid as number;
  const prefix = spec.model === "lxc" ? "ct" : "vm";
  const clears = id === "OK+lock";
  return {
    expected: clears ? "ok" : "fail",
    happened: new RegExp(`still locked: ${lock}`),
    arm: (env) =>
      env.sim.nextTask({
        leaveLock: {
          lock,
          vmid,
          clearAfterMs: clears ? LOCK_CLEARS_MS : undefined,
        },
      }),
    check: (_env, r) => {
      const rec = lastWrite(r, `${prefix}-${vmid}`);
      if (r.status === "succeeded" && rec?.lock !== undefined) {
        return [`succeeded, but its record shows the guest locked ${rec.lock}`];
      }
      if (r.status === "failed" && rec?.lock !== lock) {
        return [
          `failed over lock ${lock}, but its record shows lock ${rec?.lock}`,
        ];
      }
      return [];
    },
  };
}

/** One cell to run, with a label for diagnostics. */
export interface Job {
  label: string;
  run(): Promise<CellResult>;
}

function scenarioPlans(
  row: Row,
): [ScenarioId, ScenarioPlan, MethodSpec, Record<string, unknown>?][] {
  const { spec, twin } = row;
  const plans: [
    ScenarioId,
    ScenarioPlan,
    MethodSpec,
    Record<string, unknown>?,
  ][] = [
    ["none", { expected: "ok", happened: /$^/ }, spec],
  ];
  if (spec.task) {
    plans.push(["task✗", {
      expected: "fail",
      happened: /failed: unexpected status/,
      arm: (env) => env.sim.nextTask({ exitstatus: "unexpected status" }),
    }, spec]);
  }
  if (spec.noEffect) {
    plans.push(["no effect", {
      expected: "fail",
      happened: spec.noEffect,
      arm: (env) => env.sim.nextTask({ noEffect: true }),
    }, spec]);
  }
  const offlineTwin = twin?.row === spec.row ? twin : undefined;
  if (offlineTwin) {
    const offline = (message: string, times: number) => ({
      arm: (env: Parameters<NonNullable<ScenarioPlan["arm"]>>[0]) =>
        env.sim.fault({
          pathRegex: "^/api2/json/nodes/pve2/",
          kind: "status",
          status: 595,
          message,
          times,
        }),
    });
    for (
      const [id, message] of [
        ["node↓", "no route to host"],
        ["node↓refused", "Connection refused"],
      ] as const
    ) {
      plans.push([id, {
        expected: "fail",
        happened: new RegExp(`${message} \\(HTTP 595\\)`),
        ...offline(message, Infinity),
      }, offlineTwin]);
    }
    const first = offlineTwin.endpoints.find((e) =>
      /^\^\/api2\/json\/nodes\/pve2\//.test(e.path)
    );
    plans.push(["node blip", {
      expected: first?.kind === "mutation" ? "fail" : "ok-retried",
      happened: /no route to host \(HTTP 595\)/,
      ...offline("no route to host", 1),
    }, offlineTwin]);
  }
  // The agent scenarios are the VM agent's; a container has none (its exec is pct over ssh).
  if (spec.row === "guestExec" && spec.model !== "lxc") {
    const vmid = 100;
    const started = (env: Parameters<typeof answered>[0]) =>
      answered(env, "POST", new RegExp(`/qemu/${vmid}/agent/exec$`));
    const lost = (_env: unknown, r: Parameters<typeof execRecord>[0]) => {
      const rec = execRecord(r, vmid);
      return rec?.outcome === "resultLost" && typeof rec.pid === "number"
        ? []
        : [
          `exec record should be resultLost with the pid: ${
            JSON.stringify(rec)
          }`,
        ];
    };
    const sleep = { vmid, command: ["sleep", "5"], timeoutSec: 10 };
    plans.push([
      "agent✗",
      {
        expected: "fail",
        // The status is asked right after the start, so the kill may land on a status call in
        // flight (its QMP call times out) or between two (the next guest-ping finds no agent).
        happened:
          /started but its result was lost: (QEMU guest agent is not running|VM 100 qmp command 'guest-exec-status' failed - got timeout)/,
        during: async (env) => {
          await started(env);
          await env.agent.kill();
        },
        check: lost,
      },
      spec,
      sleep,
    ]);
    plans.push([
      "pid✗",
      {
        expected: "fail",
        happened:
          /Agent error: Invalid parameter 'pid'.*no longer knows the process/,
        during: async (env) => {
          await started(env);
          env.sim.setGuest(vmid, { status: "stopped" });
          env.sim.setGuest(vmid, { status: "running" });
        },
        check: lost,
      },
      spec,
      sleep,
    ]);
  }
  for (const id of FILE_SCENARIOS) {
    const own = spec.fileScenarios?.[id];
    if (own) plans.push([id, own.plan, spec, own.args]);
  }
  const locked = lockedGuest(spec);
  if (locked !== undefined) {
    for (const id of LOCK_SCENARIOS) {
      plans.push([id, lockPlan(spec, locked, id), spec]);
    }
  }
  if (spec.leftLock && spec.task) {
    for (const id of LEFT_LOCK_SCENARIOS) {
      plans.push([id, leftLockPlan(spec, spec.leftLock, id), spec]);
    }
  }
  return plans;
}

/** Every cell of a row, as jobs. */
export function jobs(row: Row): Job[] {
  const out: Job[] = [];
  for (const endpoint of row.spec.endpoints) {
    for (const id of FAULT_IDS) {
      if (
        FAULTS[id].applies(endpoint) &&
        (row.spec.faults ?? FAULT_IDS).includes(id)
      ) {
        out.push({
          label: `${row.spec.row} × ${endpoint.id} × ${id}`,
          run: () => faultCell(row.spec, endpoint, id),
        });
      }
    }
  }
  for (const [id, plan, spec, args] of scenarioPlans(row)) {
    out.push({
      label: `${row.spec.row} × ${id}`,
      run: () =>
        scenarioCell(spec, id, plan, args).then((c) => ({
          ...c,
          row: row.spec.row,
        })),
    });
  }
  return out;
}

/** A cell that takes longer is reported wrong instead of stalling the suite (cells take < 6 s). */
export const CELL_LIMIT_MS = 60_000;

/** Runs a job; one that outlives {@link CELL_LIMIT_MS} becomes a wrong cell naming itself. */
async function bounded(job: Job): Promise<CellResult> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const stalled = new Promise<CellResult>((resolve) => {
    timer = setTimeout(() =>
      resolve({
        row: job.label,
        column: "none",
        expected: "ok",
        actual: "fail",
        problems: [`${job.label} did not finish within ${CELL_LIMIT_MS} ms`],
        ms: CELL_LIMIT_MS,
      }), CELL_LIMIT_MS);
  });
  try {
    return await Promise.race([job.run(), stalled]);
  } finally {
    clearTimeout(timer);
  }
}

/** Runs jobs `width` at a time, results in job order. */
export async function pool(all: Job[], width: number): Promise<CellResult[]> {
  const results: CellResult[] = new Array(all.length);
  let next = 0;
  const worker = async () => {
    while (next < all.length) {
      const at = next++;
      results[at] = await bounded(all[at]);
    }
  };
  await Promise.all(
    Array.from({ length: Math.min(width, all.length) }, worker),
  );
  return results;
}

/** How many cells run at once: most of a cell's time is spent waiting (tasks, timeouts). */
export const WIDTH = 6;

// ── rendering ──────────────────────────────────────────────────────────────

const SYMBOL: Record<Verdict, string> = {
  fail: "✗",
  ok: "✓",
  "ok-retried": "✓↻",
  "ok-flagged": "✓⚑",
};

function symbol(c: CellResult): string {
  return c.problems.length > 0 ? `‼${SYMBOL[c.actual]}` : SYMBOL[c.actual];
}

function counted(cells: CellResult[]): string {
  if (cells.length === 0) return "—";
  const counts = new Map<string, number>();
  for (const c of cells) {
    counts.set(symbol(c), (counts.get(symbol(c)) ?? 0) + 1);
  }
  return [...counts].map(([s, n]) => (cells.length === 1 ? s : `${s}${n}`))
    .join(" ");
}

const COLUMNS = [
  "none",
  ...FAULT_IDS,
  ...SCENARIO_IDS.filter((s) => s !== "none"),
];

/** The lxc model's columns: no guest agent, so no agent scenarios. */
const LXC_COLUMNS = COLUMNS.filter((c) => c !== "agent✗" && c !== "pid✗");

function table(header: string[], body: string[][]): string {
  const line = (cells: string[]) => `| ${cells.join(" | ")} |`;
  return [
    line(header),
    line(header.map(() => "---")),
    ...body.map(line),
  ].join("\n");
}

/** The summary table of some rows: method × fault → verdicts. */
function summary(
  all: Row[],
  results: CellResult[],
  columns: string[],
  prefix = "",
): string {
  const header = ["method", ...columns];
  const body: string[][] = [];
  for (const row of all) {
    const name = row.spec.row.slice(prefix.length);
    if (!row.present) {
      body.push([`${name} (not present)`, ...columns.map(() => "—")]);
      continue;
    }
    body.push([
      name,
      ...columns.map((col) =>
        counted(
          results.filter((c) => c.row === row.spec.row && c.column === col),
        )
      ),
    ]);
  }
  return table(header, body);
}

function tally(results: CellResult[]): string {
  const wrong = results.filter((c) => c.problems.length > 0).length;
  const fails = results.filter((c) => c.actual === "fail").length;
  return `${results.length} cells: ${fails} fail as they must, ${
    results.length - fails
  } succeed truthfully, ${wrong} wrong`;
}

/**
 * The record check's figure: `fault matrix records: <cells> cells judged, <records> records checked,
 * <wrong> wrong` (test.sh prints this line in its summary).
 */
export function recordFigure(results: CellResult[]): string {
  const judged = results.filter((c) => c.recordsJudged);
  const records = judged.reduce((n, c) => n + (c.recordsChecked ?? 0), 0);
  const wrong =
    judged.filter((c) => c.problems.some((p) => p.startsWith("record truth: ")))
      .length;
  return `fault matrix records: ${judged.length} cells judged, ${records} records checked, ${wrong} wrong`;
}

/** MATRIX.md: the summaries (method × fault → verdicts, one per model), then each method's endpoints. */
export function render(all: Row[], results: CellResult[]): string {
  const isLxc = (row: string) => row.startsWith("lxc ");
  const qemuRows = all.filter((r) => !isLxc(r.spec.row));
  const lxcRows = all.filter((r) => isLxc(r.spec.row));
  const qemuCells = results.filter((c) => !isLxc(c.row));
  const lxcCells = results.filter((c) => isLxc(c.row));
  const out: string[] = [
    "# Fault matrix (qemu and lxc models)",
    "",
    "Generated by `deno run -A tests/faults/print_matrix.ts` (checked by `deno test -A tests/faults/`); do not edit.",
    "",
    "Every method of `@stateless/proxmox/qemu` and of `@stateless/proxmox/lxc` × every fault that",
    "can reach it, end to end: the package through the swamp-like harness, its wasm core, the PVE",
    "simulator and a real qemu-ga (agent faults apply to the qemu model only: a container has no",
    "guest agent). Each cell is one run on a fresh fixture with one fault on one request. A cell",
    "passes only when the verdict is the one the contract demands, a failure names what was being",
    "done, quotes what happened and says what to check, a success's effect holds in the simulator,",
    "no record claims what was not observed, a mutation was sent exactly once (a lost answer is",
    "reported as an unknown effect), and a safe read retried a transient fault a bounded number of",
    "times.",
    "",
    `**${tally(results)}** (qemu model: ${tally(qemuCells)}; lxc model: ${
      tally(lxcCells)
    }).`,
    "",
    "Records, not only verdicts (tests/faults/records.ts): after every cell that fails or leaves an",
    "outcome unknown, every record the run wrote is checked against what the simulator answered — a",
    "state presented as current was read after the run's last change and shows the lock and",
    "snapstates of that read; one marked `observedBeforeMutation` says when it was read, and was.",
    "In every cell, the fields that state an effect are held to what PVE answered in the run: a",
    "volume `downloaded` (and `checksumVerified`) only when a list after the download showed it, a",
    "backup's archive and `mode` as its list and task log showed them, a fileWrite's `bytes` and",
    "`chunks` no more than the calls PVE took, an `identityObservedAt` when a config read answered.",
    `**${recordFigure(results).replace("fault matrix records: ", "")}**.`,
    "",
    "`✗` fails (as the contract demands) · `✓↻` succeeds after a retry absorbed a transient fault",
    "on a safe read · `✓⚑` succeeds with the gap flagged in the record · `✓` succeeds · `—` cannot",
    "reach the method · `‼` the cell is wrong (allowed only when listed in `KNOWN_WRONG_CELLS`,",
    "tests/faults/known_wrong.ts). A number counts endpoints.",
    "",
    "## Summary: qemu model, method × fault",
    "",
    summary(qemuRows, qemuCells, COLUMNS),
    "",
    "## Summary: lxc model, method × fault",
    "",
    "Rows are the methods of `@stateless/proxmox/lxc` (`lxc <method>` in the sections below).",
    "",
    summary(lxcRows, lxcCells, LXC_COLUMNS, "lxc "),
    "",
    "## Known wrong cells",
    "",
    "Cells shown `‼` that the build tolerates because they are listed, with the reason, in",
    "`KNOWN_WRONG_CELLS` (tests/faults/known_wrong.ts); any other wrong cell fails the build.",
    "",
    ...(KNOWN_WRONG_CELLS.length === 0
      ? ["None."]
      : KNOWN_WRONG_CELLS.map((k) =>
        `- ${k.row} × ${
          k.endpoint ?? "scenario"
        } × \`${k.column}\`: ${k.reason}`
      )),
    "",
    "## Faults",
    "",
  ];
  out.push(`- \`none\`: ${SCENARIO_LEGEND.none}`);
  for (const id of FAULT_IDS) out.push(`- \`${id}\`: ${FAULTS[id].legend}`);
  for (const id of SCENARIO_IDS.filter((s) => s !== "none")) {
    out.push(`- \`${id}\`: ${SCENARIO_LEGEND[id]}`);
  }
  out.push("", "## Per method: request × fault", "");
  for (const row of all) {
    if (!row.present) {
      out.push(
        `### ${row.spec.row}`,
        "",
        "Not present in `model.methods`: not run.",
        "",
      );
      continue;
    }
    const args = JSON.stringify(row.spec.args);
    out.push(`### ${row.spec.row}`, "", `Arguments: \`${args}\``, "");
    const lines: string[][] = row.spec.endpoints.map((e) => [
      e.id.replaceAll("|", "\\|"),
      ...FAULT_IDS.map((id) => {
        const cell = results.find((c) =>
          c.row === row.spec.row && c.endpoint === e.id && c.column === id
        );
        return cell ? symbol(cell) : "—";
      }),
    ]);
    out.push(table(["request", ...FAULT_IDS], lines), "");
    const scenarios = results.filter((c) =>
      c.row === row.spec.row && c.endpoint === undefined
    );
    if (scenarios.length > 0) {
      out.push(
        `Scenarios: ${
          scenarios.map((c) => `\`${c.column}\` ${symbol(c)}`).join(" · ")
        }`,
        "",
      );
    }
    // One line per endpoint and note, naming the faults it explains.
    const notes = new Map<string, string[]>();
    for (const c of results) {
      if (c.row !== row.spec.row || !c.note) continue;
      const key = `${c.endpoint}\u0000${c.note}`;
      notes.set(key, [...(notes.get(key) ?? []), `\`${c.column}\``]);
    }
    for (const [key, columns] of notes) {
      const [endpoint, note] = key.split("\u0000");
      out.push(`- ${endpoint} × ${columns.join(", ")}: ${note}`);
    }
    if (notes.size > 0) out.push("");
  }
  return out.join("\n").trimEnd() + "\n";
}

/**
 * `text` as `deno fmt` leaves it, so MATRIX.md passes the repository's `deno fmt --check` and the
 * freshness test compares like with like.
 */
export async function formatMarkdown(text: string): Promise<string> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["fmt", "--ext=md", "-"],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(text));
  await writer.close();
  const { code, stdout, stderr } = await child.output();
  if (code !== 0) {
    throw new Error(`deno fmt failed: ${new TextDecoder().decode(stderr)}`);
  }
  return new TextDecoder().decode(stdout);
}

/** A cell's problems, for a test failure. */
export function describeWrong(results: CellResult[]): string {
  return results.filter((c) => c.problems.length > 0).map((c) =>
    `${c.row} × ${c.endpoint ?? "scenario"} × ${c.column}:\n  ${
      c.problems.join("\n  ")
    }`
  ).join("\n");
}
