/**
 * Snapshots of VMs and containers: list, create, rollback, delete — PVE's shapes, task types and
 * locks (pve-guest-common PVE/AbstractConfig.pm `snapshot_create`, `snapshot_rollback`,
 * `snapshot_delete`; API: qemu-server PVE/API2/Qemu.pm `snapshot_list`/`snapshot`/`rollback`/
 * `delsnapshot`, pve-container PVE/API2/LXC/Snapshot.pm).
 *
 * The config lock is held while each task runs (`snapshot`, `rollback`, `snapshot-delete`); the
 * guest's `parent` config key names the snapshot it descends from. What each step checks and the
 * words it dies with are PVE's.
 *
 * @module
 */

import { type Ctx, type Route } from "./context.ts";
import { configDigest } from "./config.ts";
import { canSnapshot, DISK_KEY, isCdrom } from "./disks.ts";
import { ctDigest } from "./lxc.ts";
import { ApiError } from "./http.ts";
import type { ParamSpec } from "./params.ts";
import { TaskFailure } from "./tasks.ts";
import type { GuestState, GuestType, SimSnapshot } from "./types.ts";

const OPT_BOOL: ParamSpec = { type: "boolean", optional: true };
/** pve-snapshot-name: format pve-configid (`$CONFIGID_RE`, pve-common JSONSchema.pm), maxLength 40. */
export const SNAPNAME_SPEC: ParamSpec = {
  type: "string",
  pattern: /^[a-z][a-z0-9_-]+$/i,
  maxLength: 40,
};

/** Per kind: path segment, config path, lock noun, task type prefix. */
const KINDS: Record<
  GuestType,
  { conf: string; noun: string; task: string }
> = {
  qemu: { conf: "qemu-server", noun: "VM", task: "qm" },
  lxc: { conf: "lxc", noun: "CT", task: "vz" },
};

/** The guest of the path, of this kind, on this node — else PVE's 500 from load_config. */
function guestOf(ctx: Ctx, type: GuestType): GuestState {
  const node = ctx.params.node as string;
  const vmid = ctx.params.vmid as number;
  const g = ctx.core.state.get(vmid);
  if (!g || g.type !== type || g.node !== node) {
    throw new ApiError(
      500,
      `Configuration file 'nodes/${node}/${
        KINDS[type].conf
      }/${vmid}.conf' does not exist`,
    );
  }
  return g;
}

/** AbstractConfig::check_lock: "<VM|CT> is locked (<lock>)". */
function lockError(g: GuestState): string | undefined {
  return g.lock ? `${KINDS[g.type].noun} is locked (${g.lock})` : undefined;
}

/** What a snapshot copies of the config (AbstractConfig `__snapshot_copy_config`). */
function copyState(
  g: GuestState,
): Pick<SimSnapshot, "name" | "tags" | "config"> {
  return { name: g.name, tags: [...g.tags], config: { ...g.config } };
}

/**
 * has_feature('snapshot') of the guest (qemu-server `PVE/QemuConfig.pm`, pve-container
 * `PVE/LXC/Config.pm`): every volume but a CD-ROM must support it on its storage.
 */
function snapshotFeature(ctx: Ctx, g: GuestState): boolean {
  const volumes = Object.entries(g.config).filter(([k, v]) =>
    (g.type === "qemu"
      ? DISK_KEY.test(k)
      : k === "rootfs" || /^mp\d+$/.test(k)) &&
    !isCdrom(String(v))
  ).map(([, v]) => String(v).split(",")[0]);
  return volumes.every((volid) =>
    canSnapshot(ctx.core.resources.config(volid.split(":")[0])?.type, volid)
  );
}

/** `GET …/snapshot`: every snapshot, then `current` ("You are here!") with its parent. */
function listRoute(type: GuestType): Route {
  return {
    method: "GET",
    path: `/nodes/{node}/${type}/{vmid}/snapshot`,
    privilege: "VM.Audit",
    handler: async (ctx) => {
      const g = guestOf(ctx, type);
      const out: Record<string, unknown>[] = [];
      for (const [name, s] of Object.entries(g.snapshots)) {
        const item: Record<string, unknown> = {
          name,
          snaptime: s.snaptime,
          description: s.description,
        };
        // qemu-server lists vmstate (0/1); pve-container has none.
        if (type === "qemu") item.vmstate = s.vmstate ? 1 : 0;
        if (s.config.parent) item.parent = s.config.parent;
        if (s.snapstate) item.snapstate = s.snapstate;
        out.push(item);
      }
      // qemu-server `PVE/API2/Qemu.pm` snapshot_list, pve-container `PVE/API2/LXC/Snapshot.pm` list.
      const current: Record<string, unknown> = {
        name: "current",
        digest: type === "qemu" ? await configDigest(g) : await ctDigest(g),
        running: g.status === "running" ? 1 : 0,
        description: "You are here!",
      };
      if (g.config.parent) current.parent = g.config.parent;
      out.push(current);
      return out;
    },
  };
}

/**
 * `GET …/snapshot/{snapname}/config`: the config the snapshot keeps, with its own keys
 * (qemu-server `PVE/API2/Qemu.pm` and pve-container `PVE/API2/LXC/Snapshot.pm`
 * get_snapshot_config: the snapshot's section, without `lock`; 500 when it does not exist).
 */
function configRoute(type: GuestType): Route {
  return {
    method: "GET",
    path: `/nodes/{node}/${type}/{vmid}/snapshot/{snapname}/config`,
    privilege: "VM.Audit",
    handler: (ctx) => {
      const g = guestOf(ctx, type);
      const name = ctx.params.snapname as string;
      const snap = g.snapshots[name];
      if (!snap) throw new ApiError(500, `snapshot '${name}' does not exist`);
      // name and tags are kept beside the config (types.ts); PVE's section holds them. The
      // simulator keeps no RAM state volume, so a `vmstate` volid is not shown.
      const out: Record<string, unknown> = { ...snap.config };
      delete out.lock;
      if (snap.name) out.name = snap.name;
      if (snap.tags.length > 0) out.tags = snap.tags.join(";");
      out.snaptime = snap.snaptime;
      if (snap.description) out.description = snap.description;
      if (snap.snapstate) out.snapstate = snap.snapstate;
      return out;
    },
  };
}

/** `POST …/snapshot` → `qmsnapshot`/`vzsnapshot`. */
function createRoute(type: GuestType): Route {
  return {
    method: "POST",
    path: `/nodes/{node}/${type}/{vmid}/snapshot`,
    privilege: "VM.Snapshot",
    params: {
      snapname: SNAPNAME_SPEC,
      description: { type: "string", optional: true },
      ...(type === "qemu" ? { vmstate: OPT_BOOL } : {}),
    },
    handler: (ctx) => {
      const g = guestOf(ctx, type);
      const name = ctx.params.snapname as string;
      // Checked by the API handler before the worker forks.
      if (name === "current") {
        throw new ApiError(
          500,
          `unable to use snapshot name 'current' (reserved name)`,
        );
      }
      if (type === "qemu" && name.toLowerCase() === "pending") {
        throw new ApiError(
          500,
          `unable to use snapshot name 'pending' (reserved name)`,
        );
      }
      if (type === "lxc" && name === "vzdump") {
        throw new ApiError(
          500,
          `unable to use snapshot name 'vzdump' (reserved name)`,
        );
      }
      // __snapshot_prepare runs first in the worker: its refusal is the task's error.
      const refusal = g.config.template
        ? "you can't take a snapshot if it's a template"
        : lockError(g) ??
          (g.snapshots[name]
            ? `snapshot name '${name}' already used`
            : !snapshotFeature(ctx, g)
            ? "snapshot feature is not available"
            : undefined);
      if (!refusal) {
        g.lock = "snapshot";
        g.snapshots[name] = {
          ...copyState(g),
          snaptime: Math.floor(Date.now() / 1000),
          description: String(ctx.params.description ?? ""),
          // vmstate is saved only when the VM runs (__snapshot_prepare).
          vmstate: ctx.params.vmstate === true && g.status === "running",
          snapstate: "prepare",
        };
      }
      return ctx.core.tasks.start({
        node: g.node,
        type: `${KINDS[type].task}snapshot`,
        id: String(g.vmid),
        user: ctx.user.tokenId,
        run: () => {
          if (refusal) throw new TaskFailure(refusal);
          // __snapshot_commit: the snapshot is complete, the guest descends from it, unlocked.
          const snap = g.snapshots[name];
          delete snap.snapstate;
          g.config.parent = name;
          g.lock = undefined;
        },
        // snapshot_create's cleanup on failure: the half-made snapshot and the lock go.
        onFailure: () => {
          if (refusal) return;
          delete g.snapshots[name];
          g.lock = undefined;
        },
      }).upid;
    },
  };
}

/** `POST …/snapshot/{snapname}/rollback` → `qmrollback`/`vzrollback`. */
function rollbackRoute(type: GuestType): Route {
  return {
    method: "POST",
    path: `/nodes/{node}/${type}/{vmid}/snapshot/{snapname}/rollback`,
    privilege: "VM.Snapshot|VM.Snapshot.Rollback",
    params: { start: OPT_BOOL },
    handler: (ctx) => {
      const g = guestOf(ctx, type);
      const name = ctx.params.snapname as string;
      const snap = g.snapshots[name];
      const refusal = g.config.template
        ? "you can't rollback if vm is a template"
        : !snap
        ? `snapshot '${name}' does not exist`
        : snap.snapstate
        ? `unable to rollback to incomplete snapshot (snapstate = ${snap.snapstate})`
        : lockError(g);
      const { state } = ctx.core;
      if (!refusal) {
        // __snapshot_rollback_vm_stop, then the 'rollback' lock for the volume rollback.
        if (g.status === "running") state.stop(g);
        g.lock = "rollback";
      }
      return ctx.core.tasks.start({
        node: g.node,
        type: `${KINDS[type].task}rollback`,
        id: String(g.vmid),
        user: ctx.user.tokenId,
        run: () => {
          if (refusal || !snap) throw new TaskFailure(refusal ?? "");
          // __snapshot_apply_config: the snapshot's config becomes the guest's; parent = it.
          g.name = snap.name;
          g.tags = [...snap.tags];
          g.config = { ...snap.config, parent: name };
          g.pending = {};
          g.pendingDelete = [];
          g.lock = undefined;
          // A snapshot with RAM resumes running (__snapshot_rollback_vm_start); `start` asks so.
          if (snap.vmstate || ctx.params.start === true) state.start(g);
        },
        // A failed rollback leaves the 'rollback' lock (PVE removes it only on success).
      }).upid;
    },
  };
}

/** `DELETE …/snapshot/{snapname}` → `qmdelsnapshot`/`vzdelsnapshot`. */
function deleteRoute(type: GuestType): Route {
  return {
    method: "DELETE",
    path: `/nodes/{node}/${type}/{vmid}/snapshot/{snapname}`,
    privilege: "VM.Snapshot",
    params: { force: OPT_BOOL },
    handler: (ctx) => {
      const g = guestOf(ctx, type);
      const name = ctx.params.snapname as string;
      const snap = g.snapshots[name];
      const refusal = !snap
        ? `snapshot '${name}' does not exist`
        : lockError(g);
      if (!refusal && snap) {
        g.lock = "snapshot-delete";
        snap.snapstate = "delete";
      }
      return ctx.core.tasks.start({
        node: g.node,
        type: `${KINDS[type].task}delsnapshot`,
        id: String(g.vmid),
        user: ctx.user.tokenId,
        run: () => {
          if (refusal || !snap) throw new TaskFailure(refusal ?? "");
          // Parent references to it move to its own parent, then it goes and the lock with it.
          const up = snap.config.parent;
          const relink = (config: Record<string, unknown>) => {
            if (config.parent !== name) return;
            if (up) config.parent = up;
            else delete config.parent;
          };
          relink(g.config);
          for (const other of Object.values(g.snapshots)) relink(other.config);
          delete g.snapshots[name];
          g.lock = undefined;
        },
        // A failed delete keeps the 'snapshot-delete' lock and the snapshot (snapstate delete).
      }).upid;
    },
  };
}

/** The snapshot routes of both guest kinds. */
export const snapshotRoutes: Route[] = (["qemu", "lxc"] as const).flatMap((
  type,
) => [
  listRoute(type),
  configRoute(type),
  createRoute(type),
  rollbackRoute(type),
  deleteRoute(type),
]);
