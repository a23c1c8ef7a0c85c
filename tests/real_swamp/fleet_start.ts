/**
 * A fleet through the real swamp CLI: docs/recipes.md's fleet-per-guest recipe with `start` instead of
 * `guestExec`, N stopped guests (default 40), one definition each, against a simulator of PVE's
 * capacity (3 workers × 10 ms, keep-alive, a 50 ms reaping lag in the task list) with start tasks
 * of 2.5–3.5 s. Prints, per package, the requests the node served (swamp's pre-flight checks
 * included), the connections it accepted, and how late the workflow returned after the last task
 * ended. A benchmark, not a test.
 *
 *   deno run -A tests/real_swamp/fleet_start.ts [N=40] [--baseline <dir>]
 *
 * Without `--baseline` only this package runs; `<dir>` is another package folder to run after it
 * (e.g. an upstream package folder you fetched yourself, never committed). There is no default.
 *
 * @module
 */
import { resolve } from "node:path";
import { taskLength } from "../bench/fleet_scale.ts";
import { extraGuest, OUR_PACKAGE, withRealSwamp } from "./fixture.ts";
import { definitionPerGuest, writeRecipe } from "./recipes.ts";

const at = Deno.args.indexOf("--baseline");
if (at >= 0 && !Deno.args[at + 1]) {
  console.error("--baseline needs a package folder: --baseline <dir>");
  Deno.exit(2);
}
const count = Number(Deno.args.find((a) => /^\d+$/.test(a)) ?? 40);
const packages = [
  OUR_PACKAGE,
  ...(at >= 0 ? [resolve(Deno.args[at + 1])] : []),
];
const vmids = Array.from({ length: count }, (_, i) => 1000 + i);
const guests = vmids.map((vmid) =>
  extraGuest({
    vmid,
    name: `fleet-${vmid}`,
    status: "stopped",
    agent: "none",
    config: {
      smbios1: `uuid=00000000-0000-4000-8000-${String(vmid).padStart(12, "0")}`,
    },
  })
);

for (const packageDir of packages) {
  await withRealSwamp({
    guests,
    packageDir,
    type: null,
    sim: {
      capacity: { workers: 3, serviceMs: 10 },
      taskDurationMs: (task) => taskLength(task.id),
      taskListLagMs: 50,
      keepAlive: true,
    },
  }, async (env) => {
    await definitionPerGuest(env, vmids, { pollIntervalSec: 3 });
    await writeRecipe(
      env,
      "fleet-per-guest",
      (text) =>
        text.replace("methodName: guestExec", "methodName: start")
          .replace(/\n\s*command: \["true"\]/, ""),
    );
    const before = env.sim.requests.length;
    const connections = env.sim.connections();
    const r = await env.cli.json([
      "workflow",
      "run",
      "fleet-per-guest",
      "--input",
      `vmids:json=${JSON.stringify(vmids)}`,
    ]);
    const returned = Date.now();
    const ends = env.sim.tasks().filter((t) => t.type === "qmstart")
      .map((t) => t.endedAt ?? NaN);
    const started = vmids.filter((v) => env.sim.guest(v)?.status === "running");
    console.log(
      `${
        packageDir === OUR_PACKAGE ? "this package" : packageDir
      }: ${count} starts, ` +
        `workflow ${r.json.status}, ${started.length} running; ` +
        `${env.sim.requests.length - before} requests, ` +
        `${env.sim.connections() - connections} connections, ` +
        `${returned - Math.max(...ends)} ms after the last task ended`,
    );
  });
}
