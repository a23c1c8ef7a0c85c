/**
 * A node's own status and physical disks: `GET /nodes/{node}/status` and
 * `GET /nodes/{node}/disks/list`, with the fields and types PVE 9 answers with
 * (load averages as strings, `wearout` as a number or `N/A`). The figures are
 * fixed per node so tests can assert them; a missing `Sys.Audit` (403) is a
 * test's fault injection, as the simulator models no node-level privileges.
 *
 * Sources: pve-manager PVE/API2/Nodes.pm (status), PVE/API2/Disks.pm (list)
 * and pve-storage PVE/Diskmanage.pm (get_disks: health, wearout, used).
 *
 * @module
 */

import type { Route } from "./context.ts";

const GIB = 2 ** 30;

/** What `GET /nodes/{node}/status` answers (the same figures on every node). */
export function nodeStatus(): Record<string, unknown> {
  return {
    cpu: 0.0321,
    wait: 0.0012,
    idle: 0,
    // pve-common `PVE/ProcFSTools.pm` read_cpuinfo.
    cpuinfo: {
      cpus: 16,
      cores: 8,
      sockets: 1,
      model: "AMD EPYC 7302P 16-Core Processor",
      vendor: "AuthenticAMD",
      family: "23",
      flags:
        "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 " +
        "clflush mmx fxsr sse sse2 ht syscall nx mmxext fxsr_opt pdpe1gb rdtscp lm svm",
      mhz: "2999.998",
      hvm: "1",
      user_hz: 100,
    },
    loadavg: ["0.42", "0.37", "0.30"],
    // `available` (MemAvailable) is what PVE 9 adds beside free (pve-manager
    // PVE/API2/Nodes.pm status, from PVE::ProcFSTools::read_meminfo).
    memory: {
      total: 64 * GIB,
      used: 16 * GIB,
      free: 48 * GIB,
      available: 46 * GIB,
    },
    swap: { total: 8 * GIB, used: 0, free: 8 * GIB },
    rootfs: {
      total: 100 * GIB,
      used: 25 * GIB,
      avail: 75 * GIB,
      free: 75 * GIB,
    },
    ksm: { shared: 0 },
    uptime: 864000,
    kversion:
      "Linux 6.8.12-4-pve #1 SMP PREEMPT_DYNAMIC PMX 6.8.12-4 (2024-11-06T15:04Z)",
    "current-kernel": {
      sysname: "Linux",
      release: "6.8.12-4-pve",
      version: "#1 SMP PREEMPT_DYNAMIC PMX 6.8.12-4 (2024-11-06T15:04Z)",
      machine: "x86_64",
    },
    pveversion: "pve-manager/9.0.3/025864202ebb6109",
    "boot-info": { mode: "efi", secureboot: 0 },
  };
}

/** What `GET /nodes/{node}/disks/list` answers for `node` (SMART read unless `skipsmart`). */
export function nodeDisks(
  node: string,
  skipSmart: boolean,
): Record<string, unknown>[] {
  const suffix = node.toUpperCase().replace(/[^A-Z0-9]/g, "");
  const disks: Record<string, unknown>[] = [
    {
      devpath: "/dev/nvme0n1",
      type: "nvme",
      model: "Samsung SSD 980 PRO 1TB",
      serial: `S5GXNF0R${suffix}`,
      vendor: "unknown",
      size: 1000204886016,
      gpt: 1,
      rpm: 0,
      used: "LVM",
      mounted: 0,
      wwn: "eui.002538b111b2c3d4",
      by_id_link:
        `/dev/disk/by-id/nvme-Samsung_SSD_980_PRO_1TB_S5GXNF0R${suffix}`,
      osdid: -1,
      "osdid-list": null,
      health: "PASSED",
      wearout: 97,
    },
    {
      devpath: "/dev/sda",
      type: "hdd",
      model: "ST4000NM0035-1V4107",
      serial: `ZC1${suffix}`,
      vendor: "ATA",
      size: 4000787030016,
      gpt: 1,
      rpm: 7200,
      used: "ZFS",
      mounted: 0,
      wwn: "0x5000c500a1b2c3d4",
      by_id_link: `/dev/disk/by-id/ata-ST4000NM0035-1V4107_ZC1${suffix}`,
      osdid: -1,
      "osdid-list": null,
      health: "PASSED",
      // Spinning disks have no wearout.
      wearout: "N/A",
    },
  ];
  if (skipSmart) {
    for (const d of disks) {
      delete d.health;
      delete d.wearout;
    }
  }
  return disks;
}

/** The node status and disk routes. */
export const nodeRoutes: Route[] = [
  {
    method: "GET",
    path: "/nodes/{node}/status",
    handler: () => nodeStatus(),
  },
  {
    method: "GET",
    path: "/nodes/{node}/disks/list",
    params: {
      "include-partitions": { type: "boolean", optional: true },
      skipsmart: { type: "boolean", optional: true },
      type: {
        type: "string",
        optional: true,
        enum: ["unused", "journal_disks"],
      },
    },
    handler: (ctx) =>
      nodeDisks(ctx.params.node as string, ctx.params.skipsmart === true),
  },
];
