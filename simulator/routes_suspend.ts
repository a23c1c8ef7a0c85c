/**
 * Suspend and resume: a VM's to RAM (QEMU paused) or to disk (its state saved to a volume, QEMU
 * gone, the config locked `suspended`), a container's checkpoint.
 *
 * - qemu-server `PVE/API2/Qemu.pm` vm_suspend: "VM $vmid not running" and, with `todisk`, "Cannot
 *   suspend HA managed VM to disk", `VM.Config.Disk` on the VM, no `hostpciN`, and
 *   `Datastore.AllocateSpace` on the state storage (`statestorage`, else
 *   `PVE/QemuConfig.pm` find_vmstate_storage) — all before the worker forks; the task is
 *   `qmsuspend` (to disk) or `qmpause`.
 * - The worker, `PVE/QemuServer/RunState.pm` vm_suspend: check_lock (a `backup` lock passes, but
 *   not to disk: "cannot suspend to disk during backup"); to RAM QMP `stop` (qmpstatus `paused`);
 *   to disk the config gets `lock: suspending` and `vmstate` (a volume `vm-<vmid>-state-suspend-
 *   <date>` of twice the memory plus 500 MiB, `QemuConfig.pm` __snapshot_save_vmstate), the state
 *   is saved, QEMU quits and the lock becomes `suspended`; a failed save frees the volume, drops
 *   `vmstate` and leaves `suspending` "to indicate something went wrong".
 * - `Qemu.pm` vm_resume: a VM locked `suspended` is started from its state (`PVE/QemuServer.pm`
 *   vm_start, which then frees the volume and drops `lock` and `vmstate`); any other VM must run
 *   ("VM $vmid not running"); the worker (RunState.pm vm_resume) does nothing for a running VM,
 *   refuses a template, checks the lock (a `backup` lock passes) and sends `system_wakeup` to a
 *   guest-suspended VM, `cont` to any other.
 * - pve-container `PVE/API2/LXC/Status.pm` vm_suspend ("CT $vmid not running"; task `vzsuspend`:
 *   check_lock, `lxc-checkpoint -s`: the container is checkpointed and stopped) and vm_resume
 *   ("CT $vmid already running"; task `vzresume`: `lxc-checkpoint -r`, which fails without a
 *   checkpoint).
 *
 * @module
 */

import {
  checkVmPerm,
  type Ctx,
  isRootPam,
  lockedMessage,
  qemuGuest,
  type Route,
} from "./context.ts";
import { DISK_KEY } from "./disks.ts";
import { ApiError, paramError } from "./http.ts";
import type { ParamSpec } from "./params.ts";
import { ctLockedMessage, liveCt } from "./routes_lxc.ts";
import { dropState, dropStateKeys } from "./routes_power.ts";
import { isFileStorage } from "./storage.ts";
import { TaskFailure } from "./tasks.ts";
import type { GuestState } from "./types.ts";

const OPT_BOOL: ParamSpec = { type: "boolean", optional: true };

/** `skiplock`/`nocheck` are root@pam's (400): an API token never is. */
function rootOnly(ctx: Ctx, ...names: string[]): void {
  if (isRootPam(ctx.user)) return;
  for (const name of names) {
    if (ctx.params[name] === true) {
      throw paramError({ [name]: "Only root may use this option." });
    }
  }
}

/** find_vmstate_storage: `vmstatestorage`, else a shared storage of the VM's disks, else a local one, else `local`. */
function vmstateStorage(ctx: Ctx, g: GuestState): string {
  if (typeof g.config.vmstatestorage === "string") {
    return g.config.vmstatestorage;
  }
  let shared: string | undefined;
  let local: string | undefined;
  for (const [key, value] of Object.entries(g.config)) {
    if (!DISK_KEY.test(key) || String(value).includes("media=cdrom")) continue;
    const sid = String(value).split(":")[0];
    const store = ctx.core.resources.config(sid);
    if (!store) continue;
    if (store.shared) shared ??= sid;
    else local ??= sid;
  }
  return shared ?? local ?? "local";
}

/** The state volume vm_suspend allocates: `vm-<vmid>-state-suspend-<date>` (`.raw` on a directory storage). */
function stateVolume(ctx: Ctx, g: GuestState, sid: string): string {
  const date = new Date().toISOString().slice(0, 10);
  const store = ctx.core.resources.config(sid);
  const file = store && isFileStorage(store) ? ".raw" : "";
  return `${sid}:vm-${g.vmid}-state-suspend-${date}${file}`;
}

const qemuSuspend: Route = {
  method: "POST",
  path: "/nodes/{node}/qemu/{vmid}/status/suspend",
  privilege: "VM.PowerMgmt",
  params: {
    skiplock: OPT_BOOL,
    todisk: OPT_BOOL,
    // pve-storage-id (pve-storage `PVE/Storage/Plugin.pm` verify_storage_id).
    statestorage: {
      type: "string",
      optional: true,
      pattern: /^[a-z][a-z0-9\-_.]*[a-z0-9]$/i,
    },
  },
  handler: (ctx) => {
    rootOnly(ctx, "skiplock");
    const g = qemuGuest(ctx);
    const toDisk = ctx.params.todisk === true;
    // pve-common `PVE/JSONSchema.pm` check_prop: `requires => 'todisk'` needs the key given.
    if (
      ctx.params.statestorage !== undefined && ctx.params.todisk === undefined
    ) {
      throw paramError({
        todisk: "missing property required by 'statestorage'",
      });
    }
    if (g.status !== "running") {
      throw new ApiError(500, `VM ${g.vmid} not running`);
    }
    if (toDisk && g.ha?.managed) {
      throw new ApiError(500, "Cannot suspend HA managed VM to disk");
    }
    let storage = ctx.params.statestorage as string | undefined;
    if (toDisk) {
      checkVmPerm(ctx.user, g.vmid, "VM.Config.Disk");
      if (Object.keys(g.config).some((k) => /^hostpci\d+/.test(k))) {
        throw new ApiError(
          500,
          "cannot suspend VM to disk due to passed-through PCI device(s), which lack the possibility to save/restore their internal state",
        );
      }
      storage ??= vmstateStorage(ctx, g);
      if (
        !ctx.user.privilegesOn(`/storage/${storage}`).has(
          "Datastore.AllocateSpace",
        )
      ) {
        throw new ApiError(
          403,
          `Permission check failed (/storage/${storage}, Datastore.AllocateSpace)`,
        );
      }
    }
    const { state, tasks, real } = ctx.core;
    // The worker's first step, under the config lock: check_lock, then (to disk) the lock and the
    // state volume are written before the state is saved.
    const backup = g.lock === "backup";
    const refused = g.lock && ctx.params.skiplock !== true && !backup
      ? lockedMessage(g)
      : backup && toDisk
      ? "cannot suspend to disk during backup"
      : undefined;
    if (!refused && toDisk && storage) {
      g.lock = "suspending";
      g.config.vmstate = stateVolume(ctx, g, storage);
      g.config.runningmachine = "pc-i440fx-9.0+pve0";
    }
    const task = tasks.start({
      node: g.node,
      type: toDisk ? "qmsuspend" : "qmpause",
      id: String(g.vmid),
      user: ctx.user.tokenId,
      run: async () => {
        if (refused) throw new TaskFailure(refused);
        const live = state.get(g.vmid);
        if (live !== g) throw new TaskFailure(`VM ${g.vmid} not running`);
        if (!toDisk) {
          if (real?.isReal(g)) await real.pause(g);
          else g.qmpstatus = "paused";
          return;
        }
        if (g.lock !== "suspending") {
          throw new TaskFailure("lock changed unexpectedly");
        }
        if (real?.isReal(g)) await real.hibernate(g);
        else state.stop(g);
        task.log.push("State saved, quitting");
        g.lock = "suspended";
      },
      // A failed save: the volume is freed and `vmstate` dropped, `suspending` stays.
      onFailure: () => {
        if (toDisk && !refused) dropStateKeys(g);
      },
    });
    return task.upid;
  },
};

const qemuResume: Route = {
  method: "POST",
  path: "/nodes/{node}/qemu/{vmid}/status/resume",
  privilege: "VM.PowerMgmt",
  params: { skiplock: OPT_BOOL, nocheck: OPT_BOOL },
  handler: (ctx) => {
    rootOnly(ctx, "skiplock", "nocheck");
    const g = qemuGuest(ctx);
    const fromDisk = g.lock === "suspended";
    if (!fromDisk && g.status !== "running") {
      throw new ApiError(500, `VM ${g.vmid} not running`);
    }
    const { state, tasks, real } = ctx.core;
    const task = tasks.start({
      node: g.node,
      type: "qmresume",
      id: String(g.vmid),
      user: ctx.user.tokenId,
      run: async () => {
        const live = state.get(g.vmid);
        if (live !== g) {
          throw new TaskFailure(
            `Configuration file 'nodes/${g.node}/qemu-server/${g.vmid}.conf' does not exist`,
          );
        }
        if (fromDisk) {
          // vm_start: a template never starts; the lock `suspended` passes check_lock.
          if (g.config.template) {
            throw new TaskFailure("you can't start a vm if it's a template");
          }
          if (g.status === "running") {
            throw new TaskFailure(`VM ${g.vmid} already running`);
          }
          task.log.push("Resuming suspended VM");
          if (real?.isReal(g)) await real.power("start", g, {});
          else state.start(g);
          task.log.push("Resumed VM, removing state");
          dropState(g);
          return;
        }
        if (
          g.status !== "running" || (g.qmpstatus ?? "running") === "running"
        ) return;
        if (g.config.template) {
          throw new TaskFailure(
            `VM ${g.vmid} is a template and cannot be resumed!`,
          );
        }
        if (g.lock && g.lock !== "backup" && ctx.params.skiplock !== true) {
          throw new TaskFailure(lockedMessage(g));
        }
        if (real?.isReal(g)) await real.wake(g);
        else g.qmpstatus = undefined;
      },
    });
    return task.upid;
  },
};

/** Whether container `vmid` runs on the path's node (PVE::LXC::check_running is local). */
function ctRunsHere(ctx: Ctx): boolean {
  const g = ctx.core.state.get(ctx.params.vmid as number);
  return g?.type === "lxc" && g.node === ctx.params.node &&
    g.status === "running";
}

const lxcSuspend: Route = {
  method: "POST",
  path: "/nodes/{node}/lxc/{vmid}/status/suspend",
  privilege: "VM.PowerMgmt",
  handler: (ctx) => {
    const vmid = ctx.params.vmid as number;
    const node = ctx.params.node as string;
    if (!ctRunsHere(ctx)) throw new ApiError(500, `CT ${vmid} not running`);
    return ctx.core.tasks.start({
      node,
      type: "vzsuspend",
      id: String(vmid),
      user: ctx.user.tokenId,
      run: () => {
        const live = liveCt(ctx, node, vmid);
        if (live.lock) throw new TaskFailure(ctLockedMessage(live));
        if (live.status !== "running") {
          throw new TaskFailure(
            `command 'lxc-checkpoint -n ${vmid} -s -D /var/lib/vz/dump' failed: exit code 1`,
          );
        }
        ctx.core.state.stop(live);
        live.checkpointed = true;
      },
    }).upid;
  },
};

const lxcResume: Route = {
  method: "POST",
  path: "/nodes/{node}/lxc/{vmid}/status/resume",
  privilege: "VM.PowerMgmt",
  handler: (ctx) => {
    const vmid = ctx.params.vmid as number;
    const node = ctx.params.node as string;
    if (ctRunsHere(ctx)) throw new ApiError(500, `CT ${vmid} already running`);
    return ctx.core.tasks.start({
      node,
      type: "vzresume",
      id: String(vmid),
      user: ctx.user.tokenId,
      run: () => {
        const live = liveCt(ctx, node, vmid);
        if (!live.checkpointed || live.status === "running") {
          throw new TaskFailure(
            `command 'lxc-checkpoint -n ${vmid} -r --foreground -D /var/lib/vz/dump' failed: exit code 1`,
          );
        }
        ctx.core.state.start(live);
      },
    }).upid;
  },
};

/** The suspend and resume routes of both kinds. */
export const suspendRoutes: Route[] = [
  qemuSuspend,
  qemuResume,
  lxcSuspend,
  lxcResume,
];
