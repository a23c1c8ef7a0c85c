/**
 * Progress, end to end: every method logs what it runs on first and what it observed last; a clone
 * whose task runs 6.5 s logs one progress line (after 5 s, at info) naming the task and PVE's own
 * progress from the task log, which the simulator writes as qemu-server's qemu-img convert does; a
 * short clone logs none.
 */
import assert from "node:assert/strict";
import { demoGuests } from "../../simulator/demo_cluster.ts";
import { withEnv } from "./env.ts";
import { qemuTemplate } from "./qemu_fixture.ts";

const guests = () => [
  ...demoGuests().filter((g) => g.vmid !== 9000),
  qemuTemplate(),
];

const progressLines = (logs: { level: string; message: string }[]) =>
  logs.filter((l) => l.message.startsWith("waiting for"));

Deno.test("progress: a clone that takes 6.5 s says what it waits for and PVE's transferred … of …", async () => {
  await withEnv({ guests: guests() }, async (env) => {
    env.sim.nextTask({ durationMs: 6500 });
    const r = await env.run("clone", {
      templateId: 9000,
      vmid: 321,
      name: "slow-clone",
    });
    assert.equal(r.status, "succeeded", r.error);
    const lines = progressLines(r.logs);
    assert.equal(lines.length, 1, JSON.stringify(lines));
    assert.equal(lines[0].level, "info");
    assert.match(
      lines[0].message,
      /^waiting for task qmclone of 9000 on node pve1 — [56] s so far; PVE: transferred [\d.]+ GiB of 8\.0 GiB \([\d.]+%\)$/,
    );
  });
});

Deno.test("progress: a short clone logs no progress line", async () => {
  await withEnv({ guests: guests() }, async (env) => {
    const r = await env.run("clone", {
      templateId: 9000,
      vmid: 322,
      name: "quick-clone",
    });
    assert.equal(r.status, "succeeded", r.error);
    assert.deepEqual(progressLines(r.logs), []);
  });
});

Deno.test("progress: a method's first info line says what it runs on, its last what it observed", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("stop", { vmid: 100 });
    const info = r.logs.filter((l) => l.level === "info").map((l) => l.message);
    assert.equal(
      info.find((m) => m.startsWith("running")),
      "running stop on VM 100",
    );
    assert.equal(info.at(-1), "VM 100 on node pve1 is stopped");
    const node = await env.run("nodeStatus", { node: "pve2" });
    assert.ok(
      node.logs.some((l) => l.message === "running nodeStatus on node pve2"),
    );
  });
});
