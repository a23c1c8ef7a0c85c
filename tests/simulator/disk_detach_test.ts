/**
 * Detaching and attaching disks through the config as PVE 9 does it (qemu-server $update_vm_api,
 * vmconfig_delete_or_detach_drive, vmconfig_register_unused_drive, parse_vm_config; pve-container
 * update_pct_config): a deleted drive's volume becomes the next free `unusedN` unless `force`
 * destroys it, deleting an `unusedN` destroys its volume, a volume attached again leaves its
 * `unusedN` and gets the storage's size. Every test starts its own simulator and closes it.
 */

import assert from "node:assert/strict";
import {
  api,
  type ApiParams,
  tokenHeader,
  waitTask,
} from "../../simulator/sim_client.ts";
import {
  type SimGuest,
  type Simulator,
  startSimulator,
} from "../../simulator/simulator.ts";

const TOKEN = { id: "root@pam!ci", secret: "detach-secret" };
const AUTH = { auth: tokenHeader(TOKEN.id, TOKEN.secret) };

/** VM 100 stopped, VM 101 running (default hotplug), CT 200 stopped. */
function guests(): SimGuest[] {
  const vm = (vmid: number, status: "running" | "stopped"): SimGuest => ({
    vmid,
    node: "pve1",
    type: "qemu",
    name: `vm${vmid}`,
    status,
    config: {
      memory: 1024,
      scsi0: `local-lvm:vm-${vmid}-disk-0,size=32G`,
      scsi1: `local-lvm:vm-${vmid}-disk-1,backup=0,size=4G`,
      ide2: "local:iso/debian.iso,media=cdrom",
      ide0: `local-lvm:vm-${vmid}-disk-2,size=2G`,
    },
  });
  return [vm(100, "stopped"), vm(101, "running"), {
    vmid: 200,
    node: "pve1",
    type: "lxc",
    name: "ct200",
    status: "stopped",
    config: {
      arch: "amd64",
      ostype: "debian",
      rootfs: "local-lvm:vm-200-disk-0,size=8G",
      unused0: "local-lvm:vm-200-disk-1",
    },
  }];
}

async function withSim(
  fn: (sim: Simulator) => Promise<void>,
  edit?: (g: SimGuest[]) => void,
): Promise<void> {
  const list = guests();
  edit?.(list);
  const sim = await startSimulator({
    nodes: ["pve1"],
    tokens: [TOKEN],
    guests: list,
    taskDurationMs: 20,
  });
  try {
    await fn(sim);
  } finally {
    await sim.close();
  }
}

function put(sim: Simulator, path: string, params: ApiParams) {
  return api(sim.url, "PUT", path, params, AUTH);
}

async function get(sim: Simulator, path: string, params: ApiParams = {}) {
  return (await api(sim.url, "GET", path, params, AUTH)).body.data;
}

async function volids(sim: Simulator): Promise<string[]> {
  const data = await get(sim, "/nodes/pve1/storage/local-lvm/content");
  return (data as { volid: string }[]).map((v) => v.volid);
}

const VM100 = "/nodes/pve1/qemu/100/config";
const VM101 = "/nodes/pve1/qemu/101/config";

Deno.test("config delete of a disk keeps its volume as the next free unusedN, on its storage", async () => {
  await withSim(async (sim) => {
    assert.equal((await put(sim, VM100, { delete: "scsi1" })).status, 200);
    const c = await get(sim, VM100);
    assert.equal(c.scsi1, undefined);
    assert.equal(c.unused0, "local-lvm:vm-100-disk-1");
    assert.ok((await volids(sim)).includes("local-lvm:vm-100-disk-1"));
  });
});

Deno.test("config delete of a disk takes the lowest unusedN free", async () => {
  await withSim(async (sim) => {
    await put(sim, VM100, { delete: "scsi1" });
    const c = await get(sim, VM100);
    assert.equal(c.unused0, "local-lvm:vm-100-disk-1");
    assert.equal(c.unused1, "local-lvm:vm-100-disk-9");
  }, (l) => {
    l[0].config!.unused1 = "local-lvm:vm-100-disk-9";
  });
});

Deno.test("config delete of a disk with force=1 destroys its volume", async () => {
  await withSim(async (sim) => {
    assert.equal(
      (await put(sim, VM100, { delete: "scsi1", force: 1 })).status,
      200,
    );
    const c = await get(sim, VM100);
    assert.equal(c.unused0, undefined);
    assert.ok(!(await volids(sim)).includes("local-lvm:vm-100-disk-1"));
  });
});

Deno.test("config delete of an unusedN destroys its volume", async () => {
  await withSim(async (sim) => {
    await put(sim, VM100, { delete: "scsi1" });
    await put(sim, VM100, { delete: "unused0" });
    assert.equal((await get(sim, VM100)).unused0, undefined);
    assert.ok(!(await volids(sim)).includes("local-lvm:vm-100-disk-1"));
  });
});

Deno.test("config delete of an unusedN of a protected VM is refused with PVE's words", async () => {
  await withSim(async (sim) => {
    const r = await put(sim, VM100, { delete: "unused0" });
    assert.equal(r.status, 500);
    assert.equal(
      r.body.message.trim(),
      "can't remove unused disk 'local-lvm:vm-100-disk-7' - protection mode enabled",
    );
  }, (l) => {
    l[0].config!.protection = 1;
    l[0].config!.unused0 = "local-lvm:vm-100-disk-7";
  });
});

Deno.test("config delete of a drive of a protected VM is refused with PVE's words", async () => {
  await withSim(async (sim) => {
    const r = await put(sim, VM100, { delete: "scsi1" });
    assert.equal(r.status, 500);
    assert.equal(
      r.body.message.trim(),
      "can't remove drive 'scsi1' - protection mode enabled",
    );
  }, (l) => {
    l[0].config!.protection = 1;
  });
});

Deno.test("config delete of a CD-ROM leaves no unusedN", async () => {
  await withSim(async (sim) => {
    await put(sim, VM100, { delete: "ide2" });
    const c = await get(sim, VM100);
    assert.equal(c.ide2, undefined);
    assert.ok(!Object.keys(c).some((k) => k.startsWith("unused")));
  });
});

Deno.test("config delete of another VM's volume drops it from the config without an unusedN", async () => {
  await withSim(async (sim) => {
    await put(sim, VM100, { delete: "scsi2" });
    const c = await get(sim, VM100);
    assert.ok(!Object.keys(c).some((k) => k.startsWith("unused")));
    assert.ok((await volids(sim)).includes("local-lvm:vm-101-disk-0"));
  }, (l) => {
    l[0].config!.scsi2 = "local-lvm:vm-101-disk-0,size=32G";
  });
});

Deno.test("running VM with disk hot-plug: a SCSI disk's delete unplugs it at once, its volume unused", async () => {
  await withSim(async (sim) => {
    await put(sim, VM101, { delete: "scsi1" });
    const c = await get(sim, VM101, { current: 1 });
    assert.equal(c.scsi1, undefined);
    assert.equal(c.unused0, "local-lvm:vm-101-disk-1");
  });
});

Deno.test("running VM: an IDE disk's delete waits pending; the volume becomes unused when applied", async () => {
  await withSim(async (sim) => {
    await put(sim, VM101, { delete: "ide0" });
    const pending = await get(sim, "/nodes/pve1/qemu/101/pending");
    const row = (pending as { key: string; delete?: number }[])
      .find((r) => r.key === "ide0");
    assert.equal(row?.delete, 1);
    assert.match(
      String((await get(sim, VM101, { current: 1 })).ide0),
      /disk-2/,
    );
    assert.equal((await get(sim, VM101, { current: 1 })).unused0, undefined);
    // vm_start applies the pending changes (vmconfig_apply_pending).
    for (const action of ["stop", "start"]) {
      const r = await api(
        sim.url,
        "POST",
        `/nodes/pve1/qemu/101/status/${action}`,
        {},
        AUTH,
      );
      await waitTask(sim.url, r.body.data, AUTH);
    }
    const c = await get(sim, VM101, { current: 1 });
    assert.equal(c.ide0, undefined);
    assert.equal(c.unused0, "local-lvm:vm-101-disk-2");
  });
});

Deno.test("running VM without disk hot-plug: a SCSI disk's delete waits pending", async () => {
  await withSim(async (sim) => {
    await put(sim, VM101, { delete: "scsi1" });
    const c = await get(sim, VM101, { current: 1 });
    assert.match(String(c.scsi1), /vm-101-disk-1/);
    assert.equal(c.unused0, undefined);
  }, (l) => {
    l[1].config!.hotplug = "network,usb";
  });
});

Deno.test("attach: a disk set to the guest's unused volume takes it out of unusedN and gets the storage's size", async () => {
  await withSim(async (sim) => {
    await put(sim, VM100, { delete: "scsi1" });
    const r = await put(sim, VM100, {
      scsi3: "local-lvm:vm-100-disk-1,discard=on",
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const c = await get(sim, VM100);
    assert.equal(c.scsi3, "local-lvm:vm-100-disk-1,discard=on,size=4G");
    assert.equal(c.unused0, undefined);
  });
});

Deno.test("attach: a volume the storage does not hold is refused: volume … does not exist", async () => {
  await withSim(async (sim) => {
    const r = await put(sim, VM100, { scsi3: "local-lvm:vm-100-disk-9" });
    assert.equal(r.status, 500);
    assert.equal(
      r.body.message.trim(),
      "volume local-lvm:vm-100-disk-9 does not exist",
    );
  });
});

Deno.test("attach on a running VM without disk hot-plug waits pending, and the unusedN is gone already", async () => {
  await withSim(async (sim) => {
    await put(sim, VM101, { scsi3: "local-lvm:vm-101-disk-5" });
    const current = await get(sim, VM101, { current: 1 });
    assert.equal(current.scsi3, undefined);
    assert.equal(current.unused0, undefined);
    assert.equal(
      (await get(sim, VM101)).scsi3,
      "local-lvm:vm-101-disk-5,size=16G",
    );
  }, (l) => {
    l[1].config!.hotplug = "network";
    l[1].config!.unused0 = "local-lvm:vm-101-disk-5";
    l[1].volumeSizes = { "local-lvm:vm-101-disk-5": 16 * 2 ** 30 };
  });
});

Deno.test("replacing a disk's volume keeps the old volume as unusedN", async () => {
  await withSim(async (sim) => {
    await put(sim, VM100, { scsi1: "local-lvm:1" });
    const c = await get(sim, VM100);
    assert.match(String(c.scsi1), /^local-lvm:vm-100-disk-3,/);
    assert.equal(c.unused0, "local-lvm:vm-100-disk-1");
  });
});

Deno.test("container: a mount point set to its unused volume takes it out of unusedN and gets its size", async () => {
  await withSim(async (sim) => {
    const r = await put(sim, "/nodes/pve1/lxc/200/config", {
      mp0: "local-lvm:vm-200-disk-1,mp=/data",
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const c = await get(sim, "/nodes/pve1/lxc/200/config");
    assert.equal(c.mp0, "local-lvm:vm-200-disk-1,mp=/data,size=3G");
    assert.equal(c.unused0, undefined);
  }, (l) => {
    l[2].volumeSizes = { "local-lvm:vm-200-disk-1": 3 * 2 ** 30 };
  });
});

Deno.test("running VM: a forced delete that waits pending shows delete 2 and frees the volume when applied", async () => {
  await withSim(async (sim) => {
    await put(sim, VM101, { delete: "ide0", force: 1 });
    const pending = await get(sim, "/nodes/pve1/qemu/101/pending");
    const row = (pending as { key: string; delete?: number }[])
      .find((r) => r.key === "ide0");
    assert.equal(row?.delete, 2);
    for (const action of ["stop", "start"]) {
      const r = await api(
        sim.url,
        "POST",
        `/nodes/pve1/qemu/101/status/${action}`,
        {},
        AUTH,
      );
      await waitTask(sim.url, r.body.data, AUTH);
    }
    const c = await get(sim, VM101, { current: 1 });
    assert.equal(c.ide0, undefined);
    assert.equal(c.unused0, undefined);
    assert.ok(!(await volids(sim)).includes("local-lvm:vm-101-disk-2"));
  });
});
