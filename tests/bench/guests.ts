/**
 * The guests the scenarios and benchmarks run against.
 *
 * @module
 */
import { demoGuests } from "../../simulator/demo_cluster.ts";
import type { SimGuest } from "../../simulator/types.ts";

const uuid = (n: number) =>
  `uuid=00000000-0000-4000-8000-${String(n).padStart(12, "0")}`;

/**
 * The demo cluster (see demo_cluster.ts) plus what the lifecycle methods need: a disk on VM 100, a
 * managed stopped VM 110 to delete, a template 9000 to clone, and VM 106 whose HA start only queues.
 */
export function scenarioGuests(): SimGuest[] {
  const guests = demoGuests().map((g) =>
    g.vmid === 100
      ? {
        ...g,
        config: {
          ...g.config,
          scsi0: "local-lvm:vm-100-disk-0,size=32G",
          memory: 2048,
        },
      }
      : g
  );
  guests.push(
    {
      vmid: 106,
      node: "pve1",
      type: "qemu",
      name: "ha-stuck",
      status: "stopped",
      agent: "none",
      tags: ["swamp"],
      ha: { managed: true, state: "stopped", neverApplies: true },
      config: { smbios1: uuid(106) },
    },
    {
      vmid: 110,
      node: "pve1",
      type: "qemu",
      name: "scratch",
      status: "stopped",
      agent: "none",
      tags: ["swamp"],
      config: {
        smbios1: uuid(110),
        scsi0: "local-lvm:vm-110-disk-0,size=8G",
      },
    },
    {
      vmid: 9000,
      node: "pve1",
      type: "qemu",
      name: "tmpl",
      status: "stopped",
      agent: "running",
      tags: ["swamp"],
      config: {
        smbios1: uuid(9000),
        template: 1,
        scsi0: "local-lvm:base-9000-disk-0,size=8G",
      },
    },
  );
  return guests;
}

/** `n` guests on node pve1 for sync: VMIDs 1000…, alternately running and stopped, no agent. */
export function fleet(n: number): SimGuest[] {
  return Array.from({ length: n }, (_, i) => ({
    vmid: 1000 + i,
    node: "pve1",
    type: "qemu" as const,
    name: `guest-${i}`,
    status: i % 2 === 0 ? "running" as const : "stopped" as const,
    agent: "none" as const,
    tags: ["swamp"],
    config: { smbios1: uuid(1000 + i), memory: 1024 },
  }));
}
