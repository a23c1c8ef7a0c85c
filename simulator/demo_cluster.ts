/**
 * The demo cluster: two nodes and guests in every agent situation the contract names. Used by the
 * end-to-end tests and by the main job's embedded default.
 *
 * @module
 */
import type { SimGuest } from "./types.ts";

/** The nodes of the demo cluster. */
export const DEMO_NODES = ["pve1", "pve2"];

/** A two-node cluster with guests in every agent situation the contract names. */
export function demoGuests(): SimGuest[] {
  const uuid = (n: number) =>
    `uuid=00000000-0000-4000-8000-${String(n).padStart(12, "0")}`;
  return [
    {
      vmid: 100,
      node: "pve1",
      type: "qemu",
      name: "web",
      status: "running",
      agent: "running",
      tags: ["swamp"],
      config: { smbios1: uuid(100) },
      ips: ["10.0.0.100/24"],
    },
    {
      vmid: 101,
      node: "pve2",
      type: "qemu",
      name: "db",
      status: "running",
      agent: "running",
      tags: ["swamp"],
      config: { smbios1: uuid(101) },
    },
    {
      vmid: 102,
      node: "pve1",
      type: "qemu",
      name: "stopped",
      status: "stopped",
      agent: "running",
      config: { smbios1: uuid(102) },
    },
    {
      vmid: 103,
      node: "pve1",
      type: "qemu",
      name: "no-agent-process",
      status: "running",
      agent: "configured",
      config: { smbios1: uuid(103) },
    },
    {
      vmid: 104,
      node: "pve1",
      type: "qemu",
      name: "no-agent",
      status: "running",
      agent: "none",
      config: { smbios1: uuid(104) },
    },
    {
      vmid: 105,
      node: "pve1",
      type: "qemu",
      name: "exec-off",
      status: "running",
      agent: "exec-disabled",
      config: { smbios1: uuid(105) },
    },
    {
      vmid: 150,
      node: "pve2",
      type: "qemu",
      name: "hidden",
      status: "running",
      agent: "running",
      config: { smbios1: uuid(150) },
    },
    { vmid: 200, node: "pve1", type: "lxc", name: "ct", status: "running" },
  ];
}

/** The VMID of the demo's real guest. */
export const REAL_DEMO_VMID = 110;

/** A stopped real QEMU guest with its agent enabled (needs the simulator's `realGuests`). */
export function realDemoGuest(): SimGuest {
  return {
    vmid: REAL_DEMO_VMID,
    node: "pve1",
    type: "qemu",
    name: "real-guest",
    status: "stopped",
    real: true,
    tags: ["swamp"],
    config: {
      agent: 1,
      memory: 256,
      net0: "virtio=BC:24:11:00:00:6E,bridge=vmbr0",
      smbios1: "uuid=00000000-0000-4000-8000-000000000110",
      virtio0: "local-lvm:vm-110-disk-0,size=64M",
    },
  };
}
