/**
 * backup, listBackups, deleteBackup and restore end to end, both models, both transports: success
 * means the storage listed the new archive (size > 0) and the guest was back in its state, the
 * archive was gone, the restored guest was unlocked with the archive's config and disks — never
 * only that a task ended OK. The simulator writes real archives (its own format) that a restore
 * reads back.
 */
import assert from "node:assert/strict";
import { model as lxcModel } from "../../js/proxmox_lxc.ts";
import { demoGuests } from "../../simulator/demo_cluster.ts";
import { backupsOf } from "../../simulator/backups.ts";
import type { SimGuest } from "../../simulator/types.ts";
import { container } from "./lxc_fixture.ts";
import { type Env, type EnvOptions, withEnv, written } from "./env.ts";

/** VM 120 on pve1, running, managed, one 8 GiB disk and a NIC. */
function vm(over: Partial<SimGuest> = {}): SimGuest {
  return {
    vmid: 120,
    node: "pve1",
    type: "qemu",
    name: "web",
    status: "running",
    tags: ["swamp"],
    config: {
      memory: 2048,
      cores: 2,
      scsi0: "local-lvm:vm-120-disk-0,size=8G",
      net0: "virtio=BC:24:11:00:01:20,bridge=vmbr0",
      boot: "order=scsi0",
    },
    ...over,
  };
}

const guests = (over: Partial<SimGuest> = {}) => [...demoGuests(), vm(over)];
type Archive = {
  volid: string;
  size?: number;
  protected: boolean;
  notes?: string;
};

/** The archives the simulator holds on `local` of pve1. */
function onStorage(env: Env): string[] {
  return backupsOf(env.sim.storage("pve1", "local")!).map((b) => b.volid);
}

const VIAS = ["api", "ssh"] as const;

for (const via of VIAS) {
  const opts = (more: EnvOptions = {}): EnvOptions => ({ via, ...more });

  Deno.test(`backup (${via}): a snapshot backup is listed with a size and the VM keeps running`, async () => {
    await withEnv(opts({ guests: guests() }), async (env) => {
      const r = await env.run("backup", {
        vmid: 120,
        storage: "local",
        compress: "zstd",
        notesTemplate: "{{guestname}} on {{node}}",
      });
      assert.equal(r.status, "succeeded", r.error);
      const rec = written(r, "vm-120-backup");
      assert.match(
        String(rec.volid),
        /^local:backup\/vzdump-qemu-120-\d{4}_\d\d_\d\d-\d\d_\d\d_\d\d\.vma\.zst$/,
      );
      assert.ok(Number(rec.size) > 0);
      assert.equal(rec.notes, "web on pve1");
      assert.deepEqual(onStorage(env), [rec.volid]);
      assert.equal(written(r, "vm-120").status, "running");
      assert.match(String(written(r, "vm-120").lastTask), /:vzdump:120:/);
      assert.equal(env.sim.guest(120)?.lock, undefined);
    });
  });

  Deno.test(`backup (${via}): a stop backup of a running VM starts it again, a new boot`, async () => {
    await withEnv(opts({ guests: guests() }), async (env) => {
      const boots = env.sim.guest(120)!.boots ?? 0;
      const r = await env.run("backup", {
        vmid: 120,
        storage: "local",
        mode: "stop",
      });
      assert.equal(r.status, "succeeded", r.error);
      assert.equal(env.sim.guest(120)?.status, "running");
      assert.equal(env.sim.guest(120)?.boots, boots + 1);
      assert.equal(written(r, "vm-120").status, "running");
    });
  });

  Deno.test(`restore (${via}): an archive restored to a new VMID has its config and disks`, async () => {
    await withEnv(opts({ guests: guests() }), async (env) => {
      const b = await env.run("backup", { vmid: 120, storage: "local" });
      assert.equal(b.status, "succeeded", b.error);
      const archive = String(written(b, "vm-120-backup").volid);
      const r = await env.run("restore", {
        archive,
        vmid: 130,
        storage: "local-zfs",
        unique: true,
      });
      assert.equal(r.status, "succeeded", r.error);
      const g = env.sim.guest(130)!;
      assert.equal(g.name, "web");
      assert.equal(g.lock, undefined);
      assert.equal(g.config.memory, 2048);
      assert.equal(g.config.scsi0, "local-zfs:vm-130-disk-0,size=8G");
      assert.notEqual(
        g.config.net0,
        env.sim.guest(120)!.config.net0,
        "unique: a new MAC",
      );
      const rec = written(r, "vm-130");
      assert.equal(rec.status, "stopped");
      assert.equal(rec.lock, undefined);
      assert.match(String(rec.lastTask), /:qmrestore:130:/);
    });
  });
}

Deno.test("backup: a vzdump task that ends OK without its effect fails: no archive, the guest left locked", async () => {
  await withEnv({
    guests: guests({ status: "stopped" }),
    globalArgs: { taskTimeoutSec: 5 },
  }, async (env) => {
    // The worker that "ended OK" never ran: no archive, and the `backup` lock it took stays.
    env.sim.nextTask({ noEffect: true });
    const r = await env.run("backup", { vmid: 120, storage: "local" });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /still locked: backup/);
    assert.equal(written(r, "vm-120").lock, "backup");
    assert.deepEqual(onStorage(env), []);
  });
});

Deno.test("backup: a storage that takes no backups is refused before anything is sent", async () => {
  await withEnv({ guests: guests() }, async (env) => {
    const r = await env.run("backup", { vmid: 120, storage: "local-lvm" });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /can't use storage 'local-lvm' for backups/);
    assert.equal(env.sim.tasks().filter((t) => t.type === "vzdump").length, 0);
  });
});

Deno.test("listBackups and deleteBackup: a protected archive is listed as such and refused; an unprotected one is deleted", async () => {
  await withEnv({ guests: guests() }, async (env) => {
    const kept = await env.run("backup", {
      vmid: 120,
      storage: "local",
      protected: true,
    });
    assert.equal(kept.status, "succeeded", kept.error);
    const plain = await env.run("backup", { vmid: 120, storage: "local" });
    assert.equal(plain.status, "succeeded", plain.error);
    const list = await env.run("listBackups", { storage: "local", vmid: 120 });
    assert.equal(list.status, "succeeded", list.error);
    const listed = written(list, "vm-120-backups").backups as Archive[];
    assert.equal(listed.length, 2);
    assert.deepEqual(listed.map((a) => a.protected), [true, false]);
    const refused = await env.run("deleteBackup", { volid: listed[0].volid });
    assert.equal(refused.status, "failed");
    assert.match(
      refused.error ?? "",
      /^cannot remove protected volume 'backup\/vzdump-qemu-120-/,
    );
    assert.equal(onStorage(env).length, 2);
    const gone = await env.run("deleteBackup", { volid: listed[1].volid });
    assert.equal(gone.status, "succeeded", gone.error);
    assert.deepEqual(onStorage(env), [listed[0].volid]);
    const after = written(gone, "vm-120-backups").backups as Archive[];
    assert.deepEqual(after.map((a) => a.volid), [listed[0].volid]);
    const all = await env.run("listBackups", { storage: "local" });
    assert.equal(
      (written(all, "backups-pve1-local").backups as Archive[]).length,
      1,
    );
  });
});

Deno.test("deleteBackup over ssh: the volume id's slash reaches pvesh's path unharmed", async () => {
  await withEnv({ via: "ssh", guests: guests() }, async (env) => {
    const b = await env.run("backup", { vmid: 120, storage: "local" });
    assert.equal(b.status, "succeeded", b.error);
    const gone = await env.run("deleteBackup", {
      volid: written(b, "vm-120-backup").volid,
    });
    assert.equal(gone.status, "succeeded", gone.error);
    assert.deepEqual(onStorage(env), []);
  });
});

Deno.test("restore: over an existing guest only with force, only when it is stopped", async () => {
  await withEnv({ guests: guests() }, async (env) => {
    const b = await env.run("backup", { vmid: 120, storage: "local" });
    const archive = String(written(b, "vm-120-backup").volid);
    const refused = await env.run("restore", { archive, vmid: 120 });
    assert.equal(refused.status, "failed");
    assert.match(refused.error ?? "", /pass force: true/);
    const running = await env.run("restore", {
      archive,
      vmid: 120,
      force: true,
    });
    assert.equal(running.status, "failed");
    assert.match(running.error ?? "", /running guest — stop it first/);
    env.sim.setGuest(120, { status: "stopped" });
    env.sim.guest(120)!.config.memory = 512;
    const over = await env.run("restore", { archive, vmid: 120, force: true });
    assert.equal(over.status, "succeeded", over.error);
    assert.equal(env.sim.guest(120)?.config.memory, 2048);
  });
});

Deno.test("restore: a restore that leaves the guest locked fails naming the lock", async () => {
  await withEnv(
    { guests: guests(), globalArgs: { taskTimeoutSec: 4 } },
    async (env) => {
      const b = await env.run("backup", { vmid: 120, storage: "local" });
      const archive = String(written(b, "vm-120-backup").volid);
      env.sim.nextTask({ noEffect: true });
      const r = await env.run("restore", { archive, vmid: 131 });
      assert.equal(r.status, "failed");
      assert.match(r.error ?? "", /still locked: create/);
      assert.equal(written(r, "vm-131").lock, "create");
    },
  );
});

Deno.test("restore: without vmid a free VMID is claimed by the restore itself", async () => {
  await withEnv({ guests: guests() }, async (env) => {
    const b = await env.run("backup", { vmid: 120, storage: "local" });
    const archive = String(written(b, "vm-120-backup").volid);
    const r = await env.run("restore", {
      archive,
      vmidRange: { min: 700, max: 710 },
    });
    assert.equal(r.status, "succeeded", r.error);
    assert.ok(env.sim.guest(700));
    assert.ok(
      r.logs.some((l) => /claimed the free VMID 700/.test(l.message)),
      JSON.stringify(r.logs),
    );
  });
});

for (const via of VIAS) {
  Deno.test(`containers (${via}): backup, then restore with restore=1 to a new VMID`, async () => {
    await withEnv({
      via,
      model: lxcModel,
      guests: [
        ...demoGuests(),
        container(300, { name: "web-ct", status: "running" }),
      ],
    }, async (env) => {
      const b = await env.run("backup", {
        vmid: 300,
        storage: "local",
        mode: "suspend",
      });
      assert.equal(b.status, "succeeded", b.error);
      const archive = String(written(b, "ct-300-backup").volid);
      assert.match(archive, /^local:backup\/vzdump-lxc-300-.*\.tar$/);
      assert.equal(env.sim.guest(300)?.status, "running");
      const r = await env.run("restore", { archive, vmid: 310 });
      assert.equal(r.status, "succeeded", r.error);
      const g = env.sim.guest(310)!;
      assert.equal(g.name, "web-ct");
      assert.equal(g.config.rootfs, "local-lvm:vm-310-disk-0,size=8G");
      assert.equal(written(r, "ct-310").status, "stopped");
      assert.match(String(written(r, "ct-310").lastTask), /:vzrestore:310:/);
      const vmArchive = "local:backup/vzdump-qemu-120-2026_12_01-10_00_00.vma";
      const wrong = await env.run("restore", { archive: vmArchive, vmid: 311 });
      assert.equal(wrong.status, "failed");
      assert.match(wrong.error ?? "", /is a backup of a VM/);
    });
  });
}

Deno.test("backup: a suspend backup of a running VM leaves it running again (qmpstatus running)", async () => {
  await withEnv({ guests: guests() }, async (env) => {
    const r = await env.run("backup", {
      vmid: 120,
      storage: "local",
      mode: "suspend",
    });
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "vm-120");
    assert.equal(rec.status, "running");
    assert.equal(rec.qmpStatus, "running");
    const task = env.sim.tasks().find((t) => t.type === "vzdump")!;
    assert.ok(
      task.log.includes("INFO: backup mode: suspend"),
      task.log.join("\n"),
    );
  });
});

Deno.test("backup: a guest locked by another operation is waited out, then backed up", async () => {
  await withEnv({ guests: guests({ lock: "snapshot" }) }, async (env) => {
    setTimeout(() => env.sim.guest(120)!.lock = undefined, 500);
    const r = await env.run("backup", { vmid: 120, storage: "local" });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(onStorage(env).length, 1);
  });
});
