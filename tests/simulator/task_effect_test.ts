/**
 * Tasks whose effect takes real time (a real VM booting or shutting down): the task stays running
 * until the effect settles, and ends with its outcome.
 */
import assert from "node:assert/strict";
import { TaskFailure, TaskManager } from "../../simulator/tasks.ts";
import { Timers } from "../../simulator/timers.ts";

const spec = {
  node: "pve1",
  type: "qmstart",
  id: "100",
  user: "root@pam",
};

async function until(cond: () => boolean): Promise<void> {
  while (!cond()) await new Promise((r) => setTimeout(r, 5));
}

Deno.test("task: an effect that returns a promise keeps the task running until it settles", async () => {
  const timers = new Timers();
  const tasks = new TaskManager(timers, 0);
  let finish!: (warnings: string[]) => void;
  const task = tasks.start({
    ...spec,
    run: () => new Promise<string[]>((resolve) => (finish = resolve)),
  });
  await until(() => finish !== undefined);
  assert.equal(task.status, "running");
  finish(["VM still running - terminating now with SIGTERM"]);
  await until(() => task.status === "stopped");
  assert.equal(task.exitstatus, "WARNINGS: 1");
  assert.ok(
    task.log.includes("WARN: VM still running - terminating now with SIGTERM"),
  );
  timers.close();
});

Deno.test("task: an effect whose promise rejects fails the task with its text", async () => {
  const timers = new Timers();
  const tasks = new TaskManager(timers, 0);
  let failed = false;
  const task = tasks.start({
    ...spec,
    run: () =>
      Promise.reject(new TaskFailure("start failed: QEMU exited at launch")),
    onFailure: () => (failed = true),
  });
  await until(() => task.status === "stopped");
  assert.equal(task.exitstatus, "start failed: QEMU exited at launch");
  assert.equal(failed, true);
  timers.close();
});

Deno.test("task: leaveLock locks the guest as the task ends OK, then clears it when told", async () => {
  const timers = new Timers();
  const tasks = new TaskManager(timers, 0);
  const guests = new Map([[100, { lock: undefined as string | undefined }]]);
  tasks.guestOf = (vmid) => guests.get(vmid);
  let ran = false;
  tasks.enqueueOverride({ leaveLock: { lock: "create", clearAfterMs: 40 } });
  const task = tasks.start({ ...spec, run: () => void (ran = true) });
  await until(() => task.status === "stopped");
  assert.equal(task.exitstatus, "OK");
  assert.ok(ran, "the effect happened");
  assert.equal(guests.get(100)?.lock, "create", "locked as the task ended");
  await until(() => guests.get(100)?.lock === undefined);
  timers.close();
});

Deno.test("task: a failed task leaves no lock of leaveLock", async () => {
  const timers = new Timers();
  const tasks = new TaskManager(timers, 0);
  const guest = { lock: undefined as string | undefined };
  tasks.guestOf = () => guest;
  tasks.enqueueOverride({
    exitstatus: "unexpected status",
    leaveLock: { lock: "create" },
  });
  const task = tasks.start(spec);
  await until(() => task.status === "stopped");
  assert.equal(guest.lock, undefined);
  timers.close();
});
