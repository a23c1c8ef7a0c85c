/**
 * The simulator as a node of PVE's capacity, and its task list as pve-manager's node_tasks serves
 * it: running tasks first as `RUNNING`, an ended task archived only once its daemon reaped it,
 * another user's tasks hidden from a token without Sys.Audit on the node.
 */
import assert from "node:assert/strict";
import { api, tokenHeader, waitTask } from "../../simulator/sim_client.ts";
import { startSimulator } from "../../simulator/simulator.ts";
import type { SimGuest, SimOptions } from "../../simulator/types.ts";

const OURS = { id: "root@pam!ours", secret: "ours-secret-1", nodeAudit: false };
const THEIRS = { id: "root@pam!theirs", secret: "theirs-secret-2" };
const ours = { auth: tokenHeader(OURS.id, OURS.secret) };
const theirs = { auth: tokenHeader(THEIRS.id, THEIRS.secret) };

const guest = (vmid: number): SimGuest => ({
  vmid,
  node: "pve1",
  type: "qemu",
  name: `g${vmid}`,
  status: "stopped",
  agent: "none",
});

async function withSim(
  opts: Partial<SimOptions>,
  body: (url: string) => Promise<void>,
): Promise<void> {
  const sim = await startSimulator({
    nodes: ["pve1"],
    guests: [guest(100), guest(101)],
    tokens: [OURS, THEIRS],
    ...opts,
  });
  try {
    await body(sim.url);
  } finally {
    await sim.close();
  }
}

async function startTask(url: string, vmid: number, who: { auth: string }) {
  const r = await api(
    url,
    "POST",
    `/nodes/pve1/qemu/${vmid}/status/start`,
    {},
    who,
  );
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.data as string;
}

async function listed(url: string, who: { auth: string }) {
  const r = await api(url, "GET", "/nodes/pve1/tasks", { source: "all" }, who);
  assert.equal(r.status, 200);
  return r.body.data as { upid: string; status?: string }[];
}

Deno.test("task list: an ended task shows RUNNING until its daemon reaped it, while its own status is already stopped", async () => {
  await withSim({ taskDurationMs: 50, taskListLagMs: 400 }, async (url) => {
    const upid = await startTask(url, 100, theirs);
    const status = await waitTask(url, upid, theirs);
    assert.equal(status.exitstatus, "OK");
    const before = (await listed(url, theirs)).find((t) => t.upid === upid);
    assert.equal(before?.status, "RUNNING");
    await new Promise((r) => setTimeout(r, 450));
    const after = (await listed(url, theirs)).find((t) => t.upid === upid);
    assert.equal(after?.status, "OK");
  });
});

Deno.test("task list: source=all lists running tasks before ended ones", async () => {
  await withSim({
    taskDurationMs: (t) => (t.id === "100" ? 30 : 2_000),
  }, async (url) => {
    const quick = await startTask(url, 100, theirs);
    await waitTask(url, quick, theirs);
    const slow = await startTask(url, 101, theirs);
    const rows = await listed(url, theirs);
    assert.deepEqual(rows.map((t) => [t.upid, t.status]), [
      [slow, "RUNNING"],
      [quick, "OK"],
    ]);
  });
});

Deno.test("task list: a token without Sys.Audit on the node sees only its own tasks", async () => {
  await withSim({ taskDurationMs: 2_000 }, async (url) => {
    const mine = await startTask(url, 100, ours);
    const other = await startTask(url, 101, theirs);
    assert.deepEqual((await listed(url, ours)).map((t) => t.upid), [mine]);
    const all = (await listed(url, theirs)).map((t) => t.upid).sort();
    assert.deepEqual(all, [mine, other].sort());
  });
});

Deno.test("task status and log: another user's task is refused without Sys.Audit on the node, the token's own is read", async () => {
  await withSim({}, async (url) => {
    const mine = await startTask(url, 100, ours);
    const theirTask = await startTask(url, 101, theirs);
    const read = (upid: string, what: string) =>
      api(
        url,
        "GET",
        `/nodes/pve1/tasks/${encodeURIComponent(upid)}/${what}`,
        {},
        ours,
      );
    for (const what of ["status", "log"]) {
      assert.equal((await read(mine, what)).status, 200, what);
      const refused = await read(theirTask, what);
      assert.equal(refused.status, 403, what);
      assert.match(JSON.stringify(refused.body), /\/nodes\/pve1, Sys\.Audit/);
    }
  });
});

Deno.test("capacity: a node of 2 workers × 50 ms serves 6 requests at once in three rounds, in arrival order", async () => {
  const sim = await startSimulator({
    nodes: ["pve1"],
    tokens: [THEIRS],
    capacity: { workers: 2, serviceMs: 50 },
  });
  try {
    const started = performance.now();
    const answers = await Promise.all(
      Array.from(
        { length: 6 },
        () => api(sim.url, "GET", "/version", {}, theirs),
      ),
    );
    const took = performance.now() - started;
    assert.ok(answers.every((a) => a.status === 200));
    assert.ok(took >= 150, `took ${took} ms`);
    const queued = sim.requests.map((q) => q.queuedMs ?? 0).sort((a, b) =>
      a - b
    );
    assert.ok(queued[0] < 20 && queued[1] < 20, "two served at once");
    assert.ok(queued[5] >= 90, `the last waited two rounds (${queued[5]} ms)`);
  } finally {
    await sim.close();
  }
});
