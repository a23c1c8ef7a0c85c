/**
 * A child process for host_test.ts: three starts at once on one node (so they share its task-list
 * reader), then the simulator is closed and the script ends. It prints the verdicts; whether the
 * process then exits by itself is what the test watches.
 *
 * @module
 */
import { loadPackage } from "../bench/package.ts";
import { startBenchEnv } from "../bench/fixture.ts";
import { fleet } from "../bench/guests.ts";

const pkg = await loadPackage(new URL("../../js", import.meta.url).pathname);
const guests = fleet(3).map((g) => ({ ...g, status: "stopped" as const }));
const env = await startBenchEnv(pkg, undefined, {
  guests,
  taskDurationMs: 200,
});
try {
  const runs = await Promise.all(
    guests.map((g) =>
      env.definition(`guest-${g.vmid}`)("start", { vmid: g.vmid }, 60_000)
    ),
  );
  console.log(runs.map((r) => r.result.status).join(","));
} finally {
  await env.close();
}
