/**
 * create and clone verify what was asked, end to end: the simulator's `stores` fault lets the
 * creating task run to its end but leaves the new guest with another value than the request's
 * (PVE clamping memory, keeping a property the request dropped, a disk left on another storage).
 * The method must fail naming the key, what PVE stored and what was asked, and its record must hold
 * what was observed.
 */
import assert from "node:assert/strict";
import { demoGuests } from "../../simulator/demo_cluster.ts";
import type { ConfigValue } from "../../simulator/types.ts";
import { CREATE_400, withCt } from "./lxc_fixture.ts";
import { qemuTemplate } from "./qemu_fixture.ts";
import { type Env, withEnv, written } from "./env.ts";

/** Arms the `stores` fault on the request that creates container 400. */
function storesOnCreate(env: Env, config: Record<string, ConfigValue>) {
  env.sim.fault({
    method: "POST",
    pathRegex: "^/api2/json/nodes/pve1/lxc$",
    kind: "stores",
    config,
  });
}

for (const via of ["api", "ssh"] as const) {
  Deno.test(`create (${via}): memory PVE stored other than asked fails naming both values`, async () => {
    await withCt({ via }, async (env) => {
      storesOnCreate(env, { memory: 512 });
      const r = await env.run("create", { ...CREATE_400, memory: 1024 });
      assert.equal(r.status, "failed");
      assert.match(
        r.error ?? "",
        /container 400 on node pve1 exists, but not as requested/,
      );
      assert.match(
        r.error ?? "",
        /`memory` is "512", not the requested "1024"/,
      );
      const rec = written(r, "ct-400");
      assert.equal(rec.present, true);
      assert.equal(rec.maxMemBytes, 512 * 2 ** 20, "the memory PVE holds");
    });
  });
}

Deno.test("create: a net0 property PVE kept though the request left it out fails naming it", async () => {
  await withCt({}, async (env) => {
    const net0 = "name=eth0,bridge=vmbr0,hwaddr=BC:24:11:0A:0B:0C,ip=dhcp";
    storesOnCreate(env, { net0: `${net0},firewall=1` });
    const r = await env.run("create", {
      ...CREATE_400,
      config: { net0: "name=eth0,bridge=vmbr0,ip=dhcp" },
    });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /`net0` is "[^"]*firewall=1"/);
    assert.match(
      r.error ?? "",
      /not the requested "name=eth0,bridge=vmbr0,ip=dhcp"/,
    );
    assert.equal(written(r, "ct-400").present, true);
  });
});

Deno.test("create: settings stored as asked succeed (the stores fault's control)", async () => {
  await withCt({}, async (env) => {
    storesOnCreate(env, { memory: 1024 });
    const r = await env.run("create", { ...CREATE_400, memory: 1024 });
    assert.equal(r.status, "succeeded", r.error);
  });
});

const template = qemuTemplate();

for (const via of ["api", "ssh"] as const) {
  Deno.test(`clone (${via}): a disk PVE left on another storage than asked fails naming it`, async () => {
    await withEnv({ guests: [...demoGuests(), template], via }, async (env) => {
      env.sim.fault({
        method: "POST",
        pathRegex: "/qemu/9000/clone$",
        kind: "stores",
        config: { scsi0: "local-zfs:vm-300-disk-0,size=8G" },
      });
      const r = await env.run("clone", {
        templateId: 9000,
        vmid: 300,
        name: "web2",
        storage: "local-lvm",
      });
      assert.equal(r.status, "failed");
      assert.match(
        r.error ?? "",
        /not every disk is on the requested storage "local-lvm": scsi0 is "local-zfs:vm-300-disk-0,size=8G"/,
      );
      const rec = written(r, "vm-300");
      assert.equal(rec.present, true);
      assert.equal(rec.name, "web2");
      assert.equal(rec.maxDiskBytes, 8 * 2 ** 30, "the disk PVE holds");
    });
  });
}
