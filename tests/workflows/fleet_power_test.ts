/**
 * The package's fleet-power workflow through the harness: a sync of the tagged guests, then one
 * start or stop per guest that sync recorded present with the tag.
 */
import assert from "node:assert/strict";
import { demoGuests } from "../../simulator/demo_cluster.ts";
import { stepStatuses } from "../../harness/workflow.ts";
import { extraGuest } from "../real_swamp/fixture.ts";
import { withWorkflows } from "./fixture.ts";

/** Two web guests (one per node) and a db guest, all stopped. */
const guests = () => [
  ...demoGuests(),
  extraGuest({ vmid: 120, name: "web-a", tags: ["swamp", "web"] }),
  extraGuest({
    vmid: 121,
    node: "pve2",
    name: "web-b",
    tags: ["swamp", "Web"],
  }),
  extraGuest({ vmid: 122, name: "db-a", tags: ["swamp", "db"] }),
];

Deno.test("fleet-power: start starts every guest tagged web across the cluster, and no other", async () => {
  await withWorkflows({ guests: guests() }, async (w) => {
    const run = await w.run("fleet-power.yaml", {
      tag: "web",
      action: "start",
    });
    assert.equal(run.status, "succeeded");
    assert.deepEqual(stepStatuses(run), {
      sync: "succeeded",
      "start-120": "succeeded",
      "start-121": "succeeded",
    });
    assert.equal(w.env.sim.guest(120)?.status, "running");
    assert.equal(w.env.sim.guest(121)?.status, "running");
    assert.equal(w.env.sim.guest(122)?.status, "stopped");
  });
});

Deno.test("fleet-power: stop acts only on what this run's sync recorded with the tag", async () => {
  await withWorkflows({ guests: guests() }, async (w) => {
    await w.run("fleet-power.yaml", { tag: "web", action: "start" });
    // 121 loses the tag: its record from the first run still carries it.
    w.env.sim.setGuest(121, { tags: ["swamp"] });
    const run = await w.run("fleet-power.yaml", { tag: "web", action: "stop" });
    assert.equal(run.status, "succeeded");
    assert.deepEqual(Object.keys(stepStatuses(run)), ["sync", "stop-120"]);
    assert.equal(w.env.sim.guest(120)?.status, "stopped");
    assert.equal(w.env.sim.guest(121)?.status, "running");
  });
});

Deno.test("fleet-power: a tag no guest carries runs no power step and succeeds", async () => {
  await withWorkflows({ guests: guests() }, async (w) => {
    const run = await w.run("fleet-power.yaml", {
      tag: "nothing",
      action: "start",
    });
    assert.equal(run.status, "succeeded");
    assert.deepEqual(stepStatuses(run), { sync: "succeeded" });
  });
});

Deno.test("fleet-power: an action outside start and stop is refused before anything is sent", async () => {
  await withWorkflows({ guests: guests() }, async (w) => {
    const before = w.env.sim.requests.length;
    await assert.rejects(
      w.run("fleet-power.yaml", { tag: "web", action: "delete" }),
      /action must be one of: "start", "stop"/,
    );
    assert.equal(w.env.sim.requests.length, before);
  });
});
