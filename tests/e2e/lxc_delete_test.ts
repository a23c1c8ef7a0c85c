/**
 * delete of containers end to end: the qemu model's gates and verification on the lxc paths, and
 * ONLY the container's own ct-<vmid> record written.
 */
import assert from "node:assert/strict";
import { written } from "./env.ts";
import { sent, withCt } from "./lxc_fixture.ts";

Deno.test("lxc delete: a stopped managed container is deleted, confirmed gone and recorded deleted", async () => {
  await withCt({}, async (env) => {
    const r = await env.run("delete", { vmid: 301 });
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "ct-301");
    assert.equal(rec.status, "deleted");
    assert.equal(rec.present, false);
    assert.equal(rec.name, "dhcp-ct");
    assert.match(String(rec.lastTask), /:vzdestroy:301:/);
    assert.equal(env.sim.guest(301), undefined);
    const del = sent(env, "DELETE", "/nodes/pve1/lxc/301");
    assert.deepEqual(del[0].query, {
      purge: "1",
      "destroy-unreferenced-disks": "1",
    });
  });
});

Deno.test("lxc delete: only this container's record is written; other records stay live", async () => {
  await withCt({}, async (env) => {
    await env.run("lookup", { vmid: 300 });
    await env.run("lookup", { vmid: 302 });
    await env.run("getConfig", { vmid: 300 });
    const r = await env.run("delete", { vmid: 301 });
    assert.equal(r.status, "succeeded", r.error);
    assert.deepEqual(r.written.map((w) => w.instance), ["ct-301"]);
    for (const other of ["ct-300", "ct-302", "ct-300-config"]) {
      const latest = env.repo.latest(other) as Record<string, unknown>;
      assert.equal(latest.deletedAt, undefined, other);
      assert.equal(env.repo.versions(other).length, 1, other);
    }
  });
});

Deno.test("lxc delete: a running managed container is stopped first, then deleted", async () => {
  await withCt({}, async (env) => {
    const r = await env.run("delete", { vmid: 300 });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(sent(env, "POST", "/lxc/300/status/stop").length, 1);
    assert.equal(env.sim.guest(300), undefined);
  });
});

Deno.test("lxc delete: a container on another node is deleted there", async () => {
  await withCt({}, async (env) => {
    const r = await env.run("delete", { vmid: 302 });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(sent(env, "DELETE", "/nodes/pve2/lxc/302").length, 1);
    assert.equal(written(r, "ct-302").node, "pve2");
  });
});

Deno.test("lxc delete: unmanaged and production containers are refused; force overrides", async () => {
  await withCt({}, async (env) => {
    const plain = await env.run("delete", { vmid: 303 });
    assert.equal(plain.status, "failed");
    assert.match(plain.error ?? "", /^refusing to delete container 303/);
    const prod = await env.run("delete", { vmid: 304 });
    assert.equal(prod.status, "failed");
    assert.match(prod.error ?? "", /`production`/);
    assert.equal(sent(env, "DELETE", "/lxc/304").length, 0);
    assert.equal(written(prod, "ct-304").present, true);
    const forced = await env.run("delete", { vmid: 304, force: true });
    assert.equal(forced.status, "succeeded", forced.error);
    assert.match(
      String((written(forced, "ct-304").warnings as string[])[0]),
      /overrides the safety gate/,
    );
  });
});

Deno.test("lxc delete: a failed destroy task fails with PVE's words and records the state", async () => {
  await withCt({}, async (env) => {
    env.sim.nextTask({ exitstatus: "can't remove CT 301 - storage busy" });
    const r = await env.run("delete", { vmid: 301 });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /storage busy/);
    assert.equal(written(r, "ct-301").present, true);
  });
});

Deno.test("lxc delete: an absent container succeeds and is recorded absent", async () => {
  await withCt({}, async (env) => {
    const r = await env.run("delete", { vmid: 399 });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(written(r, "ct-399").status, "absent");
    assert.equal(sent(env, "DELETE", "/lxc/399").length, 0);
  });
});

Deno.test("lxc delete: a VM's VMID is refused for the lxc model", async () => {
  await withCt({}, async (env) => {
    const r = await env.run("delete", { vmid: 100 });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /is a qemu guest on node pve1, not a lxc/);
    assert.equal(r.written.length, 0);
    assert.ok(env.sim.guest(100));
  });
});
