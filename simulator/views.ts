/**
 * How a guest looks in PVE's read endpoints: `status/current`, the node's qemu
 * list and `/cluster/resources`. Each view has its own field set, as in PVE.
 *
 * @module
 */

import { DISK_KEY, diskBytes } from "./disks.ts";
import type { GuestState, SimMetrics } from "./types.ts";

/** Usage figures now: live values while running, zeros for what needs a QEMU process when stopped. */
export function metricsOf(g: GuestState): SimMetrics {
  const m = g.metrics;
  const running = g.status === "running";
  // A container without `cores`/`cpulimit` may use every host CPU (pve-container vmstatus).
  const cores = g.type === "lxc"
    ? Number(g.config.cores) || Number(g.config.cpulimit) || HOST_CPUS
    : Number(g.config.cores ?? 1) * Number(g.config.sockets ?? 1);
  const memoryMb =
    Number(String(g.config.memory ?? "").replace(/^current=/, "")) || 512;
  const uptime = running && g.startedAt !== undefined
    ? (m.uptime ?? 0) + Math.floor((Date.now() - g.startedAt) / 1000)
    : 0;
  return {
    cpu: running ? m.cpu ?? 0.01 : 0,
    cpus: m.cpus ?? cores,
    mem: running ? m.mem ?? Math.floor(memoryMb * 2 ** 20 * 0.4) : 0,
    maxmem: m.maxmem ?? memoryMb * 2 ** 20,
    // PVE cannot see inside a qemu guest's filesystems: disk is 0 unless a test says otherwise.
    disk: m.disk ?? 0,
    maxdisk: m.maxdisk ?? bootDiskBytes(g),
    netin: running ? m.netin ?? 0 : 0,
    netout: running ? m.netout ?? 0 : 0,
    uptime,
  };
}

/** CPUs of the simulated host (a container without a CPU limit reports these). */
const HOST_CPUS = 16;

function bootDiskBytes(g: GuestState): number {
  // pve-container vmstatus: the rootfs `size=`, 4 GiB when unknown.
  if (g.type === "lxc") {
    return diskBytes(String(g.config.rootfs ?? "")) || 4 * 2 ** 30;
  }
  const disks = Object.entries(g.config).filter(([k, v]) =>
    DISK_KEY.test(k) && !String(v).includes("media=cdrom")
  );
  return disks.length > 0 ? diskBytes(String(disks[0][1])) : 0;
}

/** `ha` of status/current: `{managed: 0}` or `{managed: 1, state}`. */
function haView(g: GuestState): Record<string, unknown> {
  return g.ha?.managed ? { managed: 1, state: g.ha.state } : { managed: 0 };
}

/**
 * `GET …/qemu/{vmid}/status/current`: qemu-server `PVE/QemuServer.pm` vmstatus with `full` — what
 * every VM has (`memhost` 0 when stopped), then for a running one its cgroup's pressure averages
 * and what QMP answers (`query-blockstats` → diskread/diskwrite, `query-machines`,
 * `query-version`); plus `ha` (`PVE/API2/Qemu.pm` vm_status).
 */
export function statusCurrent(g: GuestState): Record<string, unknown> {
  const m = metricsOf(g);
  const out: Record<string, unknown> = {
    vmid: g.vmid,
    name: g.name,
    status: g.status,
    qmpstatus: g.qmpstatus ?? g.status,
    ha: haView(g),
    cpu: m.cpu,
    cpus: m.cpus,
    mem: m.mem,
    maxmem: m.maxmem,
    disk: m.disk,
    maxdisk: m.maxdisk,
    netin: m.netin,
    netout: m.netout,
    // What the VM's cgroup holds (0 without a process).
    memhost: g.status === "running" ? m.mem : 0,
    uptime: m.uptime,
  };
  if (g.tags.length > 0) out.tags = g.tags.join(";");
  if (g.lock) out.lock = g.lock;
  // `agent` = configured in the config, whether or not anything answers.
  if (g.agent !== "none") out.agent = 1;
  if (g.config.template) out.template = 1;
  if (g.status === "running") {
    out.pid = g.pid;
    // The process's cgroup pressure stall averages (read_cgroup_pressure), then what QMP tells:
    // block stats, machine and version.
    for (const what of ["cpu", "io", "memory"]) {
      out[`pressure${what}some`] = 0;
      out[`pressure${what}full`] = 0;
    }
    out.diskread = 0;
    out.diskwrite = 0;
    out["running-qemu"] = SIM_QEMU_VERSION;
    out["running-machine"] = "pc-i440fx-9.0+pve0";
  }
  return out;
}

/** The QEMU version the simulated node runs (`running-qemu`, `creation-qemu` of a new VM's meta). */
export const SIM_QEMU_VERSION = "9.0.2";

/** One entry of `GET /nodes/{node}/qemu` (`full=1` adds the QMP status like PVE). */
export function listEntry(
  g: GuestState,
  full: boolean,
): Record<string, unknown> {
  const out = statusCurrent(g);
  // vmlist: vmstatus without vm_status's additions; what QMP tells only with `full`.
  delete out.ha;
  delete out.agent;
  if (!full) {
    for (
      const k of [
        "qmpstatus",
        "diskread",
        "diskwrite",
        "running-qemu",
        "running-machine",
      ]
    ) {
      delete out[k];
    }
  }
  return out;
}

/**
 * One guest entry of `GET /cluster/resources`: identity and placement live,
 * the stats (name, status, usage) as of pvestatd's last broadcast (`stats`,
 * see broadcast.ts; PVE's `status: "unknown"` and no name when the guest was
 * not in it), `lock` and `tags` live from the config.
 */
export function resourceEntry(
  g: GuestState,
  stats: Record<string, unknown> | undefined,
): Record<string, unknown> {
  const out: Record<string, unknown> = {
    id: `${g.type}/${g.vmid}`,
    vmid: g.vmid,
    node: g.node,
    type: g.type,
    status: "unknown",
    ...stats,
  };
  // PVE leaves tags/lock out when unset: a client must not expect the keys.
  if (g.tags.length > 0) out.tags = g.tags.join(";");
  if (g.lock) out.lock = g.lock;
  if (g.ha?.managed) out.hastate = g.ha.state;
  return out;
}

/** One node entry of `GET /cluster/resources`. */
export function nodeResource(node: string): Record<string, unknown> {
  return {
    id: `node/${node}`,
    type: "node",
    node,
    status: "online",
    cpu: 0.02,
    maxcpu: 16,
    mem: 8 * 2 ** 30,
    maxmem: 64 * 2 ** 30,
    disk: 10 * 2 ** 30,
    maxdisk: 100 * 2 ** 30,
    uptime: 86400,
    level: "",
  };
}
