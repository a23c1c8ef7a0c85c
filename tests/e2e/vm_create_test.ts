/**
 * qemu create end to end, over both transports: a cloud image brought by downloadUrl (the simulator
 * fetches it from a loopback server), then a VM created from it — the imported disk holds the
 * image's bytes — with a cloud-init drive, a NIC, the agent and the swamp tag; every setting reads
 * back, a re-run finds the same VM, and an import that leaves an empty or a missing disk fails.
 */
import assert from "node:assert/strict";
import { demoGuests } from "../../simulator/demo_cluster.ts";
import type { RunResult } from "../../harness/types.ts";
import { type Env, withEnv, written } from "./env.ts";
import {
  DOWNLOAD_STORAGES,
  hexDigest,
  imageBytes,
  type ImageServer,
  startImageServer,
} from "../../simulator/image_server.ts";

const IMAGE = imageBytes(256_000, 17);
const TRANSPORTS = ["api", "ssh"] as const;

async function withImage(
  via: "api" | "ssh",
  body: (env: Env, images: ImageServer) => Promise<void>,
): Promise<void> {
  const images = startImageServer({ "/cloud.qcow2": IMAGE });
  try {
    await withEnv({
      via,
      guests: demoGuests(),
      sim: { storages: DOWNLOAD_STORAGES },
    }, async (env) => {
      const got = await env.run("downloadUrl", {
        storage: "local",
        content: "import",
        url: images.url("/cloud.qcow2"),
        filename: "cloud.qcow2",
        checksum: hexDigest("sha256", IMAGE),
        checksumAlgorithm: "sha256",
      });
      assert.equal(got.status, "succeeded", got.error);
      await body(env, images);
    });
  } finally {
    await images.close();
  }
}

const createArgs = (extra: Record<string, unknown> = {}) => ({
  vmid: 500,
  name: "cloud-vm",
  cores: 2,
  memory: 1024,
  agent: true,
  config: {
    scsi0: "local-lvm:0,import-from=local:import/cloud.qcow2,discard=on",
    scsi1: "local-lvm:4",
    ide2: "local-lvm:cloudinit",
    net0: "virtio,bridge=vmbr0",
    ciuser: "ops",
    sshkeys: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIE2f2N3Nt8xH ops@laptop",
    ipconfig0: "ip=dhcp",
    tags: "web",
  },
  ...extra,
});

/** What the run logged (its summary is the last info line). */
const said = (r: RunResult) => r.logs.map((l) => l.message).join("\n");

const creates = (env: Env) =>
  env.sim.requests.filter((q) =>
    q.method === "POST" && /\/nodes\/pve1\/qemu$/.test(q.path)
  );

for (const via of TRANSPORTS) {
  Deno.test(`create (qemu, ${via}): a VM from a downloaded cloud image is created, its imported disk holding the image`, async () => {
    await withImage(via, async (env) => {
      const r = await env.run("create", createArgs());
      assert.equal(r.status, "succeeded", r.error);
      const rec = written(r, "vm-500");
      assert.equal(rec.present, true);
      assert.equal(rec.name, "cloud-vm");
      assert.deepEqual(rec.tags, ["swamp", "web"]);
      assert.match(String(rec.lastTask), /:qmcreate:500:/);
      assert.match(
        said(r),
        /scsi0 is local-lvm:vm-500-disk-0, imported from local:import\/cloud\.qcow2 \(256000 bytes, the image's size\)/,
      );
      const vm = env.sim.guest(500);
      assert.equal(vm?.lock, undefined);
      assert.match(
        String(vm?.config.scsi0),
        /^local-lvm:vm-500-disk-0,discard=on,size=250K$/,
      );
      assert.match(
        String(vm?.config.ide2),
        /^local-lvm:vm-500-cloudinit,media=cdrom$/,
      );
      assert.match(
        String(vm?.config.net0),
        /^virtio=BC:24:11:[0-9A-F:]{8},bridge=vmbr0$/,
      );
      assert.deepEqual(env.sim.volumeData("local-lvm:vm-500-disk-0"), IMAGE);
      const form = Object.fromEntries(creates(env)[0].form);
      assert.equal(form.tags, "web;swamp");
      assert.equal(form.start, undefined, "the start is ours, verified");
    });
  });

  Deno.test(`create (qemu, ${via}): a re-run finds the same finished VM and creates nothing`, async () => {
    await withImage(via, async (env) => {
      const first = await env.run("create", createArgs());
      assert.equal(first.status, "succeeded", first.error);
      const again = await env.run("create", createArgs());
      assert.equal(again.status, "succeeded", again.error);
      assert.match(said(again), /already is the requested VM "cloud-vm"/);
      assert.equal(creates(env).length, 1);
    });
  });
}

Deno.test("create (qemu): an import that leaves an empty disk fails naming both sizes", async () => {
  await withImage("api", async (env) => {
    env.sim.nextTask({ truncateTo: 0 });
    const r = await env.run("create", createArgs());
    assert.equal(r.status, "failed");
    assert.match(
      r.error ?? "",
      /its disk scsi0 \(local-lvm:vm-500-disk-0\) imported from local:import\/cloud\.qcow2 holds 0 bytes where the image has 256000/,
    );
    assert.equal(
      written(r, "vm-500").present,
      true,
      "the VM is recorded as seen",
    );
  });
});

Deno.test("create (qemu): an import that leaves its disk missing fails naming it", async () => {
  await withImage("api", async (env) => {
    env.sim.nextTask({ loseFile: true });
    const r = await env.run("create", createArgs());
    assert.equal(r.status, "failed");
    assert.match(
      r.error ?? "",
      /its disk scsi0 \(local-lvm:vm-500-disk-0\) is not on storage local-lvm/,
    );
  });
});

Deno.test("create (qemu): a missing image and bridge are refused before anything changes", async () => {
  await withImage("api", async (env) => {
    const r = await env.run(
      "create",
      createArgs({
        config: {
          scsi0: "local-lvm:0,import-from=local:import/other.qcow2",
          net0: "virtio,bridge=vmbr9",
        },
      }),
    );
    assert.equal(r.status, "failed");
    assert.match(
      r.error ?? "",
      /^cannot create VM 500 on node pve1; nothing was changed\. 2 problems found: \(1\) scsi0 import-from "local:import\/other\.qcow2" is not in the content of storage local on node pve1 \(its disk images: local:import\/cloud\.qcow2\) — download it first/,
    );
    assert.equal(creates(env).length, 0);
    assert.equal(env.sim.guest(500), undefined);
  });
});

Deno.test("create (qemu): without vmid a free one in vmidRange is claimed, and start: true runs it", async () => {
  await withImage("api", async (env) => {
    const { vmid: _, ...rest } = createArgs({
      vmidRange: { min: 700, max: 710 },
      start: true,
    });
    const r = await env.run("create", rest);
    assert.equal(r.status, "succeeded", r.error);
    assert.match(said(r), /claimed the free VMID 700/);
    assert.equal(written(r, "vm-700").status, "running");
    assert.equal(env.sim.guest(700)?.status, "running");
  });
});

// The simulator gives a new VM no address (no DHCP): the wait is for its agent.
Deno.test("create (qemu): waitReady starts the new VM and waits for its agent", async () => {
  await withImage("api", async (env) => {
    const r = await env.run(
      "create",
      createArgs({ waitReady: { ipv4: false, timeoutSec: 30 } }),
    );
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(written(r, "vm-500").status, "running");
    assert.equal(written(r, "vm-500-ready").ready, true);
  });
});
