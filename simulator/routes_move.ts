/**
 * Moving a guest's disk to another storage: `POST …/qemu/{vmid}/move_disk` (task `qmmove`; with
 * `target-vmid` a reassign to another VM, reassign.ts) and
 * `POST …/lxc/{vmid}/move_volume` (task `move_volume`). The new volume is allocated on the target
 * (the next free `vm-<vmid>-disk-N` there), the data copied (a running VM's by a drive mirror),
 * the config key pointed at it with its other options kept, and the old volume kept as the next
 * free `unusedN` — or freed with `delete`.
 *
 * Sources: qemu-server `PVE/API2/Qemu.pm` move_vm_disk ($load_and_check_move before the fork and
 * again in the worker, under the config flock only — no `lock` in the config), `PVE/QemuServer.pm`
 * clone_disk, clone_disk_copy_data, resolve_dst_disk_format, `PVE/QemuServer/BlockJob.pm`
 * blockdev_mirror and monitor (the log lines), `PVE/QemuServer/QemuImage.pm` convert;
 * pve-container `PVE/API2/LXC.pm` move_volume ($move_to_storage_checks sets `lock: disk` before the
 * fork, the worker removes it), `PVE/LXC.pm` copy_volume and alloc_disk; pve-storage
 * `PVE/Storage.pm` storage_check_enabled, resolve_format_hint.
 *
 * @module
 */

import { configDigest } from "./config.ts";
import { checkLock, type Ctx, qemuGuest, type Route } from "./context.ts";
import { addUnused } from "./disk_config.ts";
import {
  BLOCK_TYPES,
  DISK_KEY,
  diskBytes,
  formatSize,
  isCdrom,
  parseDrive,
  printDrive,
  volumeFormat,
  volumeName,
} from "./disks.ts";
import { ApiError, paramError } from "./http.ts";
import { type ParamSpec, VMID_SPEC } from "./params.ts";
import { cloneProgress, renderBytes } from "./progress_lines.ts";
import { reassignDisk } from "./reassign.ts";
import { ctGuest, ctLockedMessage, liveCt } from "./routes_lxc.ts";
import {
  offersContent,
  outOfSpaceError,
  type StorageState,
} from "./storage.ts";
import { TaskFailure } from "./tasks.ts";
import type { GuestState } from "./types.ts";

const UNUSED = /^unused\d+$/;
const MODIFIED =
  "detected modified configuration - file changed by other user? Try again.";

/** The parameters both endpoints share (the reassign ones are refused, see `noReassign`). */
const COMMON: Record<string, ParamSpec> = {
  storage: { type: "string", optional: true },
  delete: { type: "boolean", optional: true },
  digest: { type: "string", optional: true, maxLength: 40 },
  "target-vmid": { ...VMID_SPEC, optional: true },
  "target-digest": { type: "string", optional: true, maxLength: 40 },
};

/** 403 unless the caller may allocate on the target storage (both handlers, before their checks). */
function checkAllocate(ctx: Ctx, storage: string): void {
  if (
    !ctx.user.privilegesOn(`/storage/${storage}`).has("Datastore.AllocateSpace")
  ) {
    throw new ApiError(
      403,
      `Permission check failed (/storage/${storage}, Datastore.AllocateSpace)`,
    );
  }
}

/**
 * The handlers' choice between a move (the storage returned) and a reassign to another guest
 * (undefined): both or neither of `storage` and `target-vmid` is PVE's 400 (a container's "both" a
 * plain 500). A container's reassign is not simulated and answers 501.
 */
function storageOf(ctx: Ctx, ct: boolean): string | undefined {
  const storage = ctx.params.storage as string | undefined;
  const target = ctx.params["target-vmid"];
  if (storage !== undefined && target !== undefined) {
    if (ct) {
      throw new ApiError(
        500,
        "either set storage or target-vmid, but not both",
      );
    }
    const msg = "either set 'storage' or 'target-vmid', but not both";
    throw paramError({ "target-vmid": msg, storage: msg });
  }
  if (target !== undefined && !ct) return undefined;
  if (target !== undefined) {
    throw new ApiError(
      501,
      "the simulator does not reassign volumes to another container",
    );
  }
  if (storage === undefined) {
    const msg =
      "both 'storage' and 'target-vmid' missing, either needs to be set";
    throw paramError({ "target-vmid": msg, storage: msg });
  }
  return storage;
}

/** Whether any snapshot of `g` names `volid` (PVE's is_volume_in_use with the key passed). */
function inSnapshots(g: GuestState, volid: string): boolean {
  return Object.values(g.snapshots).some((s) =>
    Object.values(s.config).some((v) => String(v).split(",")[0] === volid)
  );
}

/** The lowest free `vm-<vmid>-disk-N` on `store` (pve-storage find_free_diskname). */
function freeName(ctx: Ctx, node: string, store: StorageState, vmid: number) {
  const taken = ctx.core.resources.volumes(node, store).map((v) => v.volid);
  let n = 0;
  while (taken.some((t) => new RegExp(`-${vmid}-disk-${n}(\\.|$)`).test(t))) {
    n++;
  }
  return n;
}

/** vdisk_alloc's refusal when `store` cannot hold `bytes` more. */
function checkSpace(
  ctx: Ctx,
  node: string,
  store: StorageState,
  name: string,
  bytes: number,
) {
  const avail = ctx.core.resources.availBytes(node, store);
  if (bytes > avail) {
    throw new TaskFailure(outOfSpaceError(store, name, bytes, avail));
  }
}

/** $load_and_check_move: the refusals of a move, before the fork and again in the worker. */
async function checkMove(
  ctx: Ctx,
  g: GuestState,
  storage: string,
  digest = true,
) {
  const disk = ctx.params.disk as string;
  checkLock(g, false);
  const given = ctx.params.digest as string | undefined;
  if (digest && given !== undefined && given !== await configDigest(g)) {
    throw new ApiError(500, MODIFIED);
  }
  const value = g.config[disk];
  if (value === undefined) {
    throw new ApiError(500, `disk '${disk}' does not exist`);
  }
  const file = parseDrive(String(value)).file;
  // drive_is_cdrom($drive, 1): a cloud-init drive is no CD-ROM here, it moves.
  if (isCdrom(String(value)) && !/[:/]vm-\d+-cloudinit/.test(file)) {
    throw new ApiError(500, "you can't move a cdrom");
  }
  const format = ctx.params.format as string | undefined;
  if (
    file.split(":")[0] === storage && (!format || format === volumeFormat(file))
  ) {
    throw new ApiError(
      500,
      "you can't move to the same storage with same format",
    );
  }
  const store = ctx.core.resources.enabled(g.node, storage);
  if (!store.content.includes("images")) {
    throw paramError({
      storage: `storage '${storage}' does not support vm images`,
    });
  }
  const snapshotted = inSnapshots(g, file);
  if (snapshotted && ctx.params.delete === true) {
    throw new ApiError(
      500,
      "you can't move a disk with snapshots and delete the source",
    );
  }
  return { disk, value: String(value), file, store, snapshotted };
}

/** resolve_dst_disk_format: the asked format (else the source's) where the target holds it, else raw. */
function targetFormat(store: StorageState, file: string, asked?: string) {
  const block = BLOCK_TYPES.includes(store.type);
  const format = block ? "raw" : asked ?? volumeFormat(file);
  const warning = asked && asked !== format
    ? `format '${asked}' is not supported by the target storage '${store.storage}' - using '${format}' instead`
    : undefined;
  return { format, warning };
}

/** What a qemu move does, decided as its worker starts: the new volume and how the data goes. */
interface MovePlan {
  disk: string;
  /** The drive as configured, and its volume. */
  value: string;
  file: string;
  newVolid: string;
  name: string;
  store: StorageState;
  bytes: number;
  /** A running VM's configured drive is mirrored (clone_disk `$use_drive_mirror`). */
  mirror: boolean;
  warnings: string[];
}

/** clone_disk's choices for a checked move: format, the target's next free name, the size. */
function planMove(
  ctx: Ctx,
  g: GuestState,
  checked: Awaited<ReturnType<typeof checkMove>>,
): MovePlan {
  const { disk, value, file, store, snapshotted } = checked;
  const warnings = snapshotted
    ? ["moving disk with snapshots, snapshots will not be moved!"]
    : [];
  const { format, warning } = targetFormat(
    store,
    file,
    ctx.params.format as string | undefined,
  );
  if (warning) warnings.push(warning);
  const name = `vm-${g.vmid}-disk-${freeName(ctx, g.node, store, g.vmid)}`;
  return {
    disk,
    value,
    file,
    name,
    store,
    newVolid: `${store.storage}:${
      volumeName(store.type, g.vmid, name, format)
    }`,
    bytes: diskBytes(value) || (g.volumeSizes?.[file] ?? 0),
    mirror: g.status === "running" && !UNUSED.test(disk),
    warnings,
  };
}

/** The lines move_vm_disk's worker prints before the copy runs. */
function startLines(plan: MovePlan, storage: string, bwlimit?: number) {
  const { disk, file, mirror, newVolid } = plan;
  const limit = bwlimit === undefined
    ? ""
    : ` with bandwidth limit: ${bwlimit} KiB/s`;
  return [
    `copying volume '${file}' from current storage '${
      file.split(":")[0]
    }' to target storage '${storage}'`,
    `create full clone of drive ${disk} (${file})`,
    `allocated target volume '${newVolid}'`,
    ...(mirror ? [`drive mirror is starting for drive-${disk}${limit}`] : []),
  ];
}

/** The lines the copy ends with: qemu-img's last progress, or the mirror job's completion. */
function endLines(plan: MovePlan): string[] {
  const all = `transferred ${renderBytes(plan.bytes)} of ${
    renderBytes(plan.bytes)
  } (100.00%)`;
  const job = `mirror-${plan.disk}`;
  return plan.mirror
    ? [
      `${job}: ${all} in 0s, ready`,
      "all 'mirror' jobs are ready",
      `${job}: Completing block job...`,
      `${job}: Completed successfully.`,
      `${job}: mirror-job finished`,
    ]
    : [all];
}

/**
 * The worker of a qemu move: the checks again (the config may have changed while the task was
 * queued), the copy, then the config: the drive on the new volume with its other options, the old
 * volume unusedN or freed. Returns the warnings.
 */
async function runMove(
  ctx: Ctx,
  vmid: number,
  plan: MovePlan,
  log: string[],
): Promise<string[]> {
  const g = ctx.core.state.get(vmid);
  if (!g) {
    throw new TaskFailure(
      `Configuration file 'nodes/${ctx.params.node}/qemu-server/${vmid}.conf' does not exist`,
    );
  }
  try {
    await checkMove(ctx, g, plan.store.storage, false);
  } catch (err) {
    throw new TaskFailure((err as Error).message);
  }
  const { disk, value, file, newVolid, bytes } = plan;
  checkSpace(ctx, g.node, plan.store, plan.name, bytes);
  // A real guest's QEMU has one disk: its first drive that is no CD-ROM.
  const realDisk = Object.keys(g.config).find((k) =>
    DISK_KEY.test(k) && !isCdrom(String(g.config[k]))
  );
  if (ctx.core.real?.isReal(g) && disk === realDisk) {
    await ctx.core.real.moveDisk(
      g,
      plan.store.storage,
      ctx.params.delete === true,
    );
  }
  log.push(...endLines(plan));
  // clone_disk: the drive keeps its options, gets the new volume and (not an unused) its size.
  const unused = UNUSED.test(disk);
  const drive = parseDrive(value);
  drive.file = newVolid;
  delete drive.props.format;
  if (!unused && bytes > 0) drive.props.size = formatSize(bytes);
  g.config[disk] = unused ? newVolid : printDrive(drive);
  if (unused && bytes > 0) (g.volumeSizes ??= {})[newVolid] = bytes;
  if (ctx.params.delete === true) {
    log.push(`removing source volume '${file}' after successful copy`);
  } else {
    const key = addUnused(g, file, bytes);
    log.push(`adding source volume '${file}' as '${key}' to config`);
  }
  return plan.warnings;
}

/** The move endpoints. */
export const moveRoutes: Route[] = [
  {
    method: "POST",
    path: "/nodes/{node}/qemu/{vmid}/move_disk",
    privilege: "VM.Config.Disk",
    params: {
      ...COMMON,
      disk: {
        type: "string",
        pattern: new RegExp(`${DISK_KEY.source}|^unused\\d+$`),
      },
      format: {
        type: "string",
        optional: true,
        enum: ["raw", "qcow2", "vmdk"],
      },
      bwlimit: { type: "integer", optional: true, minimum: 0 },
      "target-disk": {
        type: "string",
        optional: true,
        pattern: new RegExp(`${DISK_KEY.source}|^unused\\d+$`),
      },
    },
    handler: async (ctx) => {
      const storage = storageOf(ctx, false);
      if (storage === undefined) return await reassignDisk(ctx);
      checkAllocate(ctx, storage);
      const g = qemuGuest(ctx);
      const plan = planMove(ctx, g, await checkMove(ctx, g, storage));
      const task = ctx.core.tasks.start({
        node: g.node,
        type: "qmmove",
        id: String(g.vmid),
        user: ctx.user.tokenId,
        log: startLines(
          plan,
          storage,
          ctx.params.bwlimit as number | undefined,
        ),
        progress: cloneProgress(
          plan.bytes,
          plan.mirror ? `mirror-${plan.disk}` : undefined,
        ),
        run: () => runMove(ctx, g.vmid, plan, task.log),
      });
      return task.upid;
    },
  },
  {
    method: "POST",
    path: "/nodes/{node}/lxc/{vmid}/move_volume",
    privilege: "VM.Config.Disk",
    params: {
      ...COMMON,
      volume: { type: "string", pattern: /^(rootfs|mp\d+|unused\d+)$/ },
      // A number (KiB/s) in pve-container's schema.
      bwlimit: { type: "string", optional: true, pattern: /^\d+(\.\d+)?$/ },
      "target-volume": {
        type: "string",
        optional: true,
        pattern: /^(rootfs|mp\d+|unused\d+)$/,
      },
    },
    handler: async (ctx) => {
      const storage = storageOf(ctx, true) as string;
      checkAllocate(ctx, storage);
      const g = ctGuest(ctx);
      const key = ctx.params.volume as string;
      // $move_to_storage_checks, under the config flock before the fork.
      if (g.lock) throw new ApiError(500, ctLockedMessage(g));
      if (g.status === "running") {
        throw new ApiError(500, "cannot move volumes of a running container");
      }
      if (UNUSED.test(key)) {
        throw new ApiError(
          500,
          `cannot move volume '${key}', only configured volumes can be moved to another storage`,
        );
      }
      const value = g.config[key];
      if (value === undefined) {
        // parse_volume of an absent key: parse_property_string of '' misses the required
        // properties (pve-common `PVE/JSONSchema.pm`, raised as "format error" with them).
        const missing = "property is missing and it is not optional";
        throw new ApiError(500, "format error", {
          ...(key === "rootfs" ? {} : { mp: missing }),
          volume: missing,
        });
      }
      const file = String(value).split(",")[0];
      if (ctx.params.delete === true && inSnapshots(g, file)) {
        throw new ApiError(
          500,
          "you can't move a volume with snapshots and delete the source",
        );
      }
      const digest = ctx.params.digest as string | undefined;
      if (digest !== undefined && digest !== await configDigest(g)) {
        throw new ApiError(500, MODIFIED);
      }
      g.lock = "disk";
      const { node, vmid } = g;
      return ctx.core.tasks.start({
        node,
        type: "move_volume",
        id: String(vmid),
        user: ctx.user.tokenId,
        run: () => {
          const live = liveCt(ctx, node, vmid);
          try {
            moveCtVolume(ctx, live, key, storage);
          } finally {
            live.lock = undefined;
          }
        },
        onFailure: () => {
          const live = ctx.core.state.get(vmid);
          if (live?.lock === "disk") live.lock = undefined;
        },
      }).upid;
    },
  },
];

/**
 * The worker of a container move (copy_volume, alloc_disk): a ZFS pool gets a subvolume, any
 * other storage offering `rootdir` a raw volume of the same size; the mount point keeps its options.
 */
function moveCtVolume(
  ctx: Ctx,
  g: GuestState,
  key: string,
  storage: string,
): void {
  const value = String(g.config[key] ?? "");
  if (!/^[^/:]+:/.test(value)) {
    throw new TaskFailure(
      `cannot copy volumes of type ${value.startsWith("/") ? "bind" : ""}`,
    );
  }
  const store = ctx.core.resources.get(g.node, storage);
  if (!store) throw new TaskFailure(`storage '${storage}' does not exist`);
  if (store.type !== "zfspool" && !offersContent(store, "rootdir")) {
    throw new TaskFailure(
      `content type 'rootdir' is not available or configured on storage '${storage}'`,
    );
  }
  const file = value.split(",")[0];
  const bytes = diskBytes(value);
  const volname = ctx.core.resources.nextVolname(g.node, store, g.vmid);
  checkSpace(ctx, g.node, store, volname, bytes);
  g.config[key] = [`${storage}:${volname}`, ...value.split(",").slice(1)].join(
    ",",
  );
  if (ctx.params.delete !== true) addUnused(g, file, bytes);
}
