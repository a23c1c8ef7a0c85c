/**
 * waitTask end to end: a task another client started, named by its UPID or found by a filter of
 * its node's task list, is followed to its end; a failed one fails with its exit status and its
 * log's last lines, and the `task-…` record points to the file holding its whole log (or, where
 * swamp stores no files, holds those lines) — scrubbed of the token secret.
 */
import assert from "node:assert/strict";
import { model as lxcModel } from "../../js/proxmox_lxc.ts";
import { demoGuests } from "../../simulator/demo_cluster.ts";
import { api, tokenHeader } from "../../simulator/sim_client.ts";
import type { SimGuest } from "../../simulator/types.ts";
import { type Env, TOKEN_ID, TOKEN_SECRET, withEnv, written } from "./env.ts";

const stopped: SimGuest = {
  vmid: 120,
  node: "pve1",
  type: "qemu",
  name: "other",
  status: "stopped",
  config: { smbios1: "uuid=00000000-0000-4000-8000-000000000120" },
};
const cluster = { guests: [...demoGuests(), stopped] };

/** Another client starts VM 120 (its own request, not the package's); returns the UPID. */
async function startedElsewhere(env: Env): Promise<string> {
  const r = await api(
    env.sim.url,
    "POST",
    "/nodes/pve1/qemu/120/status/start",
    {},
    { auth: tokenHeader(TOKEN_ID, TOKEN_SECRET) },
  );
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.data as string;
}

/** `task-<node>-<pid>-<starttime>` of a UPID. */
function instanceOf(upid: string): string {
  const [, node, pid, , starttime] = upid.split(":");
  return `task-${node}-${pid}-${starttime}`;
}

Deno.test("waitTask: a task started elsewhere, named by its UPID, is followed to its end and recorded", async () => {
  await withEnv(cluster, async (env) => {
    env.sim.nextTask({ durationMs: 600 });
    const upid = await startedElsewhere(env);
    const r = await env.run("waitTask", { upid });
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, instanceOf(upid));
    assert.equal(rec.upid, upid);
    assert.equal(rec.type, "qmstart");
    assert.equal(rec.id, "120");
    assert.equal(rec.ended, true);
    assert.equal(rec.exitStatus, "OK");
    assert.equal(rec.lastOperation, "waitTask");
    assert.equal(env.sim.task(upid)?.status, "stopped");
  });
});

Deno.test("waitTask: a filter finds the one task of its type and guest started since", async () => {
  await withEnv(cluster, async (env) => {
    const since = Math.floor(Date.now() / 1000);
    env.sim.nextTask({ durationMs: 400 });
    const upid = await startedElsewhere(env);
    const r = await env.run("waitTask", {
      node: "pve1",
      type: "qmstart",
      vmid: 120,
      startedAfter: since,
    });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(written(r, instanceOf(upid)).upid, upid);
  });
});

Deno.test("waitTask: a filter that matches nothing fails saying so, writing nothing", async () => {
  await withEnv(cluster, async (env) => {
    const r = await env.run("waitTask", { type: "vzdump", vmid: 120 });
    assert.equal(r.status, "failed");
    assert.match(
      r.error ?? "",
      /the tasks of node pve1 that match the filter are: none/,
    );
    assert.equal(r.written.length, 0);
  });
});

Deno.test("waitTask: a failed task fails with its exit status and the last lines of a long log, in the message and (where swamp stores no files) the record", async () => {
  await withEnv({ ...cluster, fileWriters: false }, async (env) => {
    env.sim.nextTask({
      durationMs: 800,
      exitstatus: "start failed: QEMU exited with code 1",
    });
    const upid = await startedElsewhere(env);
    const task = env.sim.task(upid)!;
    for (let n = 1; n <= 700; n++) task.log.push(`line ${n}`);
    task.log.push(`kvm: auth ${TOKEN_SECRET} rejected`);
    const r = await env.run("waitTask", { upid });
    assert.equal(r.status, "failed");
    assert.match(
      r.error ?? "",
      /failed: start failed: QEMU exited with code 1/,
    );
    assert.match(r.error ?? "", /task log ends: line 693 \| line 694 \|/);
    assert.doesNotMatch(r.error ?? "", /line 692 /);
    const rec = written(r, instanceOf(upid));
    assert.equal(rec.exitStatus, "start failed: QEMU exited with code 1");
    const tail = rec.logTail as string[];
    assert.equal(tail.length, 10);
    assert.equal(tail[0], "line 693");
    assert.match(tail[9], /^TASK ERROR: start failed/);
    assert.match(tail[8], /^kvm: auth .* rejected$/);
    assert.equal(rec.logFile, undefined);
    assert.equal(rec.error, r.error);
  });
});

Deno.test("waitTask: a failed task's record points to the taskLog file holding its whole log, the token secret scrubbed", async () => {
  await withEnv(cluster, async (env) => {
    env.sim.nextTask({ durationMs: 800, exitstatus: "start failed" });
    const upid = await startedElsewhere(env);
    const task = env.sim.task(upid)!;
    for (let n = 1; n <= 700; n++) task.log.push(`line ${n}`);
    task.log.push(`kvm: auth ${TOKEN_SECRET} rejected`);
    const r = await env.run("waitTask", { upid });
    assert.equal(r.status, "failed");
    const rec = written(r, instanceOf(upid));
    const name = instanceOf(upid).replace(/^task-/, "tasklog-");
    assert.equal(rec.logFile, name);
    assert.equal(rec.logTail, undefined);
    const file = r.written.find((w) => w.spec === "taskLog");
    assert.equal(file?.instance, name);
    const lines = String(file?.data).trimEnd().split("\n");
    assert.equal(lines[0], "line 1");
    assert.equal(lines[699], "line 700");
    assert.equal(lines[700], "kvm: auth *** rejected");
    assert.ok(!String(file?.data).includes(TOKEN_SECRET));
  });
});

Deno.test("waitTask: a task still running at the budget's end is recorded as not ended", async () => {
  await withEnv(
    { ...cluster, globalArgs: { taskTimeoutSec: 2 } },
    async (env) => {
      env.sim.nextTask({ durationMs: 60_000 });
      const upid = await startedElsewhere(env);
      const r = await env.run("waitTask", { upid });
      assert.equal(r.status, "failed");
      assert.match(r.error ?? "", /still running after taskTimeoutSec=2s/);
      const rec = written(r, instanceOf(upid));
      assert.equal(rec.ended, false);
      assert.equal(rec.exitStatus, undefined);
    },
  );
});

Deno.test("waitTask: the container model waits on a task the same way", async () => {
  await withEnv({ ...cluster, model: lxcModel }, async (env) => {
    const upid = await startedElsewhere(env);
    const r = await env.run("waitTask", { upid });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(written(r, instanceOf(upid)).exitStatus, "OK");
  });
});

Deno.test("waitTask: over the ssh transport a filter finds the task and it is followed the same way", async () => {
  await withEnv({ ...cluster, via: "ssh" }, async (env) => {
    env.sim.nextTask({ durationMs: 400 });
    const upid = await startedElsewhere(env);
    const r = await env.run("waitTask", { type: "qmstart", vmid: 120 });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(written(r, instanceOf(upid)).exitStatus, "OK");
  });
});

/** Another user's token, which starts VM 120 (its UPID's user is `alice@pve!ci`). */
const ALICE = { id: "alice@pve!ci", secret: "alice-secret-1" };

/** The package's token, privilege-separated, holding `tokenAcl`; and Alice's. */
const beside = (tokenAcl: Record<string, string[]>) => ({
  ...cluster,
  sim: {
    tokens: [
      { id: "ops@pve!swamp", secret: TOKEN_SECRET, privsep: true, tokenAcl },
      ALICE,
    ],
  },
  transport: { tokenId: "ops@pve!swamp" },
});

/** Alice starts VM 120; returns the UPID. */
async function startedByAlice(env: Env): Promise<string> {
  const r = await api(
    env.sim.url,
    "POST",
    "/nodes/pve1/qemu/120/status/start",
    {},
    { auth: tokenHeader(ALICE.id, ALICE.secret) },
  );
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.data as string;
}

/** The package's reads of a task's status, log or list. */
const taskReads = (env: Env) =>
  env.sim.requests.filter((q) => q.path.includes("/tasks"));

// waitTask reads only: the `permissions` check does not run before it (MULTI_STEP), so PVE's own
// check on the first status read refuses, with PVE's reason.
Deno.test("waitTask: another user's task, by its UPID, fails on the first status read naming Sys.Audit on its node when the token lacks it", async () => {
  await withEnv(beside({ "/vms": ["VM.Audit"] }), async (env) => {
    env.sim.nextTask({ durationMs: 400 });
    const upid = await startedByAlice(env);
    const r = await env.run("waitTask", { upid });
    assert.equal(r.status, "failed");
    assert.match(
      r.error ?? "",
      /could not read the status of task .*alice@pve!ci.*: Permission check failed \(\/nodes\/pve1, Sys\.Audit\) \(HTTP 403\)/,
    );
    const reads = taskReads(env).map((q) => q.path);
    assert.deepEqual(reads, [
      `/api2/json/nodes/pve1/tasks/${upid}/status`,
    ]);
    assert.equal(written(r, instanceOf(upid)).ended, false);
  });
});

Deno.test("waitTask: another user's task, by its UPID, is followed when the token holds Sys.Audit on its node", async () => {
  await withEnv(beside({ "/nodes": ["Sys.Audit"] }), async (env) => {
    env.sim.nextTask({ durationMs: 400 });
    const upid = await startedByAlice(env);
    const r = await env.run("waitTask", { upid });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(written(r, instanceOf(upid)).exitStatus, "OK");
  });
});

Deno.test("waitTask: a filter whose only match is another user's task, without Sys.Audit, finds none and says such tasks are listed only with Sys.Audit", async () => {
  await withEnv(beside({ "/vms": ["VM.Audit"] }), async (env) => {
    env.sim.nextTask({ durationMs: 400 });
    await startedByAlice(env);
    const r = await env.run("waitTask", { type: "qmstart", vmid: 120 });
    assert.equal(r.status, "failed");
    assert.match(
      r.error ?? "",
      /match the filter are: none \(tasks started by other users are listed only with Sys\.Audit on \/nodes\/pve1\)/,
    );
    assert.equal(r.written.length, 0);
  });
});
