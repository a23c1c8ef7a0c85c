/**
 * What one method costs in the shipped module: the core built without it (`PROXMOX_CORE_OMIT`,
 * src/catalog.rs `omitted`, which drops its dispatch and argument rules at compile time, and with
 * them every function only it reaches) against the full build. A build takes a minute or two; each
 * goes to its own target folder so the project's build is left alone.
 *
 * @module
 */
import { join } from "node:path";
import type { Cell, Row } from "./table.ts";
import budget from "../../size_budget.json" with { type: "json" };

/** The methods weighed: a small one and a large one (issue 32). */
export const WEIGHED = ["snapshot", "restore"] as const;

/**
 * Bytes of the optimised module built without `omit` (comma-separated names; "" = full). The
 * builds share one cargo folder (only the core is rebuilt when `PROXMOX_CORE_OMIT` changes);
 * builds that run at the same time each need their own (`cargoDir`).
 */
export async function moduleBytes(
  root: string,
  omit: string,
  cargoDir = "size-weigh",
): Promise<number> {
  const cargo = join(root, "target", cargoDir);
  const dir = join(cargo, omit ? `without-${omit}` : "full");
  const script = 'source scripts/tools.sh && build_wasm "$1" "$2/out"';
  const out = await new Deno.Command("bash", {
    args: ["-c", script, "build", cargo, dir],
    cwd: root,
    env: { PROXMOX_CORE_OMIT: omit },
    stdout: "inherit",
    stderr: "inherit",
  }).output();
  if (!out.success) {
    throw new Error(`build without ${omit || "nothing"} failed`);
  }
  return (await Deno.stat(join(dir, "out", "proxmox_core.opt.wasm"))).size;
}

/**
 * One row per weighed method: the module with it minus the module without it. Only this package
 * is built; every other column (a baseline) says it has no wasm core.
 */
export async function marginalRows(
  root: string,
  columns: number,
): Promise<Row[]> {
  const full = await moduleBytes(root, "");
  const rows: Row[] = [];
  for (const method of WEIGHED) {
    const cell: Cell = { samples: [full - await moduleBytes(root, method)] };
    rows.push({
      benchmark: `marginal cost of \`${method}\` (module with it − without it)`,
      measure: "bytes",
      unit: "bytes",
      cells: [
        cell,
        ...Array.from(
          { length: columns - 1 },
          () => ({ missing: "no wasm core" }),
        ),
      ],
      target: {
        text: `≤ ${budget.marginalGoalBytes.toLocaleString("en")} B`,
        met: (v) => v <= budget.marginalGoalBytes,
      },
    });
  }
  return rows;
}
