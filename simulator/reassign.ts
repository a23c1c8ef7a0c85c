/**
 * `POST …/qemu/{vmid}/move_disk` with `target-vmid`: a disk handed to another VM on the same node.
 * The volume is renamed to the target's next free `vm-<target>-disk-N` on its storage, leaves the
 * source's config (and boot order) without becoming unused there, and is attached to the target
 * under `target-disk` (an `unusedN` key takes the bare volume; a drive key goes through the config
 * update, so a running target hot-plugs it or keeps it pending).
 *
 * Source: qemu-server `PVE/API2/Qemu.pm` move_vm_disk ($load_and_check_reassign_configs before the
 * fork and again in the worker, $disk_reassignfn); pve-storage `PVE/Storage.pm` rename_volume.
 *
 * @module
 */

import { applyConfigChange, configDigest } from "./config.ts";
import { checkVmPerm, type Ctx, isRootPam, lockedMessage } from "./context.ts";
import {
  diskBytes,
  isCdrom,
  parseDrive,
  printDrive,
  volumeFormat,
  volumeName,
} from "./disks.ts";
import { ApiError, paramError } from "./http.ts";
import { TaskFailure } from "./tasks.ts";
import type { GuestState } from "./types.ts";

const MODIFIED =
  "detected modified configuration - file changed by other user? Try again.";

/** The two VMs and the drive of a reassign, checked as $load_and_check_reassign_configs does. */
async function checkReassign(ctx: Ctx) {
  const vmid = ctx.params.vmid as number;
  const target = ctx.params["target-vmid"] as number;
  const disk = ctx.params.disk as string;
  const targetDisk = (ctx.params["target-disk"] as string | undefined) ?? disk;
  const { state } = ctx.core;
  const src = state.get(vmid);
  const dst = state.get(target);
  if (!src) throw new ApiError(500, `could not find VM ${vmid}`);
  if (!dst) throw new ApiError(500, `could not find target VM ${target}`);
  if (src.node !== dst.node) {
    throw new ApiError(
      500,
      `Both VMs need to be on the same node (${src.node} != ${dst.node})`,
    );
  }
  for (const g of [src, dst]) {
    if (g.lock) throw new ApiError(500, lockedMessage(g));
  }
  if (src.config.template || dst.config.template) {
    throw new ApiError(500, "Can't move disks from or to template VMs");
  }
  for (const [g, key] of [[src, "digest"], [dst, "target-digest"]] as const) {
    const given = ctx.params[key] as string | undefined;
    if (given !== undefined && given !== await configDigest(g)) {
      throw new ApiError(500, `VM ${g.vmid}: ${MODIFIED}`);
    }
  }
  const value = src.config[disk];
  if (value === undefined) {
    throw new ApiError(500, `Disk '${disk}' for VM '${vmid}' does not exist`);
  }
  if (dst.config[targetDisk] !== undefined) {
    throw new ApiError(
      500,
      `Target disk key '${targetDisk}' is already in use for VM '${target}'`,
    );
  }
  const file = parseDrive(String(value)).file;
  if (isCdrom(String(value))) {
    throw new ApiError(500, "CD drive contents can't be moved to another VM");
  }
  const inSnapshot = Object.values(src.snapshots).some((s) =>
    Object.values(s.config).some((v) => String(v).split(",")[0] === file)
  );
  if (inSnapshot) {
    throw new ApiError(500, "Can't move disk used by a snapshot to another VM");
  }
  if (src.status === "running" && !/^unused\d+$/.test(disk)) {
    throw new ApiError(
      500,
      "Cannot move disk to another VM while the source VM is running - detach first",
    );
  }
  return { src, dst, disk, targetDisk, value: String(value), file };
}

/** The handler's part of a reassign: its checks, then a `qmmove` task named after both ends. */
export async function reassignDisk(ctx: Ctx): Promise<string> {
  const vmid = ctx.params.vmid as number;
  const target = ctx.params["target-vmid"] as number;
  if (!isRootPam(ctx.user)) checkVmPerm(ctx.user, target, "VM.Config.Disk");
  if (vmid === target) {
    throw paramError({
      "target-vmid": "must be different than source VMID to reassign disk",
    });
  }
  const { src, disk, targetDisk, file } = await checkReassign(ctx);
  const storage = file.split(":")[0];
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
  const task = ctx.core.tasks.start({
    node: src.node,
    type: "qmmove",
    id: `${vmid}-${disk}>${target}-${targetDisk}`,
    user: ctx.user.tokenId,
    run: async () => {
      let checked;
      try {
        checked = await checkReassign(ctx);
      } catch (err) {
        throw new TaskFailure((err as Error).message);
      }
      task.log.push(...reassign(ctx, checked));
    },
  });
  return task.upid;
}

/** $disk_reassignfn: rename, take the drive off the source, attach it to the target. */
function reassign(
  ctx: Ctx,
  c: Awaited<ReturnType<typeof checkReassign>>,
): string[] {
  const { src, dst, disk, targetDisk, value, file } = c;
  const log = [
    `reassign disk '${disk}' from VM '${src.vmid}' as '${targetDisk}' to VM '${dst.vmid}'`,
  ];
  const [storage] = file.split(":");
  const store = ctx.core.resources.get(src.node, storage);
  const taken = store
    ? ctx.core.resources.volumes(src.node, store).map((v) => v.volid)
    : [];
  let n = 0;
  while (taken.some((t) => t.includes(`-${dst.vmid}-disk-${n}`))) n++;
  const newVolid = `${storage}:${
    volumeName(
      store?.type,
      dst.vmid,
      `vm-${dst.vmid}-disk-${n}`,
      volumeFormat(file),
    )
  }`;
  const bytes = diskBytes(value) || (src.volumeSizes?.[file] ?? 0);
  if (dropFromBoot(src, disk)) {
    log.push(`removing disk '${disk}' from boot order config`);
  }
  delete src.config[disk];
  log.push(`removing disk '${disk}' from VM '${src.vmid}' config`);
  if (/^unused\d+$/.test(targetDisk)) {
    dst.config[targetDisk] = newVolid;
    if (bytes > 0) (dst.volumeSizes ??= {})[newVolid] = bytes;
    return log;
  }
  const drive = parseDrive(value);
  drive.file = newVolid;
  applyConfigChange(dst, {
    set: { [targetDisk]: printDrive(drive) },
    delete: [],
    revert: [],
    typeOf: (id) => ctx.core.resources.config(id)?.type,
    volumeBytes: () => bytes,
  });
  return log;
}

/** Takes `disk` out of the VM's `boot: order=…`; whether it was there. */
function dropFromBoot(g: GuestState, disk: string): boolean {
  const m = /^order=([^,]*)(.*)$/.exec(String(g.config.boot ?? ""));
  const order = m?.[1].split(";") ?? [];
  if (!m || !order.includes(disk)) return false;
  g.config.boot = `order=${order.filter((d) => d !== disk).join(";")}${m[2]}`;
  return true;
}
