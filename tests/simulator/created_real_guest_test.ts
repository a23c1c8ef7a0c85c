/**
 * With real guests configured, which created VMs are real (routes_qemu_create.ts bootFromImage):
 * a VM whose first imported disk is a qcow2 image is a real QEMU VM with that copy as its disk;
 * a VM whose import is other bytes, or that imports nothing, stays simulated. Nothing boots here:
 * the rule is decided at create.
 */
import assert from "node:assert/strict";
import { guestImageAt } from "../../simulator/real_vm.ts";
import { startSimulator } from "../../simulator/simulator.ts";
import { api, tokenHeader, waitTask } from "../../simulator/sim_client.ts";
import { DOWNLOAD_STORAGES, imageBytes } from "../../simulator/image_server.ts";

const TOKEN = { id: "root@pam!t", secret: "s" };
const AUTH = { auth: tokenHeader(TOKEN.id, TOKEN.secret) };
/** qcow2's magic ("QFI\xfb") and then anything: enough for the rule. */
const QCOW2 = new Uint8Array([0x51, 0x46, 0x49, 0xfb, ...imageBytes(4092)]);

async function createdFrom(bytes: Uint8Array, importIt = true) {
  const sim = await startSimulator({
    nodes: ["pve1"],
    tokens: [TOKEN],
    guests: [],
    storages: DOWNLOAD_STORAGES.map((s) =>
      s.storage === "local"
        ? {
          ...s,
          files: [{ content: "import", file: "img.qcow2", data: bytes }],
        }
        : s
    ),
    realGuests: { image: guestImageAt("/nonexistent-image") },
  });
  try {
    const r = await api(sim.url, "POST", "/nodes/pve1/qemu", {
      vmid: 130,
      virtio0: importIt
        ? "local-lvm:0,import-from=local:import/img.qcow2"
        : "local-lvm:1",
    }, AUTH);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const task = await waitTask(sim.url, r.body.data, AUTH);
    assert.equal(task.exitstatus, "OK");
    return sim.guest(130);
  } finally {
    await sim.close();
  }
}

Deno.test("created VM: a disk imported from a qcow2 image makes it a real VM", async () => {
  assert.equal((await createdFrom(QCOW2))?.real, true);
});

Deno.test("created VM: a disk imported from bytes that are no qcow2 leaves it simulated", async () => {
  assert.notEqual((await createdFrom(imageBytes(4096)))?.real, true);
});

Deno.test("created VM: a VM that imports nothing stays simulated", async () => {
  assert.notEqual((await createdFrom(QCOW2, false))?.real, true);
});
