/**
 * A failed task's log as a file output: the method keeps the task's whole log (its end within
 * 1 MiB, secrets scrubbed) as a `taskLog` file named `tasklog-<node>-<pid>-<starttime>`, returns
 * its handle with the records', and the guest record points to it (`lastTaskLog`); where swamp
 * gives no `createFileWriter` the record carries the log's tail instead (`lastTaskLogTail`).
 */
import assert from "node:assert/strict";
import type { RunResult } from "../../harness/swamp.ts";
import type { SimGuest } from "../../simulator/types.ts";
import { type Env, TOKEN_SECRET, withEnv, written } from "./env.ts";

const stopped: SimGuest = {
  vmid: 120,
  node: "pve1",
  type: "qemu",
  name: "t120",
  status: "stopped",
  config: { smbios1: "uuid=00000000-0000-4000-8000-000000000120" },
};

/** Runs start on VM 120 whose task fails after logging `lines`. */
async function failedStart(env: Env, lines: string[]): Promise<RunResult> {
  env.sim.nextTask({ durationMs: 1500, exitstatus: "start failed: boom" });
  const run = env.run("start", { vmid: 120 });
  // The task's log gets its lines while it runs (the simulator logs none of its own).
  for (let i = 0; i < 100; i++) {
    const task = env.sim.tasks().find((t) => t.type === "qmstart");
    if (task) {
      task.log.push(...lines);
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return await run;
}

/** `tasklog-<node>-<pid>-<starttime>` of a UPID. */
function fileOf(upid: string): string {
  const [, node, pid, , starttime] = upid.split(":");
  return `tasklog-${node}-${pid}-${starttime}`;
}

Deno.test("start: a failed start task's whole log is kept as a taskLog file the record points to", async () => {
  await withEnv({ guests: [stopped] }, async (env) => {
    const lines = Array.from({ length: 30 }, (_, n) => `step ${n + 1}`);
    const r = await failedStart(env, lines);
    assert.equal(r.status, "failed");
    const rec = written(r, "vm-120");
    const name = fileOf(String(rec.lastTask));
    assert.equal(rec.lastTaskLog, name);
    assert.equal(rec.lastTaskLogTail, undefined);
    const file = r.written.find((w) => w.spec === "taskLog");
    assert.equal(file?.instance, name);
    const kept = String(file?.data).trimEnd().split("\n");
    assert.deepEqual(kept.slice(0, 30), lines);
    assert.match(kept[30], /^TASK ERROR: start failed: boom/);
    const handle = r.dataHandles.find((h) => h.name === name);
    assert.equal(handle?.kind, "file");
    assert.equal(handle?.metadata.contentType, "text/plain");
    assert.equal(env.repo.latest(name), file?.data);
  });
});

Deno.test("start: without createFileWriter (an older swamp) the record carries the failed task's log tail", async () => {
  await withEnv({ guests: [stopped], fileWriters: false }, async (env) => {
    const lines = Array.from({ length: 30 }, (_, n) => `step ${n + 1}`);
    const r = await failedStart(env, lines);
    assert.equal(r.status, "failed");
    const rec = written(r, "vm-120");
    assert.equal(rec.lastTaskLog, undefined);
    const tail = rec.lastTaskLogTail as string[];
    assert.equal(tail.length, 10);
    assert.deepEqual(tail.slice(0, 9), lines.slice(21));
    assert.match(tail[9], /^TASK ERROR: start failed: boom/);
    assert.ok(r.written.every((w) => w.spec !== "taskLog"));
  });
});

Deno.test("start: a secret in a failed task's log is scrubbed from its log file", async () => {
  await withEnv({ guests: [stopped] }, async (env) => {
    const r = await failedStart(env, [`auth ${TOKEN_SECRET} rejected`]);
    assert.equal(r.status, "failed");
    const file = r.written.find((w) => w.spec === "taskLog");
    assert.match(String(file?.data), /^auth \*\*\* rejected\n/);
    assert.ok(!String(file?.data).includes(TOKEN_SECRET));
  });
});

Deno.test("start: a task ending with warnings keeps its log as a file the record points to", async () => {
  await withEnv({ guests: [stopped] }, async (env) => {
    env.sim.nextTask({ warnings: ["no efidisk configured! Using temporary"] });
    const r = await env.run("start", { vmid: 120 });
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "vm-120");
    assert.equal(rec.lastTaskLog, fileOf(String(rec.lastTask)));
    const file = r.written.find((w) => w.spec === "taskLog");
    assert.match(String(file?.data), /WARN: no efidisk configured/);
    assert.ok(r.dataHandles.some((h) => h.name === rec.lastTaskLog));
  });
});
