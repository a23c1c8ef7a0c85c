/**
 * resize of containers end to end: rootfs (the default) or an mpN grows, the task is followed, and
 * success means the volume's size= in the config reached the target — the qemu resizeDisk logic on
 * the container's volumes.
 */
import assert from "node:assert/strict";
import { written } from "./env.ts";
import { container, sent, withCt } from "./lxc_fixture.ts";

Deno.test("lxc resize: rootfs grows by +N and the config shows the target", async () => {
  await withCt({}, async (env) => {
    const r = await env.run("resize", { vmid: 301, size: "+2G" });
    assert.equal(r.status, "succeeded", r.error);
    assert.match(String(env.sim.guest(301)?.config.rootfs), /size=10G/);
    const rec = written(r, "ct-301");
    assert.equal(rec.lastOperation, "resize");
    assert.match(String(rec.lastTask), /:resize:301:/);
    const put = sent(env, "PUT", "/nodes/pve1/lxc/301/resize");
    assert.deepEqual(Object.fromEntries(put[0].form), {
      disk: "rootfs",
      size: "+2G",
    });
  });
});

Deno.test("lxc resize: a mount point of a container on another node grows to N", async () => {
  const withMp = container(320, {
    node: "pve2",
    config: { mp0: "local-lvm:vm-320-disk-1,mp=/data,size=4G" },
  });
  await withCt({ extra: [withMp] }, async (env) => {
    const r = await env.run("resize", { vmid: 320, disk: "mp0", size: "6G" });
    assert.equal(r.status, "succeeded", r.error);
    assert.match(String(env.sim.guest(320)?.config.mp0), /size=6G/);
    assert.equal(sent(env, "PUT", "/nodes/pve2/lxc/320/resize").length, 1);
  });
});

Deno.test("lxc resize: shrinking fails with PVE's words and records the container", async () => {
  await withCt({}, async (env) => {
    const r = await env.run("resize", { vmid: 301, size: "4G" });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /unable to shrink disk size/);
    assert.equal(written(r, "ct-301").present, true);
  });
});

Deno.test("lxc resize: a mount point the container does not have is named before any change", async () => {
  await withCt({}, async (env) => {
    const r = await env.run("resize", { vmid: 301, disk: "mp5", size: "+1G" });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /has no disk mp5 \(its disks: rootfs\)/);
    assert.equal(sent(env, "PUT", "/resize").length, 0);
  });
});

Deno.test("lxc resize: a VM disk name is refused by the argument rules", async () => {
  await withCt({}, async (env) => {
    const r = await env.run("resize", {
      vmid: 301,
      disk: "scsi0",
      size: "+1G",
    });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /disk/);
    assert.equal(sent(env, "PUT", "/resize").length, 0);
  });
});
