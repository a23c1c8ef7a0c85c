/**
 * Moving a disk to another storage as PVE 9 does it: qemu `move_disk` (task `qmmove`, no config
 * lock, a running VM's disk mirrored) and container `move_volume` (task `move_volume`, `lock:
 * disk` while it runs, refused for a running container). The old volume stays as `unusedN` unless
 * `delete` frees it. Every test starts its own simulator and closes it.
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
import type { SimToken } from "../../simulator/types.ts";

const TOKEN = { id: "root@pam!ci", secret: "move-secret" };
const AUTH = { auth: tokenHeader(TOKEN.id, TOKEN.secret) };

/** VM 100 stopped, VM 101 running; CT 200 stopped, CT 201 running. */
function guests(): SimGuest[] {
  const vm = (vmid: number, status: "running" | "stopped"): SimGuest => ({
    vmid,
    node: "pve1",
    type: "qemu",
    name: `vm${vmid}`,
    status,
    config: {
      memory: 1024,
      scsi0: `local-lvm:vm-${vmid}-disk-0,cache=writeback,discard=on,size=32G`,
      ide2: "none,media=cdrom",
    },
  });
  const ct = (vmid: number, status: "running" | "stopped"): SimGuest => ({
    vmid,
    node: "pve1",
    type: "lxc",
    name: `ct${vmid}`,
    status,
    config: {
      arch: "amd64",
      ostype: "debian",
      rootfs: `local-lvm:vm-${vmid}-disk-0,size=8G`,
      mp0: `local-lvm:vm-${vmid}-disk-1,mp=/data,backup=1,size=4G`,
    },
  });
  return [
    vm(100, "stopped"),
    vm(101, "running"),
    ct(200, "stopped"),
    ct(201, "running"),
  ];
}

async function withSim(
  fn: (sim: Simulator) => Promise<void>,
  opts: {
    taskDurationMs?: number;
    tokens?: SimToken[];
    edit?: (g: SimGuest[]) => void;
  } = {},
): Promise<void> {
  const list = guests();
  opts.edit?.(list);
  const sim = await startSimulator({
    nodes: ["pve1"],
    tokens: [TOKEN, ...(opts.tokens ?? [])],
    guests: list,
    taskDurationMs: opts.taskDurationMs ?? 20,
  });
  try {
    await fn(sim);
  } finally {
    await sim.close();
  }
}

function moveDisk(
  sim: Simulator,
  vmid: number,
  params: ApiParams,
  auth = AUTH,
) {
  return api(
    sim.url,
    "POST",
    `/nodes/pve1/qemu/${vmid}/move_disk`,
    params,
    auth,
  );
}

function moveVolume(sim: Simulator, vmid: number, params: ApiParams) {
  return api(
    sim.url,
    "POST",
    `/nodes/pve1/lxc/${vmid}/move_volume`,
    params,
    AUTH,
  );
}

/** Starts a move, waits for its task and returns the task's status and log lines. */
async function moved(sim: Simulator, path: string, params: ApiParams) {
  const r = await api(sim.url, "POST", path, params, AUTH);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const status = await waitTask(sim.url, r.body.data, AUTH);
  const log = await api(
    sim.url,
    "GET",
    `/nodes/pve1/tasks/${encodeURIComponent(r.body.data)}/log`,
    { limit: 500 },
    AUTH,
  );
  return {
    upid: String(r.body.data),
    status,
    lines: (log.body.data as { t: string }[]).map((l) => l.t),
  };
}

async function config(sim: Simulator, path: string) {
  return (await api(sim.url, "GET", path, {}, AUTH)).body.data;
}

async function volids(sim: Simulator, storage: string): Promise<string[]> {
  const r = await api(
    sim.url,
    "GET",
    `/nodes/pve1/storage/${storage}/content`,
    {},
    AUTH,
  );
  return (r.body.data as { volid: string }[]).map((v) => v.volid);
}

const QM = "/nodes/pve1/qemu";
const CT = "/nodes/pve1/lxc";

Deno.test("move_disk: the disk lands on the target as its next free vm-<vmid>-disk-N, keeping its options and size", async () => {
  await withSim(async (sim) => {
    const { status, upid } = await moved(sim, `${QM}/100/move_disk`, {
      disk: "scsi0",
      storage: "local-zfs",
    });
    assert.equal(status.exitstatus, "OK");
    assert.match(upid, /:qmmove:100:root@pam!ci:$/);
    const c = await config(sim, `${QM}/100/config`);
    assert.equal(
      c.scsi0,
      "local-zfs:vm-100-disk-0,cache=writeback,discard=on,size=32G",
    );
  });
});

Deno.test("move_disk: without delete the old volume is kept as unused0 and stays on its storage", async () => {
  await withSim(async (sim) => {
    const { lines } = await moved(sim, `${QM}/100/move_disk`, {
      disk: "scsi0",
      storage: "local-zfs",
    });
    const c = await config(sim, `${QM}/100/config`);
    assert.equal(c.unused0, "local-lvm:vm-100-disk-0");
    assert.ok(
      (await volids(sim, "local-lvm")).includes("local-lvm:vm-100-disk-0"),
    );
    assert.ok(
      lines.includes(
        "adding source volume 'local-lvm:vm-100-disk-0' as 'unused0' to config",
      ),
      lines.join("\n"),
    );
  });
});

Deno.test("move_disk: the kept volume is still as large on its storage", async () => {
  await withSim(async (sim) => {
    await moved(sim, `${QM}/100/move_disk`, {
      disk: "scsi0",
      storage: "local-zfs",
    });
    const r = await api(
      sim.url,
      "GET",
      "/nodes/pve1/storage/local-lvm/content",
      {},
      AUTH,
    );
    const vol = (r.body.data as { volid: string; size: number }[])
      .find((v) => v.volid === "local-lvm:vm-100-disk-0");
    assert.equal(vol?.size, 32 * 2 ** 30);
  });
});

Deno.test("move_disk: with delete the old volume leaves its storage and no unusedN is added", async () => {
  await withSim(async (sim) => {
    const { lines } = await moved(sim, `${QM}/100/move_disk`, {
      disk: "scsi0",
      storage: "local-zfs",
      delete: 1,
    });
    const c = await config(sim, `${QM}/100/config`);
    assert.equal(c.unused0, undefined);
    assert.ok(
      !(await volids(sim, "local-lvm")).includes("local-lvm:vm-100-disk-0"),
    );
    assert.ok(
      lines.includes(
        "removing source volume 'local-lvm:vm-100-disk-0' after successful copy",
      ),
    );
  });
});

Deno.test("move_disk: the new name skips a vm-<vmid>-disk-N the target storage already holds", async () => {
  await withSim(async (sim) => {
    await moved(sim, `${QM}/100/move_disk`, {
      disk: "scsi0",
      storage: "local-zfs",
    });
    const c = await config(sim, `${QM}/100/config`);
    assert.match(String(c.scsi0), /^local-zfs:vm-100-disk-1,/);
  }, {
    edit: (list) => {
      list[0].config!.scsi1 = "local-zfs:vm-100-disk-0,size=1G";
    },
  });
});

Deno.test("move_disk: a running VM's disk is mirrored, and the log says so as qemu-server does", async () => {
  await withSim(async (sim) => {
    const { lines, status } = await moved(sim, `${QM}/101/move_disk`, {
      disk: "scsi0",
      storage: "local-zfs",
    });
    assert.equal(status.exitstatus, "OK");
    for (
      const line of [
        "create full clone of drive scsi0 (local-lvm:vm-101-disk-0)",
        "drive mirror is starting for drive-scsi0",
        "allocated target volume 'local-zfs:vm-101-disk-0'",
        "mirror-scsi0: transferred 32.0 GiB of 32.0 GiB (100.00%) in 0s, ready",
        "all 'mirror' jobs are ready",
        "mirror-scsi0: Completed successfully.",
      ]
    ) assert.ok(lines.includes(line), `${line}\n---\n${lines.join("\n")}`);
    // In the worker's order: allocate, start the mirror, wait until ready, complete.
    const at = (l: string) => lines.indexOf(l);
    assert.ok(
      at("allocated target volume 'local-zfs:vm-101-disk-0'") <
        at("drive mirror is starting for drive-scsi0"),
    );
    assert.ok(
      at("drive mirror is starting for drive-scsi0") <
        at("all 'mirror' jobs are ready"),
    );
  });
});

Deno.test("move_disk: a stopped VM's disk is copied, logging the copy's progress to 100.00%", async () => {
  await withSim(async (sim) => {
    const { lines } = await moved(sim, `${QM}/100/move_disk`, {
      disk: "scsi0",
      storage: "local-zfs",
    });
    assert.ok(lines.includes("transferred 32.0 GiB of 32.0 GiB (100.00%)"));
    assert.ok(!lines.some((l) => l.includes("mirror")), lines.join("\n"));
  });
});

Deno.test("move_disk: the config shows no lock while the move runs (PVE holds only the config file's flock)", async () => {
  await withSim(async (sim) => {
    const r = await moveDisk(sim, 100, { disk: "scsi0", storage: "local-zfs" });
    assert.equal(r.status, 200);
    const c = await config(sim, `${QM}/100/config`);
    assert.equal(c.lock, undefined);
    assert.match(String(c.scsi0), /^local-lvm:vm-100-disk-0,/);
    await waitTask(sim.url, r.body.data, AUTH);
  }, { taskDurationMs: 300 });
});

Deno.test("move_disk: a format the target cannot hold is replaced by its own, with PVE's warning", async () => {
  await withSim(async (sim) => {
    const { status, lines } = await moved(sim, `${QM}/100/move_disk`, {
      disk: "scsi0",
      storage: "local-zfs",
      format: "qcow2",
    });
    assert.equal(status.exitstatus, "WARNINGS: 1");
    assert.ok(
      lines.includes(
        "WARN: format 'qcow2' is not supported by the target storage 'local-zfs' - using 'raw' instead",
      ),
      lines.join("\n"),
    );
  });
});

Deno.test("move_disk: an unusedN moves too, and stays an unusedN (no size, no mirror)", async () => {
  await withSim(async (sim) => {
    await moved(sim, `${QM}/101/move_disk`, {
      disk: "unused0",
      storage: "local-zfs",
    });
    const c = await config(sim, `${QM}/101/config`);
    assert.equal(c.unused0, "local-zfs:vm-101-disk-0");
    assert.equal(c.unused1, "local-lvm:vm-101-disk-1");
  }, {
    edit: (list) => {
      list[1].config!.unused0 = "local-lvm:vm-101-disk-1";
    },
  });
});

Deno.test("move_disk: refusals before the task answer 500 with qemu-server's words", async (t) => {
  const cases: [string, ApiParams, RegExp, ((g: SimGuest[]) => void)?][] = [
    [
      "a locked VM",
      { disk: "scsi0", storage: "local-zfs" },
      /^VM is locked \(backup\)$/,
      (l) => {
        l[0].lock = "backup";
      },
    ],
    [
      "a stale digest",
      { disk: "scsi0", storage: "local-zfs", digest: "0".repeat(40) },
      /^detected modified configuration - file changed by other user\? Try again\.$/,
    ],
    [
      "a disk not configured",
      { disk: "scsi5", storage: "local-zfs" },
      /^disk 'scsi5' does not exist$/,
    ],
    [
      "a CD-ROM",
      { disk: "ide2", storage: "local-zfs" },
      /^you can't move a cdrom$/,
    ],
    [
      "the same storage and format",
      { disk: "scsi0", storage: "local-lvm" },
      /^you can't move to the same storage with same format$/,
    ],
    [
      "an unknown storage",
      { disk: "scsi0", storage: "nowhere" },
      /^storage 'nowhere' does not exist$/,
    ],
    [
      "delete with snapshots",
      { disk: "scsi0", storage: "local-zfs", delete: 1 },
      /^you can't move a disk with snapshots and delete the source$/,
      (l) => {
        l[0].snapshots = {
          s1: {
            name: "s1",
            tags: [],
            config: { scsi0: "local-lvm:vm-100-disk-0,size=32G" },
            snaptime: 1,
            description: "",
            vmstate: false,
          },
        };
      },
    ],
  ];
  for (const [what, params, message, edit] of cases) {
    await t.step(what, async () => {
      await withSim(async (sim) => {
        const r = await moveDisk(sim, 100, params);
        assert.equal(r.status, 500, JSON.stringify(r.body));
        assert.match(String(r.body.message).trim(), message);
        assert.equal(sim.tasks().length, 0);
      }, { edit });
    });
  }
});

Deno.test("move_disk: a target storage without `images` is a parameter error on storage", async () => {
  await withSim(async (sim) => {
    const r = await moveDisk(sim, 100, { disk: "scsi0", storage: "local" });
    assert.equal(r.status, 400);
    assert.equal(
      r.body.errors.storage,
      "storage 'local' does not support vm images",
    );
  });
});

Deno.test("move_disk: both or neither of storage and target-vmid is a parameter error", async () => {
  await withSim(async (sim) => {
    const both = await moveDisk(sim, 100, {
      disk: "scsi0",
      storage: "local-zfs",
      "target-vmid": 101,
    });
    assert.equal(both.status, 400);
    assert.equal(
      both.body.errors.storage,
      "either set 'storage' or 'target-vmid', but not both",
    );
    const neither = await moveDisk(sim, 100, { disk: "scsi0" });
    assert.equal(neither.status, 400);
    assert.equal(
      neither.body.errors["target-vmid"],
      "both 'storage' and 'target-vmid' missing, either needs to be set",
    );
  });
});

Deno.test("move_disk: without Datastore.AllocateSpace on the target storage it is 403", async () => {
  const token = {
    id: "ops@pve!ci",
    secret: "s",
    privsep: true,
    tokenAcl: {
      "/vms": ["VM.Config.Disk", "VM.Audit"],
      "/storage": ["Datastore.Audit"],
    },
  };
  await withSim(async (sim) => {
    const r = await moveDisk(
      sim,
      100,
      { disk: "scsi0", storage: "local-zfs" },
      {
        auth: tokenHeader(token.id, token.secret),
      },
    );
    assert.equal(r.status, 403);
    assert.equal(
      r.body.message.trim(),
      "Permission check failed (/storage/local-zfs, Datastore.AllocateSpace)",
    );
  }, { tokens: [token] });
});

Deno.test("move_volume: a stopped container's volume moves, keeping its mount options, the old one kept as unused0", async () => {
  await withSim(async (sim) => {
    const { status, upid } = await moved(sim, `${CT}/200/move_volume`, {
      volume: "mp0",
      storage: "local-zfs",
    });
    assert.equal(status.exitstatus, "OK");
    assert.match(upid, /:move_volume:200:/);
    const c = await config(sim, `${CT}/200/config`);
    assert.equal(
      c.mp0,
      "local-zfs:subvol-200-disk-0,mp=/data,backup=1,size=4G",
    );
    assert.equal(c.unused0, "local-lvm:vm-200-disk-1");
  });
});

Deno.test("move_volume: with delete the old volume leaves its storage", async () => {
  await withSim(async (sim) => {
    await moved(sim, `${CT}/200/move_volume`, {
      volume: "rootfs",
      storage: "local-zfs",
      delete: 1,
    });
    const c = await config(sim, `${CT}/200/config`);
    assert.equal(c.unused0, undefined);
    assert.ok(
      !(await volids(sim, "local-lvm")).includes("local-lvm:vm-200-disk-0"),
    );
  });
});

Deno.test("move_volume: the container is locked `disk` while the move runs and unlocked after", async () => {
  await withSim(async (sim) => {
    const r = await moveVolume(sim, 200, {
      volume: "rootfs",
      storage: "local-zfs",
    });
    assert.equal(r.status, 200);
    assert.equal((await config(sim, `${CT}/200/config`)).lock, "disk");
    await waitTask(sim.url, r.body.data, AUTH);
    assert.equal((await config(sim, `${CT}/200/config`)).lock, undefined);
  }, { taskDurationMs: 300 });
});

Deno.test("move_volume: a running container is refused: cannot move volumes of a running container", async () => {
  await withSim(async (sim) => {
    const r = await moveVolume(sim, 201, {
      volume: "rootfs",
      storage: "local-zfs",
    });
    assert.equal(r.status, 500);
    assert.equal(
      r.body.message.trim(),
      "cannot move volumes of a running container",
    );
  });
});

Deno.test("move_volume: an unusedN is refused: only configured volumes move", async () => {
  await withSim(async (sim) => {
    const r = await moveVolume(sim, 200, {
      volume: "unused0",
      storage: "local-zfs",
    });
    assert.equal(r.status, 500);
    assert.equal(
      r.body.message.trim(),
      "cannot move volume 'unused0', only configured volumes can be moved to another storage",
    );
  }, {
    edit: (list) => {
      list[2].config!.unused0 = "local-lvm:vm-200-disk-5";
    },
  });
});

Deno.test("move_volume: a locked container is refused with its lock", async () => {
  await withSim(async (sim) => {
    const r = await moveVolume(sim, 200, {
      volume: "rootfs",
      storage: "local-zfs",
    });
    assert.equal(r.status, 500);
    assert.equal(r.body.message.trim(), "CT is locked (backup)");
  }, {
    edit: (list) => {
      list[2].lock = "backup";
    },
  });
});

Deno.test("move_disk with target-vmid: the volume is renamed for the target VM, leaves the source without an unusedN and is attached under target-disk", async () => {
  await withSim(async (sim) => {
    const { status, upid } = await moved(sim, `${QM}/100/move_disk`, {
      disk: "scsi0",
      "target-vmid": 101,
      "target-disk": "scsi5",
    });
    assert.equal(status.exitstatus, "OK");
    assert.match(upid, /:qmmove:100-scsi0>101-scsi5:/);
    const source = await config(sim, `${QM}/100/config`);
    assert.equal(source.scsi0, undefined);
    assert.ok(!Object.keys(source).some((k) => k.startsWith("unused")));
    const target = await config(sim, `${QM}/101/config`);
    assert.equal(
      target.scsi5,
      "local-lvm:vm-101-disk-1,cache=writeback,discard=on,size=32G",
    );
  });
});

Deno.test("move_disk with target-vmid: a running source VM is refused: detach first", async () => {
  await withSim(async (sim) => {
    const r = await moveDisk(sim, 101, {
      disk: "scsi0",
      "target-vmid": 100,
      "target-disk": "scsi1",
    });
    assert.equal(r.status, 500);
    assert.equal(
      r.body.message.trim(),
      "Cannot move disk to another VM while the source VM is running - detach first",
    );
  });
});

Deno.test("move_disk with target-vmid: a target key already in use is refused", async () => {
  await withSim(async (sim) => {
    const r = await moveDisk(sim, 100, { disk: "scsi0", "target-vmid": 101 });
    assert.equal(r.status, 500);
    assert.equal(
      r.body.message.trim(),
      "Target disk key 'scsi0' is already in use for VM '101'",
    );
  });
});

Deno.test("move_volume: a mount point the container lacks is PVE's format error naming the missing properties", async () => {
  await withSim(async (sim) => {
    const r = await moveVolume(sim, 200, {
      volume: "mp7",
      storage: "local-zfs",
    });
    assert.equal(r.status, 500);
    assert.equal(r.body.message.trim(), "format error");
    assert.equal(
      r.body.errors?.volume,
      "property is missing and it is not optional",
    );
  });
});
