/**
 * The package's vm-from-cloud-image workflow through the harness: downloadUrl (PVE's checksum
 * check), create with the disk imported from the image, started, then waitReady.
 */
import assert from "node:assert/strict";
import { demoGuests } from "../../simulator/demo_cluster.ts";
import {
  DOWNLOAD_STORAGES,
  hexDigest,
  imageBytes,
  startImageServer,
} from "../../simulator/image_server.ts";
import { stepStatuses } from "../../harness/workflow.ts";
import { withWorkflows } from "./fixture.ts";

const IMAGE = imageBytes(300_000);

async function withImage(
  body: (url: string) => Promise<void>,
): Promise<void> {
  const images = startImageServer({ "/cloud.qcow2": IMAGE });
  try {
    await body(images.url("/cloud.qcow2"));
  } finally {
    await images.close();
  }
}

const opts = { guests: demoGuests(), sim: { storages: DOWNLOAD_STORAGES } };

Deno.test("vm-from-cloud-image: downloaded, created from the image, started and ready", async () => {
  await withImage(async (url) => {
    await withWorkflows(opts, async (w) => {
      const run = await w.run("vm-from-cloud-image.yaml", {
        url,
        filename: "cloud.qcow2",
        checksum: hexDigest("sha256", IMAGE),
        name: "from-image",
        vmidRange: { min: 400, max: 499 },
        diskStorage: "local-lvm",
        ipv4: false,
        readyTimeoutSec: 30,
      });
      assert.equal(run.status, "succeeded", JSON.stringify(run));
      assert.deepEqual(stepStatuses(run), {
        download: "succeeded",
        create: "succeeded",
        ready: "succeeded",
      });
      const volume = w.record("volume-local-cloud.qcow2");
      assert.equal(volume?.checksumVerified, true);
      const vm = w.env.sim.guest(400);
      assert.equal(vm?.name, "from-image");
      assert.equal(vm?.status, "running");
      assert.match(String(vm?.config.virtio0), /^local-lvm:vm-400-disk-0/);
      assert.equal(typeof w.record("vm-400-ready")?.agentVersion, "string");
    });
  });
});

Deno.test("vm-from-cloud-image: a wrong checksum fails the download; no VM is created", async () => {
  await withImage(async (url) => {
    await withWorkflows(opts, async (w) => {
      const run = await w.run("vm-from-cloud-image.yaml", {
        url,
        filename: "cloud.qcow2",
        checksum: "0".repeat(64),
        name: "from-image",
        vmidRange: { min: 400, max: 499 },
      });
      assert.equal(run.status, "failed");
      const statuses = stepStatuses(run);
      assert.equal(statuses.download, "failed");
      // In one job no step starts after a failed one: they stay pending (swamp's runJob).
      assert.equal(statuses.create, "pending");
      assert.equal(statuses.ready, "pending");
      assert.equal(w.env.sim.guest(400), undefined);
    });
  });
});
