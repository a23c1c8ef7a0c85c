/**
 * moveDisk, attachDisk and detachDisk end to end, both models: a move succeeds only when the config
 * holds the disk on the target storage and the source is where the request put it (unusedN, or gone
 * from its storage); a detach when its volume is kept as unusedN (or destroyed and unlisted); an
 * attach when the volume is in its slot and out of unusedN. Refusals come before any change.
 */
import assert from "node:assert/strict";
import { api, tokenHeader } from "../../simulator/sim_client.ts";
import {
  type Env,
  isCheckRequest,
  TOKEN_ID,
  TOKEN_SECRET,
  withEnv,
  written,
} from "./env.ts";
import { withCt } from "./lxc_fixture.ts";

const OLD = "local-lvm:vm-102-disk-0";

/** VM 102 (stopped) with an 8 GiB scsi0 on local-lvm. */
function withDisk(env: Env, vmid = 102): void {
  env.sim.guest(vmid)!.config.scsi0 = `local-lvm:vm-${vmid}-disk-0,size=8G`;
}

/** The package's mutations, swamp's pre-flight checks left out. */
const mutations = (env: Env) =>
  env.sim.requests.filter((q) => !isCheckRequest(q.path) && q.method !== "GET");

/** The volids storage `storage` of pve1 lists for guest `vmid`, as PVE's API answers. */
async function listed(
  env: Env,
  storage: string,
  vmid: number,
): Promise<string[]> {
  const path = `/nodes/pve1/storage/${storage}/content`;
  const auth = tokenHeader(TOKEN_ID, TOKEN_SECRET);
  const r = await api(env.sim.url, "GET", path, { vmid }, { auth });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return (r.body.data as { volid: string }[]).map((v) => v.volid);
}

Deno.test("moveDisk: a stopped VM's disk moves to the target storage and the source is kept as unused0", async () => {
  await withEnv({}, async (env) => {
    withDisk(env);
    const r = await env.run("moveDisk", { vmid: 102, storage: "local-zfs" });
    assert.equal(r.status, "succeeded", r.error);
    const config = env.sim.guest(102)!.config;
    assert.match(String(config.scsi0), /^local-zfs:vm-102-disk-\d+,.*size=8G/);
    assert.equal(config.unused0, OLD);
    assert.equal(written(r, "vm-102").lastOperation, "moveDisk");
  });
});

Deno.test("moveDisk: a running VM's disk is mirrored and, with delete, the source is gone from its storage", async () => {
  await withEnv({}, async (env) => {
    withDisk(env, 100);
    const r = await env.run("moveDisk", {
      vmid: 100,
      disk: "scsi0",
      storage: "local-zfs",
      delete: true,
    });
    assert.equal(r.status, "succeeded", r.error);
    const config = env.sim.guest(100)!.config;
    assert.match(String(config.scsi0), /^local-zfs:/);
    assert.ok(!Object.keys(config).some((k) => k.startsWith("unused")));
    assert.deepEqual(await listed(env, "local-lvm", 100), []);
    assert.equal(env.sim.guest(100)!.status, "running");
  });
});

Deno.test("moveDisk: a disk already on the target succeeds without a request", async () => {
  await withEnv({}, async (env) => {
    withDisk(env);
    const r = await env.run("moveDisk", { vmid: 102, storage: "local-lvm" });
    assert.equal(r.status, "succeeded", r.error);
    assert.deepEqual(mutations(env), []);
  });
});

Deno.test("moveDisk: a disk the config lacks is refused before any request", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("moveDisk", { vmid: 102, storage: "local-zfs" });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /its config has no scsi0; nothing was sent/);
    assert.deepEqual(mutations(env), []);
  });
});

Deno.test("moveDisk: a target storage that takes no VM images is refused before any request", async () => {
  await withEnv({}, async (env) => {
    withDisk(env);
    const r = await env.run("moveDisk", { vmid: 102, storage: "local" });
    assert.equal(r.status, "failed");
    assert.match(
      r.error ?? "",
      /storage local does not allow content images .*nothing was sent/,
    );
    assert.deepEqual(mutations(env), []);
  });
});

Deno.test("moveDisk: delete of a disk a snapshot uses is refused before any request", async () => {
  await withEnv({}, async (env) => {
    withDisk(env);
    const snap = await env.run("snapshot", { vmid: 102, name: "before" });
    assert.equal(snap.status, "succeeded", snap.error);
    const moves = mutations(env).length;
    const r = await env.run("moveDisk", {
      vmid: 102,
      storage: "local-zfs",
      delete: true,
    });
    assert.equal(r.status, "failed");
    assert.match(
      r.error ?? "",
      /snapshot "before" uses local-lvm:vm-102-disk-0, and PVE does not move a disk with snapshots and delete the source; nothing was sent/,
    );
    assert.equal(mutations(env).length, moves);
    assert.match(String(env.sim.guest(102)!.config.scsi0), /^local-lvm:/);
  });
});

Deno.test("moveDisk (lxc): delete of a volume a snapshot uses is refused before any request", async () => {
  await withCt({}, async (env) => {
    const snap = await env.run("snapshot", { vmid: 301, name: "before" });
    assert.equal(snap.status, "succeeded", snap.error);
    const moves = mutations(env).length;
    const r = await env.run("moveDisk", {
      vmid: 301,
      storage: "local-zfs",
      delete: true,
    });
    assert.equal(r.status, "failed");
    assert.match(
      r.error ?? "",
      /snapshot "before" uses local-lvm:vm-301-disk-0, .*nothing was sent/,
    );
    assert.equal(mutations(env).length, moves);
    assert.match(String(env.sim.guest(301)!.config.rootfs), /^local-lvm:/);
  });
});

Deno.test("moveDisk (lxc): a running container's volume is refused up front, a stopped one's moves", async () => {
  await withCt({}, async (env) => {
    const running = await env.run("moveDisk", {
      vmid: 300,
      storage: "local-zfs",
    });
    assert.equal(running.status, "failed");
    assert.match(running.error ?? "", /only while it is stopped/);
    assert.deepEqual(mutations(env), []);
    const r = await env.run("moveDisk", { vmid: 301, storage: "local-zfs" });
    assert.equal(r.status, "succeeded", r.error);
    assert.match(String(env.sim.guest(301)!.config.rootfs), /^local-zfs:/);
    assert.equal(env.sim.guest(301)!.config.unused0, "local-lvm:vm-301-disk-0");
  });
});

Deno.test("detachDisk: the detached disk's volume reads back as unused0", async () => {
  await withEnv({}, async (env) => {
    withDisk(env);
    const r = await env.run("detachDisk", { vmid: 102, disk: "scsi0" });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(env.sim.guest(102)!.config.scsi0, undefined);
    assert.equal(env.sim.guest(102)!.config.unused0, OLD);
    assert.deepEqual(await listed(env, "local-lvm", 102), [OLD]);
  });
});

Deno.test("detachDisk: destroy frees the volume: gone from the config and from its storage", async () => {
  await withEnv({}, async (env) => {
    withDisk(env);
    const r = await env.run("detachDisk", {
      vmid: 102,
      disk: "scsi0",
      destroy: true,
    });
    assert.equal(r.status, "succeeded", r.error);
    const config = env.sim.guest(102)!.config;
    assert.ok(!Object.values(config).some((v) => String(v).includes(OLD)));
    assert.deepEqual(await listed(env, "local-lvm", 102), []);
  });
});

Deno.test("detachDisk: an unusedN is removed only with destroy: true", async () => {
  await withEnv({}, async (env) => {
    env.sim.guest(102)!.config.unused0 = OLD;
    const r = await env.run("detachDisk", { vmid: 102, disk: "unused0" });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /destroy/);
    assert.deepEqual(mutations(env), []);
  });
});

Deno.test("attachDisk: an unused volume goes to the first free scsi slot and leaves unused0", async () => {
  await withEnv({}, async (env) => {
    withDisk(env);
    env.sim.guest(102)!.config.unused0 = "local-lvm:vm-102-disk-1";
    const r = await env.run("attachDisk", {
      vmid: 102,
      volume: "local-lvm:vm-102-disk-1",
    });
    assert.equal(r.status, "succeeded", r.error);
    const config = env.sim.guest(102)!.config;
    assert.match(String(config.scsi1), /^local-lvm:vm-102-disk-1/);
    assert.equal(config.unused0, undefined);
  });
});

Deno.test("attachDisk (lxc): a detached mount point's volume is mounted again at its path", async () => {
  await withCt({}, async (env) => {
    env.sim.guest(301)!.config.unused0 = "local-lvm:vm-301-disk-1";
    const r = await env.run("attachDisk", {
      vmid: 301,
      volume: "local-lvm:vm-301-disk-1",
      mp: "/data",
    });
    assert.equal(r.status, "succeeded", r.error);
    const config = env.sim.guest(301)!.config;
    assert.match(String(config.mp0), /^local-lvm:vm-301-disk-1,.*mp=\/data/);
    assert.equal(config.unused0, undefined);
  });
});

Deno.test("attachDisk: a taken slot is refused before any request", async () => {
  await withEnv({}, async (env) => {
    withDisk(env);
    const r = await env.run("attachDisk", {
      vmid: 102,
      volume: "local-lvm:vm-102-disk-1",
      disk: "scsi0",
    });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /scsi0 holds/);
    assert.deepEqual(mutations(env), []);
  });
});
