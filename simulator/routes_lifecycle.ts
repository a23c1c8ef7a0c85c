/**
 * Creating and destroying qemu guests: clone and delete. Both are tasks: the
 * clone appears, and the deleted guest disappears, only when the task ends.
 *
 * @module
 */

import {
  checkLock,
  checkVmPerm,
  lockedMessage,
  qemuGuest,
  type Route,
} from "./context.ts";
import { cloneDisk, DISK_KEY, diskBytes, type StorageTypeOf } from "./disks.ts";
import { cloneProgress } from "./progress_lines.ts";
import { storedInstead } from "./faults.ts";
import { ApiError } from "./http.ts";
import { NODE_SPEC, VMID_SPEC } from "./params.ts";
import { withUuid } from "./state.ts";
import { TaskFailure, type TaskRecord } from "./tasks.ts";
import type { ConfigValue, GuestState, SimGuest } from "./types.ts";

const DNS_NAME = /^[a-zA-Z0-9]([a-zA-Z0-9.-]*[a-zA-Z0-9])?$/;

/** clone_vm "always change MAC!": a new random address with Proxmox's prefix (BC:24:11). */
function withNewMac(net: string): string {
  const byte = () =>
    Math.floor(Math.random() * 256).toString(16).toUpperCase().padStart(2, "0");
  const mac = `BC:24:11:${byte()}:${byte()}:${byte()}`;
  return net.replace(/=([0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5})/, `=${mac}`);
}

/** The new guest of a clone: config copied, disks renamed, NEW smbios1 uuid and vmgenid, stopped. */
function clonedGuest(
  src: GuestState,
  newid: number,
  opts: {
    name?: string;
    description?: string;
    node: string;
    full: boolean;
    storage?: string;
    typeOf: StorageTypeOf;
  },
): SimGuest {
  const config: Record<string, ConfigValue> = {};
  for (const [k, v] of Object.entries(src.config)) {
    if (k === "template") continue;
    if (DISK_KEY.test(k)) {
      config[k] = cloneDisk(
        String(v),
        src.vmid,
        newid,
        opts.full,
        opts.typeOf,
        opts.storage,
      );
    } else if (/^net\d+$/.test(k)) config[k] = withNewMac(String(v));
    else if (k === "smbios1") config[k] = withUuid(v, crypto.randomUUID());
    else if (k === "vmgenid") config[k] = crypto.randomUUID();
    else config[k] = v; // includes meta (ctime): clones of one template share it
  }
  if (!("smbios1" in config)) {
    config.smbios1 = withUuid(undefined, crypto.randomUUID());
  }
  if (opts.description !== undefined) config.description = opts.description;
  return {
    vmid: newid,
    node: opts.node,
    type: "qemu",
    name: opts.name ?? `Copy-of-VM-${src.name}`,
    status: "stopped",
    tags: [...src.tags],
    agent: src.agent,
    config,
    // A clone of a real guest is a real guest too (booting the same image on a fresh disk).
    real: src.real,
  };
}

/** Clone and delete. */
export const lifecycleRoutes: Route[] = [
  {
    method: "POST",
    path: "/nodes/{node}/qemu/{vmid}/clone",
    privilege: "VM.Clone",
    params: {
      newid: VMID_SPEC,
      name: { type: "string", optional: true, pattern: DNS_NAME },
      description: { type: "string", optional: true },
      full: { type: "boolean", optional: true },
      storage: { type: "string", optional: true },
      target: { ...NODE_SPEC, optional: true },
      format: {
        type: "string",
        optional: true,
        enum: ["raw", "qcow2", "vmdk"],
      },
      pool: { type: "string", optional: true },
      snapname: { type: "string", optional: true },
      bwlimit: { type: "integer", optional: true, minimum: 0 },
    },
    handler: (ctx) => {
      const src = qemuGuest(ctx);
      const { state, tasks } = ctx.core;
      const newid = ctx.params.newid as number;
      checkVmPerm(ctx.user, newid, "VM.Allocate");
      const target = ctx.params.target as string | undefined;
      if (target !== undefined && !state.hasNode(target)) {
        throw new ApiError(500, `no such cluster node '${target}'`);
      }
      // qemu-server PVE/API2/Qemu.pm clone_vm `$load_and_check`, run before the worker forks:
      // `PVE::QemuConfig->check_lock($conf)` on the source — a template vzdump is backing up
      // (`lock: backup`) cannot be cloned until the backup ends.
      checkLock(src, false);
      const full = (ctx.params.full as boolean | undefined) ??
        !src.config.template;
      const storage = ctx.params.storage as string | undefined;
      // qemu-server PVE/API2/Qemu.pm clone_vm `$load_and_check`, before the
      // worker forks: a linked clone takes neither a storage nor a format.
      for (const key of ["storage", "format"]) {
        if (!full && ctx.params[key] !== undefined) {
          throw new ApiError(
            500,
            `parameter '${key}' not allowed for linked clones`,
          );
        }
      }
      // Checked before the task is forked: a taken id fails the call itself.
      if (state.isTaken(newid)) {
        throw new ApiError(
          500,
          `unable to create VM ${newid}: config file already exists`,
        );
      }
      const disks = Object.entries(src.config).filter(([k, v]) =>
        DISK_KEY.test(k) && !String(v).includes("media=cdrom")
      );
      const cloneOpts = {
        name: ctx.params.name as string | undefined,
        description: ctx.params.description as string | undefined,
        node: target ?? src.node,
        full,
        storage,
        typeOf: (id: string) => ctx.core.resources.config(id)?.type,
      };
      // qemu-server PVE/API2/Qemu.pm clone_vm: the new config is written with `lock: clone`, the
      // final name and the source's tags (written again after each drive is copied) long before the
      // worker ends; only then is the lock deleted. So while the task runs, the new VMID holds a
      // guest with the requested name, locked. (The first moments, when the file holds only
      // `lock: clone`, are not simulated.)
      state.add({ ...clonedGuest(src, newid, cloneOpts), lock: "clone" });
      const stores = state.takeStores();
      const isOurs = () => {
        const g = state.get(newid);
        return g && g.type === "qemu" && g.lock === "clone" ? g : undefined;
      };
      return tasks.start({
        node: src.node,
        type: "qmclone",
        id: String(src.vmid),
        user: ctx.user.tokenId,
        log: disks.map(([k, v]) =>
          `create ${full ? "full" : "linked"} clone of drive ${k} (${
            String(v).split(",")[0]
          })`
        ),
        // A full clone copies the first disk while the task runs: qemu-img convert for a stopped
        // source, a drive mirror for a running one (qemu-server clone_disk).
        progress: full && disks.length > 0
          ? cloneProgress(
            diskBytes(String(disks[0][1])),
            src.status === "running" ? `drive-${disks[0][0]}` : undefined,
          )
          : undefined,
        run: () => {
          const live = state.get(src.vmid);
          if (!live) {
            throw new TaskFailure(
              `Configuration file 'nodes/${src.node}/qemu-server/${src.vmid}.conf' does not exist`,
            );
          }
          // A test may have replaced the locked guest meanwhile (sim.addGuest): fail like PVE would.
          const mine = isOurs();
          if (!mine) {
            throw new TaskFailure(
              `unable to create VM ${newid}: config file already exists`,
            );
          }
          // clone_vm's end: the lock is deleted and the final config written.
          state.patch(newid, {
            lock: undefined,
            config: storedInstead(mine.config, stores),
          });
        },
        // clone_vm's error path destroys the new config (and the copied volumes).
        onFailure: () => {
          if (isOurs()) state.remove(newid);
        },
      }).upid;
    },
  },
  {
    method: "DELETE",
    path: "/nodes/{node}/qemu/{vmid}",
    privilege: "VM.Allocate",
    params: {
      purge: { type: "boolean", optional: true },
      "destroy-unreferenced-disks": { type: "boolean", optional: true },
      skiplock: { type: "boolean", optional: true },
    },
    handler: (ctx) => {
      const g = qemuGuest(ctx);
      const { state, tasks } = ctx.core;
      // qemu-server's early checks, before the task.
      if (g.status === "running") {
        throw new ApiError(500, `VM ${g.vmid} is running - destroy failed`);
      }
      if (g.config.protection) {
        throw new ApiError(
          500,
          `can't remove VM ${g.vmid} - protection mode enabled`,
        );
      }
      if (g.ha?.managed && ctx.params.purge !== true) {
        throw new ApiError(
          500,
          `unable to remove VM ${g.vmid} - used in HA resources and purge parameter not set.`,
        );
      }
      const disks = Object.entries(g.config).filter(([k, v]) =>
        DISK_KEY.test(k) && !String(v).includes("media=cdrom")
      );
      const task: TaskRecord = tasks.start({
        node: g.node,
        type: "qmdestroy",
        id: String(g.vmid),
        user: ctx.user.tokenId,
        run: () => {
          const live = state.get(g.vmid);
          if (!live || live.node !== g.node) {
            throw new TaskFailure(
              `Configuration file 'nodes/${g.node}/qemu-server/${g.vmid}.conf' does not exist`,
            );
          }
          // qemu-server PVE/QemuServer.pm destroy_vm: check_lock (unless skiplock) comes before
          // any volume is removed, so a locked VM's task log shows no "Removing image".
          if (live.lock && ctx.params.skiplock !== true) {
            throw new TaskFailure(lockedMessage(live));
          }
          if (live.status === "running") {
            throw new TaskFailure(`VM ${g.vmid} is running - destroy failed`);
          }
          for (const [, v] of disks) {
            task.log.push(`Removing image: ${String(v).split(",")[0]}`);
          }
          state.remove(g.vmid);
        },
      });
      return task.upid;
    },
  },
];
