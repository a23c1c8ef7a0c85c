/**
 * Backups and restores: `POST /nodes/{node}/vzdump`, `GET /nodes/{node}/vzdump/extractconfig`,
 * `DELETE /nodes/{node}/storage/{storage}/content/{volume}` (backup volumes), and the restore half of
 * `POST /nodes/{node}/qemu` (`archive`) and `POST /nodes/{node}/lxc` (`restore=1`, see
 * routes_lxc.ts), which read back what a backup wrote (backups.ts).
 *
 * What follows PVE:
 * - vzdump answers a bare `OK`, starting nothing, when the guest is on another node (pve-manager
 *   PVE/API2/VZDump.pm `vzdump`, "silent exit if specified VMs run on other nodes"); a notes template
 *   it cannot use is a 400 on `notes-template` (`verify_vzdump_parameters`). In the `vzdump` task
 *   (PVE/VZDump.pm `exec_backup`, `exec_backup_task`): the storage must take backups ("can't use
 *   storage … for backups - wrong content type"), the guest is locked `backup` while it runs, a
 *   `stop` backup of a running guest stops it and starts it again at the end, a `suspend` backup of a
 *   running VM pauses and resumes it; a guest that fails makes the job end "job errors".
 * - a restore writes the config under `lock: create` before the task (AbstractConfig
 *   `create_and_lock_config`, refusing an existing guest unless `force`); the task (`qmrestore`,
 *   `vzrestore`) writes the archive's config with the volumes allocated anew and drops the lock. A
 *   VM restore that fails keeps its config (qemu-server PVE/API2/Qemu.pm `create_vm`: "VM n state is
 *   NOT cleaned up"), a new container's is destroyed (pve-container PVE/API2/LXC.pm `create`).
 * - a protected backup cannot be deleted: the `imgdel` task fails "cannot remove protected volume
 *   '<volname>' on '<storage>'" (pve-storage PVE/Storage/Plugin.pm `free_image`).
 * - the `protected` flag and the notes are set after the archive is written (`update_volume_attribute`).
 *
 * @module
 */

import {
  backupsOf,
  configText,
  dumpPath,
  findBackup,
  notesTemplateProblem,
  restoredConfig,
  type SimBackup,
  writeBackup,
} from "./backups.ts";
import { checkVmPerm, type Ctx, type Route } from "./context.ts";
import { ApiError, paramError } from "./http.ts";
import type { ParamSpec } from "./params.ts";
import type { StorageState } from "./storage.ts";
import { TaskFailure } from "./tasks.ts";
import type { GuestState, GuestType } from "./types.ts";

const OPT_BOOL: ParamSpec = { type: "boolean", optional: true };
const STORAGE_ID = /^[a-z][a-z0-9\-_.]*[a-z0-9]$/i;
const NOUN: Record<GuestType, string> = { qemu: "VM", lxc: "CT" };

/** A backup volume id: `<storage>:backup/<file>`. */
function parseBackupVolid(volid: string): { storage: string; file: string } {
  const m = /^([a-z][a-z0-9\-_.]*[a-z0-9]):backup\/(.+)$/i.exec(volid);
  if (!m) {
    throw new ApiError(
      500,
      `unable to use volume ${volid} - content type needs to be 'backup'`,
    );
  }
  return { storage: m[1], file: m[2] };
}

/** The archive `volid` as `node` sees it, or the error PVE gives for a file that is not there. */
function archiveOn(
  ctx: Ctx,
  node: string,
  volid: string,
): { store: StorageState; backup: SimBackup } {
  const { storage, file } = parseBackupVolid(volid);
  const store = ctx.core.resources.usable(node, storage);
  const backup = findBackup(store, volid);
  if (!backup) {
    throw new ApiError(
      500,
      `ERROR: file '${dumpPath(store, file)}' does not exist`,
    );
  }
  return { store, backup };
}

/** What a backup does to a running guest while it runs, and how it puts it back. */
function quiesce(ctx: Ctx, g: GuestState, mode: string): () => void {
  const { state } = ctx.core;
  // A real VM's power is QEMU's: its backups run in snapshot mode here.
  if (g.real || g.status !== "running") return () => {};
  if (mode === "stop") {
    state.stop(g);
    return () => {
      if (g.status !== "running") state.start(g);
    };
  }
  if (mode === "suspend" && g.type === "qemu") {
    g.qmpstatus = "paused";
    return () => {
      g.qmpstatus = undefined;
    };
  }
  return () => {};
}

/** `POST /nodes/{node}/vzdump`. */
const vzdumpRoute: Route = {
  method: "POST",
  path: "/nodes/{node}/vzdump",
  params: {
    vmid: { type: "string", optional: true },
    storage: { type: "string", optional: true, pattern: STORAGE_ID },
    mode: {
      type: "string",
      optional: true,
      enum: ["snapshot", "suspend", "stop"],
    },
    compress: {
      type: "string",
      optional: true,
      enum: ["0", "1", "gzip", "lzo", "zstd"],
    },
    "notes-template": { type: "string", optional: true },
    protected: OPT_BOOL,
    all: OPT_BOOL,
  },
  handler: (ctx) => {
    const { state, tasks, resources } = ctx.core;
    const node = ctx.params.node as string;
    const template = ctx.params["notes-template"] as string | undefined;
    const problem = template === undefined
      ? undefined
      : notesTemplateProblem(template);
    if (problem) throw paramError({ "notes-template": problem });
    const vmids = String(ctx.params.vmid ?? "").split(/[,;\s]+/).filter((v) =>
      v
    )
      .map(Number);
    // get_included_guests: guests elsewhere are skipped; unknown ids are kept, to fail visibly.
    const local = vmids.filter((id) => {
      const g = state.get(id);
      return g === undefined || g.node === node;
    });
    if (local.length === 0) return "OK";
    const mode = String(ctx.params.mode ?? "snapshot");
    const storage = String(ctx.params.storage ?? "local");
    // pve-manager PVE/API2/VZDump.pm vzdump: the handler checks the storage, the worker the
    // guests (PVE/VZDump.pm exec_backup, each before any is backed up: without `all`, one the
    // token may not back up fails the whole task).
    const space = "Datastore.AllocateSpace";
    if (!ctx.user.privilegesOn(`/storage/${storage}`).has(space)) {
      throw new ApiError(
        403,
        `Permission check failed (/storage/${storage}, ${space})`,
      );
    }
    const mayBackUp = (id: number) =>
      ctx.user.privilegesOn(`/vms/${id}`).has("VM.Backup");
    const restores: (() => void)[] = [];
    const locked: GuestState[] = [];
    // exec_backup_task (pve-manager PVE/VZDump.pm): a guest that is not running is backed up in
    // `stop` mode whatever was asked, and the task logs the mode used.
    const used = new Map<number, string>();
    for (const id of local) {
      const g = state.get(id);
      if (!g || g.lock || !mayBackUp(id)) continue;
      used.set(id, g.status === "running" ? mode : "stop");
      // lock_vm, then the mode's prepare: the guest is locked and quiesced while the task runs.
      g.lock = "backup";
      locked.push(g);
      restores.push(quiesce(ctx, g, mode));
    }
    const unlock = () => {
      for (const g of locked) if (g.lock === "backup") g.lock = undefined;
      for (const back of restores) back();
    };
    const task = tasks.start({
      node,
      type: "vzdump",
      id: local.length === 1 ? String(local[0]) : "",
      user: ctx.user.tokenId,
      log: [
        `INFO: starting new backup job: vzdump ${
          local.join(" ")
        } --storage ${storage} --mode ${mode}`,
      ],
      run: async () => {
        const store = resources.get(node, storage);
        if (!store || !resources.exists(storage)) {
          unlock();
          throw new TaskFailure(`storage '${storage}' does not exist`);
        }
        if (!store.content.includes("backup")) {
          unlock();
          throw new TaskFailure(
            `can't use storage '${storage}' for backups - wrong content type`,
          );
        }
        const refused = local.find((id) => state.get(id) && !mayBackUp(id));
        if (refused !== undefined) {
          unlock();
          throw new TaskFailure(
            `Permission check failed (/vms/${refused}, VM.Backup)`,
          );
        }
        let errors = 0;
        for (const id of local) {
          const g = state.get(id);
          const failed = (why: string) => {
            errors++;
            task.log.push(`ERROR: Backup of VM ${id} failed - ${why}`);
          };
          if (!g) {
            failed(`unable to find VM '${id}'`);
            continue;
          }
          if (!locked.includes(g)) {
            failed(`${NOUN[g.type]} is locked (${g.lock})`);
            continue;
          }
          task.log.push(
            `INFO: Starting Backup of VM ${id} (${g.type})`,
            `INFO: backup mode: ${used.get(id) ?? mode}`,
          );
          const real = ctx.core.real?.isReal(g) ? ctx.core.real : undefined;
          const disk = await real?.archiveDisk(g);
          const b = writeBackup(store, g, node, {
            compress: ctx.params.compress as string | undefined,
            notesTemplate: template,
            protected: ctx.params.protected === true,
          });
          b.disk = disk;
          task.log.push(
            `INFO: creating vzdump archive '${dumpPath(store, b.file)}'`,
            `INFO: archive file size: ${(b.size / 2 ** 20).toFixed(2)}MB`,
            ...(b.notes !== undefined ? ["INFO: adding notes to backup"] : []),
            ...(b.protected ? ["INFO: marking backup as protected"] : []),
            `INFO: Finished Backup of VM ${id} (00:00:01)`,
          );
        }
        unlock();
        task.log.push(
          errors > 0
            ? "INFO: Backup job finished with errors"
            : "INFO: Backup job finished successfully",
        );
        if (errors > 0) throw new TaskFailure("job errors");
      },
      onFailure: () => {
        if (locked.some((g) => g.lock === "backup")) unlock();
      },
    });
    return task.upid;
  },
};

/** `GET /nodes/{node}/vzdump/extractconfig`: the config an archive holds. */
const extractConfigRoute: Route = {
  method: "GET",
  path: "/nodes/{node}/vzdump/extractconfig",
  params: { volume: { type: "string" } },
  handler: (ctx) => {
    const { backup } = archiveOn(
      ctx,
      ctx.params.node as string,
      ctx.params.volume as string,
    );
    checkVmPerm(ctx.user, backup.vmid, "VM.Backup");
    return configText(backup);
  },
};

/** `DELETE /nodes/{node}/storage/{storage}/content/{volume}` of a backup volume → `imgdel`. */
const deleteVolumeRoute: Route = {
  method: "DELETE",
  path: "/nodes/{node}/storage/{storage}/content/{volume}",
  params: {
    delay: { type: "integer", optional: true, minimum: 1, maximum: 30 },
  },
  handler: (ctx) => {
    const node = ctx.params.node as string;
    const storage = ctx.params.storage as string;
    const given = ctx.params.volume as string;
    // real_volume_id: a volume id, or a volume name on the path's storage.
    const volid = given.includes(":") ? given : `${storage}:${given}`;
    const parsed = parseBackupVolid(volid);
    if (parsed.storage !== storage) {
      throw new ApiError(
        500,
        `storage ID mismatch ('${parsed.storage}' != '${storage}')`,
      );
    }
    const store = ctx.core.resources.usable(node, storage);
    const owner = findBackup(store, volid)?.vmid;
    if (owner !== undefined) checkVmPerm(ctx.user, owner, "VM.Backup");
    const task = ctx.core.tasks.start({
      node,
      type: "imgdel",
      id: `${owner !== undefined ? `${owner}@` : ""}${storage}`,
      user: ctx.user.tokenId,
      run: () => {
        const list = backupsOf(store);
        const at = list.findIndex((b) => b.volid === volid);
        if (at < 0) {
          throw new TaskFailure(
            `unlink '${
              dumpPath(store, parsed.file)
            }' failed - No such file or directory`,
          );
        }
        if (list[at].protected) {
          throw new TaskFailure(
            `cannot remove protected volume 'backup/${parsed.file}' on '${storage}'`,
          );
        }
        list.splice(at, 1);
        task.log.push(`Removed volume '${volid}'`);
      },
    });
    return task.upid;
  },
};

/**
 * A restore of the archive `volid` as guest `vmid` of `type` on the path's node: the synchronous
 * part of create_vm / create, then the `qmrestore` / `vzrestore` task. Returns the UPID.
 */
export function restoreGuest(ctx: Ctx, type: GuestType, volid: string): string {
  const { state, tasks, resources } = ctx.core;
  const node = ctx.params.node as string;
  const vmid = ctx.params.vmid as number;
  const force = ctx.params.force === true;
  const storage = ctx.params.storage as string | undefined;
  const noun = NOUN[type];
  const emsg = `unable to restore ${noun} ${vmid} -`;
  const { backup } = archiveOn(ctx, node, volid);
  const existing = state.get(vmid);
  if (
    existing && (!force || existing.type !== type || existing.node !== node)
  ) {
    // check_vmid_unused: "<VM|CT> <vmid> already exists on node '<node>'".
    const said = `${
      NOUN[existing.type]
    } ${vmid} already exists on node '${existing.node}'`;
    throw new ApiError(500, type === "qemu" ? `${emsg} ${said}` : said);
  }
  if (type === "lxc" && existing && existing.status === "running") {
    throw new ApiError(500, "can't overwrite running container");
  }
  if (state.isTaken(vmid) && !existing) {
    throw new ApiError(
      500,
      `${emsg} VM ${vmid} already exists on node '${node}'`,
    );
  }
  // create_vm (qemu-server PVE/API2/Qemu.pm, pve-container PVE/API2/LXC.pm): VM.Allocate on the
  // VMID, or VM.Backup there to restore over an existing guest with force; else raise_perm_exc.
  const held = ctx.user.privilegesOn(`/vms/${vmid}`);
  const overOwn = force && existing !== undefined && held.has("VM.Backup");
  if (!held.has("VM.Allocate") && !overOwn) {
    throw new ApiError(403, "Permission check failed");
  }
  if (existing?.lock) {
    throw new ApiError(500, `${emsg} ${noun} is locked (${existing.lock})`);
  }
  // create_and_lock_config: from now on the guest exists, locked, with what was there before.
  const g = existing ?? state.add({
    vmid,
    node,
    type,
    name: "",
    status: "stopped",
    lock: "create",
  });
  // The config create_and_lock_config writes holds nothing but the lock (no smbios1 either).
  if (!existing) g.config = {};
  g.lock = "create";
  const task = tasks.start({
    node,
    type: type === "qemu" ? "qmrestore" : "vzrestore",
    id: String(vmid),
    user: ctx.user.tokenId,
    log: [`restoring '${volid}' now..`],
    run: async () => {
      const live = state.get(vmid);
      if (live !== g) throw new TaskFailure(`${emsg} config file vanished`);
      if (g.config.protection) {
        throw new TaskFailure(`${emsg} protection mode enabled`);
      }
      if (g.status === "running") {
        throw new TaskFailure(`${emsg} vm is running`);
      }
      if (backup.type !== type) {
        throw new TaskFailure(
          `${emsg} archive '${volid}' is a backup of a ${NOUN[backup.type]}`,
        );
      }
      const usable = (id: string) => {
        try {
          return resources.usable(node, id);
        } catch (err) {
          throw new TaskFailure(`${emsg} ${(err as Error).message}`);
        }
      };
      let config;
      try {
        config = restoredConfig(
          backup,
          vmid,
          storage,
          ctx.params.unique === true,
          usable,
        );
      } catch (err) {
        throw new TaskFailure(`${emsg} ${(err as Error).message}`);
      }
      if (backup.real && backup.disk && ctx.core.real) {
        await ctx.core.real.restoreDisk(g, backup.disk);
      }
      g.real = backup.real;
      g.agent = backup.agent;
      g.config = config;
      g.pending = {};
      g.pendingDelete = [];
      g.snapshots = {};
      g.name = backup.name;
      g.tags = [...backup.tags];
      g.lock = undefined;
      task.log.push(`restore of '${volid}' successful`);
    },
    onFailure: () => {
      if (state.get(vmid) !== g) return;
      if (type === "lxc" && !existing) state.remove(vmid);
      else if (g.lock === "create") g.lock = undefined;
    },
  });
  return task.upid;
}

/** The backup routes (a qemu restore is `POST /nodes/{node}/qemu` with `archive`: routes_qemu_create.ts). */
export const backupRoutes: Route[] = [
  vzdumpRoute,
  extractConfigRoute,
  deleteVolumeRoute,
];
