/** The simulator's task end timestamp the task-end benchmark measures from. */
import assert from "node:assert/strict";
import { startSimulator } from "../../simulator/simulator.ts";

Deno.test("simulator: a task records when it ended, and tasks() lists it", async () => {
  const token = { id: "root@pam!t", secret: "s" };
  const sim = await startSimulator({
    nodes: ["pve1"],
    guests: [{
      vmid: 100,
      node: "pve1",
      type: "qemu",
      name: "a",
      status: "stopped",
    }],
    tokens: [token],
  });
  try {
    sim.nextTask({ durationMs: 100 });
    const before = Date.now();
    const res = await fetch(
      `${sim.url}/api2/json/nodes/pve1/qemu/100/status/start`,
      {
        method: "POST",
        headers: { authorization: `PVEAPIToken=${token.id}=${token.secret}` },
      },
    );
    const upid = (await res.json()).data as string;
    assert.equal(sim.tasks().at(-1)?.upid, upid);
    assert.equal(sim.task(upid)?.endedAt, undefined);
    await new Promise((r) => setTimeout(r, 200));
    const ended = sim.task(upid)?.endedAt;
    assert.ok(ended !== undefined && ended - before >= 95, `ended ${ended}`);
    assert.equal(sim.task(upid)?.status, "stopped");
  } finally {
    await sim.close();
  }
});
