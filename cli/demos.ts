/**
 * The main job's demos as lists of steps: each step is one method run, as `swamp model method run`
 * would do it, with the verdict the contract requires — and, where a verdict alone proves too
 * little, what the record must say.
 *
 * - `provision` (the default where a real guest can run): from nothing to a running guest and
 *   back — a cloud image downloaded onto the node, a VM created from it, booted, commands run in
 *   it, stopped.
 * - `realGuest`: the same checks on the cluster's existing real VM 110.
 * - `hostAgent`: where no real guest can run, VM 100 answered by this host's qemu-ga.
 *
 * @module
 */
import type { RunResult } from "../harness/types.ts";
import type { ServedCloudImage } from "../simulator/cloud_image.ts";

/** One method run of a demo. */
export interface DemoStep {
  title: string;
  method: string;
  /** `--input` pairs as given to swamp (dotted keys nest; swamp coerces the values). */
  inputs: Record<string, string>;
  expected: "succeeded" | "failed";
  /** What the exec record's stdout must be (the run's output, not only its verdict). */
  stdout?: string;
}

/** The stdout a step's run recorded for guest `vmid`, if it wrote an exec record. */
export function recordedStdout(r: RunResult, vmid: string): string | undefined {
  const rec = r.written.find((w) => w.instance === `vm-${vmid}-exec`);
  const data = rec?.data as { stdout?: unknown } | undefined;
  return typeof data?.stdout === "string" ? data.stdout : undefined;
}

const exit42 = (vmid: string): DemoStep => ({
  title: "guestExec exit 42 inside the guest",
  method: "guestExec",
  inputs: { vmid, command: '["sh","-c","echo failing >&2; exit 42"]' },
  expected: "failed",
});

/** Boot a stopped real VM, wait for its agent, run commands inside it, stop it. */
function bootAndRun(vmid: string, stdoutOf?: [string, string]): DemoStep[] {
  return [
    {
      title: `start real VM ${vmid} (the task ends while the guest boots)`,
      method: "start",
      inputs: { vmid },
      expected: "succeeded",
    },
    {
      title: "waitReady: its agent, IPv4 and IPv6 on net0",
      method: "waitReady",
      inputs: { vmid, ipv6: "true", nic: "net0", timeoutSec: "120" },
      expected: "succeeded",
    },
    {
      title: `lookup of real VM ${vmid}`,
      method: "lookup",
      inputs: { vmid },
      expected: "succeeded",
    },
    stdoutOf
      ? {
        title: "guestExec exit 0 inside the guest: the file on its disk",
        method: "guestExec",
        inputs: { vmid, command: JSON.stringify(["cat", stdoutOf[0]]) },
        expected: "succeeded",
        stdout: stdoutOf[1],
      }
      : {
        title: "guestExec exit 0 inside the guest",
        method: "guestExec",
        inputs: {
          vmid,
          command:
            '["sh","-c","echo ready on $(hostname), kernel $(uname -r)"]',
        },
        expected: "succeeded",
      },
    exit42(vmid),
    {
      title: `stop real VM ${vmid}`,
      method: "stop",
      inputs: { vmid },
      expected: "succeeded",
    },
  ];
}

/** The demo on the cluster's existing real VM. */
export function realGuestSteps(vmid: number): DemoStep[] {
  return bootAndRun(String(vmid));
}

/** The demo where no real guest can run: VM 100, answered by this host's qemu-ga. */
export function hostAgentSteps(): DemoStep[] {
  return [
    {
      title: "lookup of running VM 100",
      method: "lookup",
      inputs: { vmid: "100" },
      expected: "succeeded",
    },
    {
      title: "guestExec exit 0",
      method: "guestExec",
      inputs: { vmid: "100", command: '["bash","-c","echo ready"]' },
      expected: "succeeded",
    },
    {
      title: "guestExec exit 42",
      method: "guestExec",
      inputs: {
        vmid: "100",
        command: '["bash","-c","echo failing >&2; exit 42"]',
      },
      expected: "failed",
    },
  ];
}

/** From nothing to a running guest and back: download, create, boot, run, stop. */
export function provisionSteps(
  vmid: number,
  image: ServedCloudImage,
): DemoStep[] {
  const id = String(vmid);
  return [
    {
      title:
        "downloadUrl: the cloud image onto local (import), its sha256 checked by PVE",
      method: "downloadUrl",
      inputs: {
        storage: "local",
        content: "import",
        url: image.url,
        filename: image.filename,
        checksum: image.sha256,
        checksumAlgorithm: "sha256",
      },
      expected: "succeeded",
    },
    {
      title:
        `create VM ${id}: its disk imported from the image, the agent on, a NIC`,
      method: "create",
      inputs: {
        vmid: id,
        name: "from-cloud-image",
        memory: "256",
        agent: "true",
        "config.virtio0":
          `local-lvm:0,import-from=local:import/${image.filename}`,
        "config.net0": "virtio,bridge=vmbr0",
      },
      expected: "succeeded",
    },
    ...bootAndRun(id, [image.markerPath, image.marker]),
  ];
}
