/**
 * Rebooting a running guest: `POST …/status/reboot`, for VMs and containers. A reboot is a new
 * boot: the guest's pid changes and its uptime restarts (ClusterState.start), and pending changes
 * are applied, as at any start.
 *
 * qemu (qemu-server PVE/API2/Qemu.pm `vm_reboot`): refused synchronously when paused ("VM is paused
 * - cannot shutdown") or not running ("VM n not running"). The `qmreboot` worker
 * (PVE::QemuServer::vm_reboot) writes a reboot request and shuts QEMU down under the config lock
 * (a flock the config does not show); the task ends there. The start happens outside the task:
 * qmeventd runs `qm cleanup`, which finds the reboot request and calls `vm_start` (PVE/CLI/qm.pm
 * `cleanup`) — here `restartDelayMs` after the task. For an HA-managed VM that `vm_start` only
 * queues an HA request, so the HA manager starts it (`ha.applyDelayMs`), or never
 * (`ha.neverApplies`).
 *
 * lxc (pve-container PVE/API2/LXC/Status.pm `vm_reboot`): refused when not running ("VM n not
 * running" — its words say VM); the `vzreboot` worker stops and starts the container inside the
 * task (PVE::LXC::vm_reboot).
 *
 * A task override with `noEffect` ends the task OK without any reboot: the same boot goes on.
 *
 * @module
 */

import { type Ctx, lockedMessage, qemuGuest, type Route } from "./context.ts";
import type { ParamSpec } from "./params.ts";
import { ctGuest, ctLockedMessage, liveCt } from "./routes_lxc.ts";
import { ApiError } from "./http.ts";
import { TaskFailure } from "./tasks.ts";
import type { GuestState } from "./types.ts";

/** Between a VM's reboot task ending and `qm cleanup` starting it again. */
export const RESTART_DELAY_MS = 30;

const TIMEOUT: ParamSpec = { type: "integer", optional: true, minimum: 0 };

function liveVm(ctx: Ctx, g: GuestState): GuestState {
  const live = ctx.core.state.get(g.vmid);
  if (!live || live.type !== "qemu" || live.node !== g.node) {
    throw new TaskFailure(
      `Configuration file 'nodes/${g.node}/qemu-server/${g.vmid}.conf' does not exist`,
    );
  }
  return live;
}

/** `qm cleanup` acting on the reboot request: vm_start, or for an HA resource the HA manager. */
function restartLater(ctx: Ctx, vmid: number): void {
  const { state, timers } = ctx.core;
  const g = state.get(vmid);
  if (!g) return;
  const ha = g.ha?.managed ? g.ha : undefined;
  if (ha?.neverApplies) return;
  const delay = RESTART_DELAY_MS + (ha?.applyDelayMs ?? 0);
  timers.after(delay, () => {
    const now = state.get(vmid);
    if (now && now.status === "stopped") state.start(now);
  });
}

/** The reboot routes of both guest types. */
export const rebootRoutes: Route[] = [
  {
    method: "POST",
    path: "/nodes/{node}/qemu/{vmid}/status/reboot",
    privilege: "VM.PowerMgmt",
    params: { timeout: TIMEOUT },
    handler: (ctx) => {
      const g = qemuGuest(ctx);
      if (g.status === "running" && g.qmpstatus === "paused") {
        throw new ApiError(500, "VM is paused - cannot shutdown");
      }
      if (g.status !== "running") {
        throw new ApiError(500, `VM ${g.vmid} not running`);
      }
      return ctx.core.tasks.start({
        node: g.node,
        type: "qmreboot",
        id: String(g.vmid),
        user: ctx.user.tokenId,
        log: [`requesting reboot of VM ${g.vmid}`],
        run: () => {
          const live = liveVm(ctx, g);
          if (live.lock) throw new TaskFailure(lockedMessage(live));
          // vm_reboot returns quietly when the VM is no longer running.
          if (live.status !== "running") return;
          // A real VM really shuts down; a new qmstart task then boots a new QEMU (real_guests.ts).
          if (ctx.core.real?.isReal(live)) {
            return ctx.core.real.power("reboot", live, ctx.params);
          }
          if (live.ignoresShutdown) {
            throw new TaskFailure("VM quit/powerdown failed - got timeout");
          }
          ctx.core.state.stop(live);
          restartLater(ctx, live.vmid);
        },
      }).upid;
    },
  },
  {
    method: "POST",
    path: "/nodes/{node}/lxc/{vmid}/status/reboot",
    privilege: "VM.PowerMgmt",
    params: { timeout: TIMEOUT },
    handler: (ctx) => {
      const g = ctGuest(ctx);
      if (g.status !== "running") {
        throw new ApiError(500, `VM ${g.vmid} not running`);
      }
      return ctx.core.tasks.start({
        node: g.node,
        type: "vzreboot",
        id: String(g.vmid),
        user: ctx.user.tokenId,
        run: () => {
          const live = liveCt(ctx, g.node, g.vmid);
          if (live.lock) throw new TaskFailure(ctLockedMessage(live));
          if (live.status !== "running") return;
          ctx.core.state.stop(live);
          ctx.core.state.start(live);
        },
      }).upid;
    },
  },
];
