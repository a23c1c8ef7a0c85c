/**
 * Disks read back as PVE stores them, end to end. PVE allocates a requested `<storage>:<GiB>` and
 * writes the drive its own way: the volume it made (on a dir storage
 * `<storage>:<vmid>/vm-<vmid>-disk-<n>.<format>`, the format in its name and no `format=`), its
 * `size`, and each option in canonical form (booleans as 1/0, sorted). `create` and `setConfig`
 * succeed where the simulator — which answers as a real PVE 9.2 node did
 * (tests/simulator/realpve_test.ts) — made the disk, and fail with PVE's reason where it did not.
 */
import assert from "node:assert/strict";
import type { RunResult } from "../../harness/types.ts";
import type { SimStorage } from "../../simulator/node_types.ts";
import { withEnv, written } from "./env.ts";

/** `local` as the real node had it (a dir storage taking disk images) beside the demo's LVM-thin. */
const STORAGES: SimStorage[] = [
  {
    storage: "local",
    type: "dir",
    content: ["images", "iso", "vztmpl", "backup", "rootdir", "snippets"],
  },
  { storage: "local-lvm", type: "lvmthin", content: ["images", "rootdir"] },
];

const said = (r: RunResult) => r.logs.map((l) => l.message).join("\n");

const create = (scsi0: string) => ({
  vmid: 900,
  name: "probe900",
  cores: 1,
  memory: 256,
  config: { scsi0 },
});

Deno.test("create (qemu): a qcow2 disk on a dir storage succeeds as PVE stores it", async () => {
  await withEnv({ sim: { storages: STORAGES } }, async (env) => {
    const r = await env.run("create", create("local:1,format=qcow2"));
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(
      env.sim.guest(900)?.config.scsi0,
      "local:900/vm-900-disk-0.qcow2,size=1G",
    );
    assert.match(
      said(r),
      /scsi0 is local:900\/vm-900-disk-0\.qcow2 \(1073741824 bytes\)/,
    );
    assert.equal(written(r, "vm-900").present, true);
  });
});

Deno.test("create (qemu): cache, discard, iothread and ssd read back as PVE prints them", async () => {
  await withEnv({ sim: { storages: STORAGES } }, async (env) => {
    const r = await env.run(
      "create",
      create("local:1,cache=writeback,discard=on,iothread=on,ssd=true"),
    );
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(
      env.sim.guest(900)?.config.scsi0,
      "local:900/vm-900-disk-0.raw,cache=writeback,discard=on,iothread=1,size=1G,ssd=1",
    );
  });
});

Deno.test("create (qemu): a format the storage cannot hold fails with PVE's reason", async () => {
  await withEnv({ sim: { storages: STORAGES } }, async (env) => {
    const r = await env.run("create", create("local-lvm:1,format=qcow2"));
    assert.equal(r.status, "failed");
    assert.match(
      r.error ?? "",
      /unable to create VM 900 - unsupported format 'qcow2' at \/usr\/share\/perl5\/PVE\/Storage\/LvmThinPlugin\.pm/,
    );
    assert.equal(env.sim.guest(900), undefined);
  });
});

Deno.test("setConfig (qemu): a new qcow2 disk with options reads back applied", async () => {
  await withEnv({ sim: { storages: STORAGES } }, async (env) => {
    const r = await env.run("setConfig", {
      vmid: 102,
      config: { scsi1: "local:2,format=qcow2,cache=none,backup=no" },
    });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(
      env.sim.guest(102)?.config.scsi1,
      "local:102/vm-102-disk-0.qcow2,backup=0,cache=none,size=2G",
    );
  });
});
