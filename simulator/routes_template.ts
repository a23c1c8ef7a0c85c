/**
 * Converting a stopped guest into a template, for VMs and containers.
 *
 * qemu (qemu-server PVE/API2/Qemu.pm `template`): the checks run before the task is forked and
 * again inside it; the `qmtemplate` worker writes `template: 1` to the config, then turns each disk
 * into a base volume (`PVE::QemuServer::template_create` → `vdisk_create_base`, `vm-N-disk-M` →
 * `base-N-disk-M`), writing the config after each. The lock held meanwhile is the config file's
 * flock (`lock_config`), which the config does not show. (Here both happen at the task's end.)
 *
 * lxc (pve-container PVE/API2/LXC.pm `template`): the same checks, then a `vztemplate` worker that
 * converts the volumes first and writes `template: 1` last (`PVE::LXC::template_create`) — and the
 * API answers null: the code returns undef, not the worker's UPID (the schema says `null` too).
 *
 * @module
 */

import { type Ctx, lockedMessage, qemuGuest, type Route } from "./context.ts";
import { baseVolume, DISK_KEY } from "./disks.ts";
import { ApiError } from "./http.ts";
import { ctGuest, ctLockedMessage, liveCt } from "./routes_lxc.ts";
import { TaskFailure } from "./tasks.ts";
import type { GuestState } from "./types.ts";

/** Disk keys a template conversion turns into base volumes. */
function isVolumeKey(g: GuestState, key: string): boolean {
  return g.type === "qemu"
    ? DISK_KEY.test(key)
    : key === "rootfs" || /^mp\d+$/.test(key);
}

/** Every volume of the guest becomes a base volume (vdisk_create_base, see disks.ts baseVolume). */
function convertVolumes(ctx: Ctx, g: GuestState): void {
  const typeOf = (id: string) => ctx.core.resources.config(id)?.type;
  for (const [k, v] of Object.entries(g.config)) {
    if (isVolumeKey(g, k)) g.config[k] = baseVolume(String(v), g.vmid, typeOf);
  }
}

/** `$load_and_check` of qemu-server (also run again inside the worker). */
function qemuCheck(g: GuestState): void {
  if (g.lock) throw new ApiError(500, lockedMessage(g));
  if (Object.keys(g.snapshots).length > 0) {
    throw new ApiError(
      500,
      "unable to create template, because VM contains snapshots",
    );
  }
  if (g.config.template) {
    throw new ApiError(500, "you can't convert a template to a template");
  }
  if (g.status === "running") {
    throw new ApiError(
      500,
      "you can't convert a VM to template if VM is running",
    );
  }
}

/** pve-container's checks, in its order. */
function ctCheck(g: GuestState): void {
  if (g.lock) throw new ApiError(500, ctLockedMessage(g));
  if (Object.keys(g.snapshots).length > 0) {
    throw new ApiError(
      500,
      "unable to create template, because CT contains snapshots",
    );
  }
  if (g.config.template) {
    throw new ApiError(500, "you can't convert a template to a template");
  }
  if (g.status === "running") {
    throw new ApiError(
      500,
      "you can't convert a CT to template if the CT is running",
    );
  }
}

/** The worker's re-check: a refusal becomes the task's error. */
function recheck(check: (g: GuestState) => void, g: GuestState): void {
  try {
    check(g);
  } catch (e) {
    throw new TaskFailure((e as Error).message);
  }
}

function liveVm(ctx: Ctx, g: GuestState): GuestState {
  const live = ctx.core.state.get(g.vmid);
  if (!live || live.type !== "qemu" || live.node !== g.node) {
    throw new TaskFailure(
      `Configuration file 'nodes/${g.node}/qemu-server/${g.vmid}.conf' does not exist`,
    );
  }
  return live;
}

/** The template routes of both guest types. */
export const templateRoutes: Route[] = [
  {
    method: "POST",
    path: "/nodes/{node}/qemu/{vmid}/template",
    privilege: "VM.Allocate",
    params: { disk: { type: "string", optional: true, pattern: DISK_KEY } },
    handler: (ctx) => {
      const g = qemuGuest(ctx);
      if (ctx.params.disk !== undefined) {
        throw new ApiError(
          500,
          "simulator: converting a single disk is not simulated",
        );
      }
      qemuCheck(g);
      return ctx.core.tasks.start({
        node: g.node,
        type: "qmtemplate",
        id: String(g.vmid),
        user: ctx.user.tokenId,
        run: () => {
          const live = liveVm(ctx, g);
          recheck(qemuCheck, live);
          live.config.template = 1;
          convertVolumes(ctx, live);
        },
      }).upid;
    },
  },
  {
    method: "POST",
    path: "/nodes/{node}/lxc/{vmid}/template",
    privilege: "VM.Allocate",
    handler: (ctx) => {
      const g = ctGuest(ctx);
      ctCheck(g);
      ctx.core.tasks.start({
        node: g.node,
        type: "vztemplate",
        id: String(g.vmid),
        user: ctx.user.tokenId,
        run: () => {
          const live = liveCt(ctx, g.node, g.vmid);
          recheck(ctCheck, live);
          convertVolumes(ctx, live);
          live.config.template = 1;
        },
      });
      return null;
    },
  },
];
