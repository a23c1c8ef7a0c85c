/**
 * A fleet is one node's load: concurrent runs of one process share one reader of a node's task
 * list (src/watch/node_tasks.rs), and every failure of that shared reading leaves each run with
 * the verdict it would have had alone.
 */
import assert from "node:assert/strict";
import { model } from "../../js/proxmox_qemu.ts";
import { SwampRepo } from "../../harness/swamp.ts";
import { PACKAGE_FILES } from "../../harness/project_package.ts";
import type { RunOptions, RunResult } from "../../harness/types.ts";
import type { RequestRecord, SimGuest } from "../../simulator/types.ts";
import { type Env, TOKEN_ID, TOKEN_SECRET, withEnv, written } from "./env.ts";

const SIZE = 8;

const GUESTS = Array.from({ length: SIZE }, (_, i): SimGuest => ({
  vmid: 500 + i,
  node: "pve1",
  type: "qemu",
  name: `fleet-${i}`,
  status: "stopped",
  agent: "none",
  tags: ["swamp"],
  config: {
    smbios1: `uuid=00000000-0000-4000-8000-0000000005${
      String(i).padStart(2, "0")
    }`,
  },
}));

/** Starts every guest of the fleet at once, one definition each (parallel workflow steps). */
function startAll(
  env: Env,
  guests = GUESTS,
  opts: (vmid: number) => RunOptions = () => ({}),
): Promise<RunResult[]> {
  return Promise.all(
    guests.map((g) =>
      new SwampRepo(model, {
        name: `step-${g.vmid}`,
        globalArgs: env.globalArgs,
      }, {
        vault: true,
        extensionFiles: PACKAGE_FILES,
      }).run("start", { vmid: g.vmid }, opts(g.vmid))
    ),
  );
}

const isList = (q: RequestRecord) =>
  q.method === "GET" && q.path === "/api2/json/nodes/pve1/tasks";
const isOwnStatus = (q: RequestRecord) =>
  q.method === "GET" && /\/tasks\/UPID:[^/]+\/status$/.test(q.path);

function assertAllStarted(env: Env, runs: RunResult[]): void {
  runs.forEach((r, i) => {
    const vmid = GUESTS[i].vmid;
    assert.equal(r.status, "succeeded", `start of ${vmid}: ${r.error}`);
    assert.equal(written(r, `vm-${vmid}`).status, "running");
    assert.equal(env.sim.guest(vmid)?.status, "running");
  });
}

Deno.test("fleet: starts on one node share one task-list read per probe instead of one status read per task", async () => {
  await withEnv(
    { guests: GUESTS, sim: { taskDurationMs: 800 } },
    async (env) => {
      const runs = await startAll(env);
      assertAllStarted(env, runs);
      const lists = env.sim.requests.filter(isList);
      const own = env.sim.requests.filter(isOwnStatus);
      assert.ok(lists.length > 0, "the fleet read the node's task list");
      assert.ok(
        lists.every((q) =>
          q.query.source === "all" && Number(q.query.limit) >= SIZE
        ),
        "one list holds every running and ended task of the fleet",
      );
      // Alone, each 800 ms wait costs about 13 status reads: 104 for the fleet.
      assert.ok(
        lists.length + own.length < 40,
        `${lists.length} list reads + ${own.length} status reads`,
      );
    },
  );
});

Deno.test("fleet: a run alone on its node reads its own task's status, never the list", async () => {
  await withEnv(
    { guests: GUESTS, sim: { taskDurationMs: 300 } },
    async (env) => {
      const r = await env.run("start", { vmid: 500 });
      assert.equal(r.status, "succeeded", r.error);
      assert.equal(env.sim.requests.filter(isList).length, 0);
      assert.ok(env.sim.requests.filter(isOwnStatus).length > 0);
    },
  );
});

const isGuestList = (q: RequestRecord) =>
  q.method === "GET" && q.path === "/api2/json/nodes/pve1/qemu";
const isGuestStatus = (q: RequestRecord) =>
  q.method === "GET" && /\/qemu\/\d+\/status\/current$/.test(q.path);
const isStart = (q: RequestRecord) =>
  q.method === "POST" && q.path.endsWith("/status/start");

Deno.test("fleet: starts launched at once on a busy node are admitted by the node's guest list, not one state read each", async () => {
  await withEnv(
    {
      guests: GUESTS,
      sim: { taskDurationMs: 300, capacity: { workers: 3, serviceMs: 10 } },
    },
    async (env) => {
      const runs = await startAll(env);
      assertAllStarted(env, runs);
      const lastStart = Math.max(
        ...env.sim.requests.filter(isStart).map((q) => q.at),
      );
      const before = env.sim.requests.filter((q) => q.at <= lastStart);
      const lists = before.filter(isGuestList).length;
      const own = before.filter(isGuestStatus).length;
      assert.ok(lists >= 1, "the fleet read the node's guest list");
      assert.ok(
        lists + own < SIZE,
        `${lists} list reads + ${own} state reads before the last start, for ${SIZE} guests`,
      );
    },
  );
});

Deno.test("fleet: a run alone on its node reads its guest's own state before acting, never the node's list", async () => {
  await withEnv(
    { guests: GUESTS, sim: { taskDurationMs: 300 } },
    async (env) => {
      const r = await env.run("start", { vmid: 500 });
      assert.equal(r.status, "succeeded", r.error);
      assert.equal(env.sim.requests.filter(isGuestList).length, 0);
      assert.ok(env.sim.requests.filter(isGuestStatus).length > 0);
    },
  );
});

Deno.test("fleet: a task list that answers an error sends every run back to its own task, said once, with the same verdicts", async () => {
  await withEnv(
    { guests: GUESTS, sim: { taskDurationMs: 800 } },
    async (env) => {
      env.sim.fault({
        method: "GET",
        pathRegex: /\/nodes\/pve1\/tasks$/,
        kind: "status",
        status: 500,
        message: "unable to read task index",
        times: Infinity,
      });
      const runs = await startAll(env);
      assertAllStarted(env, runs);
      assert.equal(env.sim.requests.filter(isList).length, 1, "asked once");
      const said = runs.flatMap((r) => r.logs).filter((l) =>
        l.level === "warning" &&
        /task list of node pve1 could not be read/.test(l.message)
      );
      assert.equal(said.length, 1, "said once, in the run that read it");
      assert.match(said[0].message, /unable to read task index/);
    },
  );
});

Deno.test("fleet: a task list that never moves (a worker never reaped) cannot hold a run: its own status read ends the wait", async () => {
  await withEnv({
    guests: GUESTS.slice(0, 3),
    sim: { taskDurationMs: 300, taskListLagMs: 1e9 },
  }, async (env) => {
    const started = performance.now();
    const runs = await startAll(env, GUESTS.slice(0, 3));
    runs.forEach((r) => assert.equal(r.status, "succeeded", r.error));
    assert.ok(env.sim.requests.filter(isList).length > 0);
    // Within the verification period (10 s) plus a pause, not the task timeout.
    assert.ok(performance.now() - started < 30_000);
  });
});

Deno.test("fleet: with a task list that never moves and taskTimeoutSec 8, starts whose guests run after 1 s succeed", async () => {
  await withEnv({
    guests: GUESTS,
    sim: { taskDurationMs: 1000, taskListLagMs: 1e9 },
    globalArgs: { taskTimeoutSec: 8 },
  }, async (env) => {
    const runs = await startAll(env);
    assertAllStarted(env, runs);
    assert.ok(env.sim.requests.filter(isList).length > 0, "the list was read");
    // Each run read its own task early enough (at half of what was left) to read the state after.
    runs.forEach((r) => assert.ok(r.durationMs < 7_000, `${r.durationMs} ms`));
  });
});

Deno.test("fleet: a token that sees only its own tasks (no Sys.Audit on the node) still finds the fleet's tasks in the list", async () => {
  const other = { id: "root@pam!other", secret: "other-secret-91" };
  await withEnv({
    guests: [...GUESTS, { ...GUESTS[0], vmid: 599, name: "theirs" }],
    sim: {
      taskDurationMs: 800,
      tokens: [
        {
          id: TOKEN_ID,
          secret: TOKEN_SECRET,
          denyVmids: [150],
          nodeAudit: false,
        },
        other,
      ],
    },
  }, async (env) => {
    // Another user's task runs on the node meanwhile: the list leaves it out for this token.
    const theirs = await fetch(
      `${env.sim.url}/api2/json/nodes/pve1/qemu/599/status/start`,
      {
        method: "POST",
        headers: { Authorization: `PVEAPIToken=${other.id}=${other.secret}` },
      },
    );
    assert.equal(theirs.status, 200);
    await theirs.body?.cancel();
    const runs = await startAll(env);
    assertAllStarted(env, runs);
    const lists = env.sim.requests.filter(isList);
    assert.ok(lists.length > 0 && lists.every((q) => q.status === 200));
  });
});

Deno.test("fleet: an aborted run fails alone; the runs that shared its task list still end as they would have", async () => {
  await withEnv(
    { guests: GUESTS, sim: { taskDurationMs: 1500 } },
    async (env) => {
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 400);
      const runs = await startAll(
        env,
        GUESTS,
        (vmid) => vmid === 500 ? { signal: controller.signal } : {},
      );
      assert.equal(runs[0].status, "failed");
      assert.match(runs[0].error ?? "", /abort/);
      runs.slice(1).forEach((r, i) =>
        assert.equal(
          r.status,
          "succeeded",
          `start of ${GUESTS[i + 1].vmid}: ${r.error}`,
        )
      );
    },
  );
});
