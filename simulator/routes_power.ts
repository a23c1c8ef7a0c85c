/**
 * Power state of a qemu guest: `status/current` and start/stop/shutdown.
 *
 * Plain guests change state when their task ends. HA-managed guests do not:
 * PVE only asks the HA manager (`hastart`/`hastop` task, "Requesting HA …"),
 * the task ends OK at once, and the guest changes later (`ha.applyDelayMs`) or
 * never (`ha.neverApplies`). Only a later `status/current` shows the truth.
 *
 * @module
 */

import { type Ctx, lockedMessage, qemuGuest, type Route } from "./context.ts";
import { ApiError } from "./http.ts";
import type { ParamSpec } from "./params.ts";
import { TaskFailure } from "./tasks.ts";
import type { GuestState } from "./types.ts";
import { statusCurrent } from "./views.ts";

const OPT_BOOL: ParamSpec = { type: "boolean", optional: true };
const OPT_STRING: ParamSpec = { type: "string", optional: true };
const OPT_INT: ParamSpec = { type: "integer", optional: true, minimum: 0 };

/**
 * The guest again at task end (it may have been removed meanwhile), its lock checked — but a
 * start passes the lock `suspended` of a VM suspended to disk: qemu-server `PVE/QemuServer.pm`
 * vm_start skips check_lock for it and resumes the VM from its saved state; and a stop or
 * shutdown of a VM that does not run ends before any lock check (_do_vm_stop).
 */
function liveGuest(ctx: Ctx, g: GuestState, action: string): GuestState {
  const live = ctx.core.state.get(g.vmid);
  if (!live || live.node !== g.node) {
    throw new TaskFailure(
      `Configuration file 'nodes/${g.node}/qemu-server/${g.vmid}.conf' does not exist`,
    );
  }
  const resumes = action === "start" && live.lock === "suspended";
  const idle = action !== "start" && live.status !== "running";
  if (live.lock && ctx.params.skiplock !== true && !resumes && !idle) {
    throw new TaskFailure(lockedMessage(live));
  }
  return live;
}

/**
 * Queues a request to the HA manager (hastart/hastop); the guest follows after applyDelayMs, or
 * never. Shared by VMs and containers (`noun` only names the guest in the task log).
 */
export function haRequest(
  ctx: Ctx,
  g: GuestState,
  target: "started" | "stopped",
  noun: "VM" | "CT" = "VM",
): string {
  const { state, tasks, timers } = ctx.core;
  const verb = target === "started" ? "start" : "stop";
  return tasks.start({
    node: g.node,
    type: `ha${verb}`,
    id: String(g.vmid),
    user: ctx.user.tokenId,
    log: [`Requesting HA ${verb} for ${noun} ${g.vmid}`],
    run: () => {
      const live = state.get(g.vmid);
      if (!live?.ha) return;
      live.ha.state = target;
      if (live.ha.neverApplies) return;
      timers.after(live.ha.applyDelayMs ?? 0, () => {
        const now = state.get(g.vmid);
        if (!now?.ha?.managed || now.ha.state !== target) return; // a later request won
        now.ha.crm = undefined; // the manager holds the service as requested (ha.ts crmOf)
        if (target === "started" && now.status !== "running") state.start(now);
        if (target === "stopped" && now.status !== "stopped") state.stop(now);
      });
    },
  }).upid;
}

/** The keys a suspend to disk adds and a resume from it removes (vm_start's `delete`). */
const STATE_KEYS = [
  "vmstate",
  "runningmachine",
  "runningcpu",
  "running-nets-host-mtu",
];

/**
 * The VM's config once vm_start resumed it from its saved state: the state volume freed, `lock`
 * and the state keys gone (qemu-server `PVE/QemuServer.pm` vm_start_nolock).
 */
export function dropState(g: GuestState): void {
  for (const key of STATE_KEYS) delete g.config[key];
  g.lock = undefined;
}

/** A failed save to disk: the volume freed and `vmstate` dropped, the lock left (RunState.pm). */
export function dropStateKeys(g: GuestState): void {
  for (const key of STATE_KEYS) delete g.config[key];
}

/** A start/stop/shutdown route. */
function powerRoute(
  action: "start" | "stop" | "shutdown",
  params: Record<string, ParamSpec>,
): Route {
  return {
    method: "POST",
    path: `/nodes/{node}/qemu/{vmid}/status/${action}`,
    privilege: "VM.PowerMgmt",
    params,
    handler: (ctx) => {
      const g = qemuGuest(ctx);
      // A graceful shutdown of a paused VM is refused before any task (its request would be
      // delivered on a later resume); with forceStop it is a stop (qemu-server
      // `PVE/API2/Qemu.pm` vm_shutdown, vm_is_paused).
      const paused = g.status === "running" && g.qmpstatus === "paused";
      if (action === "shutdown" && paused && ctx.params.forceStop !== true) {
        throw new ApiError(500, "VM is paused - cannot shutdown");
      }
      if (g.ha?.managed) {
        return haRequest(ctx, g, action === "start" ? "started" : "stopped");
      }
      const { state, tasks } = ctx.core;
      const task = tasks.start({
        node: g.node,
        type: `qm${action}`,
        id: String(g.vmid),
        user: ctx.user.tokenId,
        run: () => {
          const live = liveGuest(ctx, g, action);
          const fromDisk = action === "start" && live.lock === "suspended";
          if (fromDisk) task.log.push("Resuming suspended VM");
          if (ctx.core.real?.isReal(live)) {
            return ctx.core.real.power(action, live, ctx.params).then((w) => {
              if (fromDisk) dropState(live);
              return w;
            });
          }
          if (action === "start") {
            if (live.status === "running") {
              throw new TaskFailure(`VM ${g.vmid} already running`);
            }
            state.start(live);
            if (fromDisk) {
              task.log.push("Resumed VM, removing state");
              dropState(live);
            }
          } else if (
            action === "shutdown" && live.ignoresShutdown &&
            live.status === "running"
          ) {
            if (ctx.params.forceStop !== true) {
              throw new TaskFailure("VM quit/powerdown failed - got timeout");
            }
            state.stop(live);
            return ["VM still running - terminating now with SIGTERM"];
          } else if (live.status === "running") {
            state.stop(live);
          }
        },
      });
      return task.upid;
    },
  };
}

/** The power routes. */
export const powerRoutes: Route[] = [
  {
    method: "GET",
    path: "/nodes/{node}/qemu/{vmid}/status/current",
    privilege: "VM.Audit",
    handler: async (ctx) => {
      const g = qemuGuest(ctx);
      // A real guest's qmpstatus is QEMU's own (QMP query-status), read now as PVE does.
      await ctx.core.real?.refresh(g);
      return statusCurrent(g);
    },
  },
  powerRoute("start", {
    skiplock: OPT_BOOL,
    timeout: OPT_INT,
    machine: OPT_STRING,
    "force-cpu": OPT_STRING,
    stateuri: OPT_STRING,
    migratedfrom: OPT_STRING,
    migration_type: OPT_STRING,
    migration_network: OPT_STRING,
    targetstorage: OPT_STRING,
  }),
  powerRoute("stop", {
    skiplock: OPT_BOOL,
    timeout: OPT_INT,
    keepActive: OPT_BOOL,
    migratedfrom: OPT_STRING,
    "overrule-shutdown": OPT_BOOL,
  }),
  powerRoute("shutdown", {
    skiplock: OPT_BOOL,
    timeout: OPT_INT,
    forceStop: OPT_BOOL,
    keepActive: OPT_BOOL,
  }),
];
