/**
 * convertToTemplate end to end, both models: success means the config says `template: 1` AND the
 * cluster lists the guest as a template; gated like delete; a running guest is refused, or shut
 * down first (verified) with shutdownFirst; a template already is done without a request.
 */
import assert from "node:assert/strict";
import { demoGuests } from "../../simulator/demo_cluster.ts";
import type { SimGuest } from "../../simulator/types.ts";
import { model as lxcModel } from "../../js/proxmox_lxc.ts";
import { type Env, withEnv, written } from "./env.ts";

function vm(over: Partial<SimGuest> = {}): SimGuest {
  return {
    vmid: 700,
    node: "pve1",
    type: "qemu",
    name: "gold",
    status: "stopped",
    tags: ["swamp"],
    config: { memory: 1024, scsi0: "local-lvm:vm-700-disk-0,size=8G" },
    ...over,
  };
}

function ct(over: Partial<SimGuest> = {}): SimGuest {
  return {
    vmid: 710,
    node: "pve1",
    type: "lxc",
    name: "gold-ct",
    status: "stopped",
    tags: ["swamp"],
    config: { hostname: "gold-ct", rootfs: "local-lvm:vm-710-disk-0,size=8G" },
    ...over,
  };
}

const templateRequests = (env: Env) =>
  env.sim.requests.filter((q) =>
    q.method === "POST" && q.path.endsWith("/template")
  );

Deno.test("convertToTemplate: a stopped managed VM becomes a template, its disks base volumes", async () => {
  await withEnv({ guests: [...demoGuests(), vm()] }, async (env) => {
    const r = await env.run("convertToTemplate", { vmid: 700 });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(written(r, "vm-700").template, true);
    assert.match(String(written(r, "vm-700").lastTask), /:qmtemplate:700:/);
    const g = env.sim.guest(700);
    assert.equal(g?.config.template, 1);
    assert.equal(g?.config.scsi0, "local-lvm:base-700-disk-0,size=8G");
  });
});

Deno.test("convertToTemplate: a running VM is refused before any request changes it", async () => {
  await withEnv(
    { guests: [...demoGuests(), vm({ status: "running" })] },
    async (env) => {
      const r = await env.run("convertToTemplate", { vmid: 700 });
      assert.equal(r.status, "failed");
      assert.match(
        r.error ?? "",
        /is running: PVE converts only a stopped guest.*shutdownFirst: true/,
      );
      assert.equal(templateRequests(env).length, 0);
      assert.equal(env.sim.guest(700)?.status, "running");
    },
  );
});

Deno.test("convertToTemplate: shutdownFirst shuts a running VM down (verified) and converts it", async () => {
  await withEnv(
    { guests: [...demoGuests(), vm({ status: "running" })] },
    async (env) => {
      const r = await env.run("convertToTemplate", {
        vmid: 700,
        shutdownFirst: true,
      });
      assert.equal(r.status, "succeeded", r.error);
      assert.equal(env.sim.guest(700)?.status, "stopped");
      assert.equal(env.sim.guest(700)?.config.template, 1);
    },
  );
});

Deno.test("convertToTemplate: an unmanaged or production VM is refused unless force", async () => {
  for (const tags of [["web"], ["swamp", "production"]]) {
    await withEnv({ guests: [...demoGuests(), vm({ tags })] }, async (env) => {
      const r = await env.run("convertToTemplate", { vmid: 700 });
      assert.equal(r.status, "failed");
      assert.match(
        r.error ?? "",
        /refusing to convert \(to a template\) VM 700/,
      );
      assert.equal(templateRequests(env).length, 0);
      const forced = await env.run("convertToTemplate", {
        vmid: 700,
        force: true,
      });
      assert.equal(forced.status, "succeeded", forced.error);
    });
  }
});

Deno.test("convertToTemplate: a template already is done without a request (re-run)", async () => {
  await withEnv({ guests: [...demoGuests(), vm()] }, async (env) => {
    assert.equal(
      (await env.run("convertToTemplate", { vmid: 700 })).status,
      "succeeded",
    );
    const again = await env.run("convertToTemplate", { vmid: 700 });
    assert.equal(again.status, "succeeded", again.error);
    assert.ok(again.logs.some((l) => /already is a template/.test(l.message)));
    assert.equal(templateRequests(env).length, 1);
  });
});

Deno.test("convertToTemplate: a task that ends OK without setting the flag fails, saying so", async () => {
  await withEnv(
    {
      guests: [...demoGuests(), vm()],
      globalArgs: { taskTimeoutSec: 2, pollIntervalSec: 1 },
    },
    async (env) => {
      env.sim.nextTask({ noEffect: true });
      const r = await env.run("convertToTemplate", { vmid: 700 });
      assert.equal(r.status, "failed");
      assert.match(r.error ?? "", /do not both show it as a template/);
      assert.notEqual(written(r, "vm-700").template, true);
    },
  );
});

Deno.test("convertToTemplate (lxc): PVE answers null, the config and listing decide", async () => {
  await withEnv(
    { guests: [...demoGuests(), ct()], model: lxcModel },
    async (env) => {
      const r = await env.run("convertToTemplate", { vmid: 710 });
      assert.equal(r.status, "succeeded", r.error);
      assert.equal(written(r, "ct-710").template, true);
      assert.equal(env.sim.guest(710)?.config.template, 1);
      assert.equal(
        env.sim.guest(710)?.config.rootfs,
        "local-lvm:base-710-disk-0,size=8G",
      );
      assert.ok(env.sim.tasks().some((t) => t.type === "vztemplate"));
    },
  );
});
