/**
 * Migration of VMs and containers between the simulated cluster's nodes, in PVE's shapes:
 * `GET …/migrate` (the preconditions: qemu-server PVE/API2/Qemu.pm `migrate_vm_precondition`,
 * pve-container PVE/API2/LXC.pm `migrate_vm_precondition`) and `POST …/migrate` (`migrate_vm` of
 * both), whose `qmigrate`/`vzmigrate` task holds the `migrate` lock and moves the guest when it
 * ends (PVE::QemuMigrate, PVE::LXC::Migrate), or — for an HA-managed guest — a `hamigrate` task
 * that only queues `ha-manager migrate` (pve-ha-manager): the HA manager moves the guest later
 * (`ha.applyDelayMs`) or never (`ha.neverApplies`).
 *
 * The guest's node is what `/cluster/resources` and every node path see at once (the config file
 * moving in pmxcfs is the move). Disks on node-local storage move with the guest (an offline
 * migration copies them; a live one needs `with-local-disks`).
 *
 * @module
 */

import type { Ctx, Route } from "./context.ts";
import { ApiError, paramError } from "./http.ts";
import type { ParamSpec } from "./params.ts";
import { migrationProgress } from "./progress_lines.ts";
import { TaskFailure } from "./tasks.ts";
import type { GuestState, GuestType } from "./types.ts";

const OPT_BOOL: ParamSpec = { type: "boolean", optional: true };
const OPT_STRING: ParamSpec = { type: "string", optional: true };
const TARGET: ParamSpec = {
  type: "string",
  pattern: /^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?$/,
};
const NOUN: Record<GuestType, string> = { qemu: "VM", lxc: "CT" };
const CONF: Record<GuestType, string> = { qemu: "qemu-server", lxc: "lxc" };
/** Disk keys whose value names a volume (`<storage>:<volume>`). */
const VOLUME_KEY: Record<GuestType, RegExp> = {
  qemu: /^(ide|sata|scsi|virtio|efidisk|tpmstate|unused)\d+$/,
  lxc: /^(rootfs|mp\d+|unused\d+)$/,
};

function guestOf(ctx: Ctx, type: GuestType): GuestState {
  const node = ctx.params.node as string;
  const vmid = ctx.params.vmid as number;
  const g = ctx.core.state.get(vmid);
  if (!g || g.type !== type || g.node !== node) {
    throw new ApiError(
      500,
      `Configuration file 'nodes/${node}/${
        CONF[type]
      }/${vmid}.conf' does not exist`,
    );
  }
  return g;
}

/** The guest's volumes: config key, volid, storage id, whether a CD-ROM. */
function volumes(g: GuestState) {
  const out: { key: string; volid: string; storage: string; cdrom: boolean }[] =
    [];
  for (const [key, value] of Object.entries(g.config)) {
    if (!VOLUME_KEY[g.type].test(key)) continue;
    const volid = String(value).split(",")[0];
    const m = /^([a-zA-Z][a-zA-Z0-9\-_.]*[a-zA-Z0-9]):/.exec(volid);
    if (!m) continue; // `none`, `cdrom`, a bind mount path
    out.push({
      key,
      volid,
      storage: m[1],
      cdrom: /(^|,)media=cdrom(,|$)/.test(String(value)),
    });
  }
  return out;
}

/**
 * Local devices that block migration (PVE::QemuMigrate::Helpers::check_local_resources): PCI and
 * USB passthrough (a USB `spice` redirection or a mapping does not count), a serial or parallel
 * port on a host device.
 */
function localResources(g: GuestState): string[] {
  if (g.type !== "qemu") return [];
  return Object.entries(g.config).filter(([key, value]) => {
    const v = String(value);
    if (/^hostpci\d+$/.test(key)) return !/(^|,)mapping=/.test(v);
    if (/^usb\d+$/.test(key)) {
      return !/(^|,)(host=)?spice(,|$)/.test(v) && !/(^|,)mapping=/.test(v);
    }
    if (/^(serial|parallel)\d+$/.test(key)) return v.startsWith("/dev/");
    return false;
  }).map(([key]) => key).sort();
}

/** Storages of the guest's disks that `node` does not have (check_local_storage_availability). */
function unavailableStorages(ctx: Ctx, g: GuestState, node: string): string[] {
  const missing = new Set<string>();
  for (const v of volumes(g)) {
    if (!v.cdrom && !ctx.core.resources.get(node, v.storage)) {
      missing.add(v.storage);
    }
  }
  return [...missing].sort();
}

/**
 * `GET …/migrate`: running, the nodes allowed and why others are not, local disks and devices.
 * PVE 8's pve-container (5.3, stable-bookworm PVE/API2/LXC.pm) has no migrate_vm_precondition.
 */
function preconditionRoute(type: GuestType): Route {
  return {
    method: "GET",
    path: `/nodes/{node}/${type}/{vmid}/migrate`,
    since: type === "lxc" ? 9 : undefined,
    privilege: "VM.Migrate",
    params: { target: { ...TARGET, optional: true } },
    handler: (ctx) => {
      const g = guestOf(ctx, type);
      if (g.lock) {
        throw new ApiError(500, `${NOUN[type]} is locked (${g.lock})`);
      }
      const allowed: string[] = [];
      const notAllowed: Record<string, Record<string, unknown>> = {};
      for (const node of ctx.core.state.nodes) {
        if (node === g.node) continue;
        const storages = type === "qemu"
          ? unavailableStorages(ctx, g, node)
          : [];
        if (storages.length > 0) {
          notAllowed[node] = { unavailable_storages: storages };
        } else allowed.push(node);
      }
      const running = g.status === "running" ? 1 : 0;
      if (type === "lxc") {
        return {
          running,
          "allowed-nodes": allowed,
          "not-allowed-nodes": notAllowed,
        };
      }
      const localDisks = volumes(g).filter((v) => {
        const store = ctx.core.resources.get(g.node, v.storage);
        return store !== undefined && !store.shared;
      }).map((v) => ({
        volid: v.volid,
        cdrom: v.cdrom ? 1 : 0,
        is_unused: /^unused\d+$/.test(v.key) ? 1 : 0,
        size: 0,
      }));
      return {
        running,
        allowed_nodes: allowed,
        not_allowed_nodes: notAllowed,
        local_disks: localDisks,
        local_resources: localResources(g),
        "mapped-resources": [],
        "mapped-resource-info": {},
        "has-dbus-vmstate": 1,
      };
    },
  };
}

/** The `migrate_vm` checks both kinds make before forking, in PVE's order. */
function checkTarget(ctx: Ctx, g: GuestState): string {
  const target = ctx.params.target as string;
  if (target === g.node) throw paramError({ target: "target is local node." });
  if (!ctx.core.state.hasNode(target)) {
    // PVE::Cluster::check_node_exists
    throw new ApiError(500, `no such cluster node '${target}'`);
  }
  return target;
}

/** Moves a guest to `target`: the config moves, the disks on local storage with it. */
function moveTo(g: GuestState, target: string): void {
  g.node = target;
}

/** `POST …/migrate` → `qmigrate`/`vzmigrate`, or `hamigrate` for an HA-managed guest. */
function migrateRoute(type: GuestType): Route {
  const params: Record<string, ParamSpec> = type === "qemu"
    ? {
      target: TARGET,
      online: OPT_BOOL,
      force: OPT_BOOL,
      "with-local-disks": OPT_BOOL,
      "with-conntrack-state": OPT_BOOL,
      targetstorage: OPT_STRING,
      migration_type: {
        type: "string",
        optional: true,
        enum: ["secure", "insecure"],
      },
      migration_network: OPT_STRING,
      bwlimit: { type: "integer", optional: true, minimum: 0 },
    }
    : {
      target: TARGET,
      online: OPT_BOOL,
      restart: OPT_BOOL,
      timeout: { type: "integer", optional: true },
      "target-storage": OPT_STRING,
      bwlimit: { type: "integer", optional: true, minimum: 0 },
    };
  return {
    method: "POST",
    path: `/nodes/{node}/${type}/{vmid}/migrate`,
    privilege: "VM.Migrate",
    params,
    handler: (ctx) => {
      const g = guestOf(ctx, type);
      const target = checkTarget(ctx, g);
      for (const rootOnly of ["force", "migration_type", "migration_network"]) {
        // An API token is never root@pam.
        if (ctx.params[rootOnly] !== undefined) {
          throw paramError({ [rootOnly]: "Only root may use this option." });
        }
      }
      if (g.lock) {
        throw new ApiError(500, `${NOUN[type]} is locked (${g.lock})`);
      }
      const running = g.status === "running";
      if (type === "qemu" && running && ctx.params.online !== true) {
        throw new ApiError(500, "can't migrate running VM without --online");
      }
      if (
        type === "lxc" && running && ctx.params.online !== true &&
        ctx.params.restart !== true
      ) {
        throw new ApiError(
          500,
          "can't migrate running container without --online or --restart",
        );
      }
      if (type === "qemu") {
        const missing = unavailableStorages(ctx, g, target);
        if (missing.length > 0) {
          // PVE::QemuServer::check_storage_availability
          throw new ApiError(
            500,
            `storage '${missing[0]}' is not available on node '${target}'`,
          );
        }
      }
      return g.ha?.managed
        ? haMigrate(ctx, g, target)
        : migrateTask(ctx, g, target);
    },
  };
}

/** The HA path: the task queues `ha-manager migrate` and ends; the HA manager moves the guest later. */
function haMigrate(ctx: Ctx, g: GuestState, target: string): string {
  const { state, tasks, timers } = ctx.core;
  return tasks.start({
    node: g.node,
    type: "hamigrate",
    id: String(g.vmid),
    user: ctx.user.tokenId,
    log: [
      `Requesting HA migration for ${NOUN[g.type]} ${g.vmid} to node ${target}`,
    ],
    run: () => {
      const live = state.get(g.vmid);
      if (!live?.ha || live.ha.neverApplies) return;
      // A guess at the HA manager's visible states: `migrate` while it works, then back to the
      // requested state on the new node.
      const requested = live.ha.state;
      live.ha.state = "migrate";
      timers.after(live.ha.applyDelayMs ?? 0, () => {
        const now = state.get(g.vmid);
        if (!now?.ha?.managed) return;
        moveTo(now, target);
        now.ha.state = requested;
      });
    },
  }).upid;
}

/** The plain path: the `migrate` lock for the task's length, the move when it ends. */
function migrateTask(ctx: Ctx, g: GuestState, target: string): string {
  const { state, tasks } = ctx.core;
  const running = g.status === "running";
  const type = g.type;
  // PVE::QemuMigrate::prepare / scan_local_volumes refusals happen inside the worker.
  const refusal = migrateRefusal(ctx, g);
  const log: string[] = [];
  if (!refusal) {
    g.lock = "migrate";
    // A restart migration stops the container first (PVE::LXC::Migrate::prepare), then starts it
    // on the target.
    if (type === "lxc" && running) state.stop(g);
  } else {
    log.push(...refusal.log);
  }
  return tasks.start({
    node: g.node,
    type: type === "qemu" ? "qmigrate" : "vzmigrate",
    id: String(g.vmid),
    user: ctx.user.tokenId,
    log: [
      `starting migration of ${NOUN[type]} ${g.vmid} to node '${target}'`,
      ...log,
    ],
    // A live migration copies the VM's memory while the task runs (qemu-server QemuMigrate phase2).
    progress: type === "qemu" && running && !refusal
      ? migrationProgress(
        Number.parseInt(String(g.config.memory ?? 2048)) * 1024 ** 2,
      )
      : undefined,
    run: () => {
      if (refusal) throw new TaskFailure(refusal.error);
      const live = state.get(g.vmid);
      if (!live) throw new TaskFailure(`${NOUN[type]} ${g.vmid} vanished`);
      moveTo(live, target);
      live.lock = undefined;
      if (type === "lxc" && running) state.start(live);
      return [];
    },
    // A failed migration leaves the guest where it was, unlocked (phase3_cleanup / final cleanup).
    onFailure: () => {
      const live = state.get(g.vmid);
      if (live && live.lock === "migrate") live.lock = undefined;
      if (live && type === "lxc" && running && live.status !== "running") {
        state.start(live);
      }
    },
  }).upid;
}

/** What the migration worker dies with before moving anything, with its WARN lines. */
function migrateRefusal(
  ctx: Ctx,
  g: GuestState,
): { error: string; log: string[] } | undefined {
  const running = g.status === "running";
  if (g.type === "lxc") {
    if (running && ctx.params.online === true && ctx.params.restart !== true) {
      return {
        error: "lxc live migration is currently not implemented",
        log: [],
      };
    }
    return undefined;
  }
  const devices = localResources(g);
  if (devices.length > 0) {
    return {
      error: `can't migrate VM which uses local devices: ${devices.join(", ")}`,
      log: [],
    };
  }
  const log: string[] = [];
  for (const v of volumes(g)) {
    const store = ctx.core.resources.get(g.node, v.storage);
    if (!store || store.shared) continue;
    // A cloud-init drive is regenerated on the target (QemuMigrate scan_local_volumes).
    if (v.cdrom && /vm-\d+-cloudinit/.test(v.volid)) continue;
    if (v.cdrom) {
      log.push(
        `WARN: can't migrate local disk '${v.volid}': local cdrom image`,
      );
    } else if (
      running && !/^unused\d+$/.test(v.key) &&
      ctx.params["with-local-disks"] !== true
    ) {
      log.push(
        `WARN: can't migrate local disk '${v.volid}': can't live migrate attached local disks without with-local-disks option`,
      );
    }
  }
  return log.length > 0
    ? { error: "can't migrate VM - check log", log }
    : undefined;
}

/** The migrate routes of both guest kinds. */
export const migrateRoutes: Route[] = (["qemu", "lxc"] as const).flatMap((
  type,
) => [
  preconditionRoute(type),
  migrateRoute(type),
]);
