/**
 * `GET /nodes/{node}/tasks`: the node's task list, newest first. How a client
 * finds a task it did not get a UPID for, e.g. the `vzstart` that a container
 * create with `start=1` forks on its own.
 *
 * Source: pve-manager PVE/API2/Tasks.pm (node_tasks). Like PVE, the default
 * `source=archive` lists only finished tasks; `active` only running ones, with
 * status `RUNNING`; `all` both, running first. A task that ended is archived
 * only when the daemon that forked it reaps it (pve-common
 * PVE/RESTEnvironment.pm `worker_reaper` → `active_workers`): until then
 * (`taskListLagMs`) the list still shows it running. Without `Sys.Audit` on
 * `/nodes/{node}` a token sees only its own tasks (`check_task_user`).
 *
 * @module
 */

import type { Ctx, Route } from "./context.ts";
import { Reply } from "./http.ts";
import { isSuccess, type TaskRecord } from "./tasks.ts";

/** `statusfilter` class of a finished task. */
function statusClass(t: TaskRecord): string {
  const s = t.exitstatus ?? "";
  if (s === "OK") return "ok";
  if (s.startsWith("WARNINGS")) return "warning";
  if (s === "unexpected status") return "unknown";
  return "error";
}

/** Whether the list shows `t` as ended: its worker ended and was reaped `lagMs` ago. */
function archived(t: TaskRecord, lagMs: number, now: number): boolean {
  return t.status === "stopped" && (t.endedAt ?? 0) + lagMs <= now;
}

/** `check_task_user`: a token sees its own tasks; a user its own and its tokens'. */
function ownTask(user: string, caller: string): boolean {
  return user === caller || user.split("!")[0] === caller;
}

/**
 * Whether the caller may read a task of `user` on `node`: its own, or any with Sys.Audit on the
 * node (pve-manager `PVE/API2/Tasks.pm` node_tasks `$auditor`, read_task_status, read_task_log).
 */
export function readsTask(ctx: Ctx, user: string, node: string): boolean {
  return ownTask(user, ctx.user.tokenId) ||
    ctx.user.privilegesOn(`/nodes/${node}`).has("Sys.Audit");
}

/** The task list route. */
export const taskListRoutes: Route[] = [
  {
    method: "GET",
    path: "/nodes/{node}/tasks",
    params: {
      start: { type: "integer", optional: true, minimum: 0 },
      limit: { type: "integer", optional: true, minimum: 0 },
      userfilter: { type: "string", optional: true },
      typefilter: { type: "string", optional: true },
      vmid: {
        type: "integer",
        optional: true,
        minimum: 100,
        maximum: 999999999,
      },
      errors: { type: "boolean", optional: true },
      source: {
        type: "string",
        optional: true,
        enum: ["archive", "active", "all"],
      },
      since: { type: "integer", optional: true, minimum: 0 },
      until: { type: "integer", optional: true, minimum: 0 },
      statusfilter: { type: "string", optional: true },
    },
    handler: (ctx) => {
      const p = ctx.params;
      const source = (p.source as string | undefined) ?? "archive";
      const statuses = typeof p.statusfilter === "string"
        ? p.statusfilter.split(/[,;\s]+/).filter((s) => s !== "")
        : undefined;
      const now = Date.now();
      const lag = ctx.core.tasks.listLagMs;
      const ended = (t: TaskRecord) => archived(t, lag, now);
      const matching = ctx.core.tasks.all().reverse().filter((t) => {
        if (t.node !== p.node) return false;
        // Another user's task is left out, not refused.
        if (!readsTask(ctx, t.user, p.node as string)) return false;
        if (source === "archive" && !ended(t)) return false;
        if (source === "active" && ended(t)) return false;
        if (
          typeof p.userfilter === "string" &&
          !t.user.toLowerCase().includes(p.userfilter.toLowerCase())
        ) return false;
        if (p.typefilter !== undefined && t.type !== p.typefilter) return false;
        if (p.vmid !== undefined && t.id !== String(p.vmid)) return false;
        if (
          p.errors === true && t.exitstatus !== undefined &&
          isSuccess(t.exitstatus)
        ) return false;
        if (p.since !== undefined && t.starttime < (p.since as number)) {
          return false;
        }
        if (p.until !== undefined && t.starttime > (p.until as number)) {
          return false;
        }
        if (
          statuses && ended(t) &&
          !statuses.includes(statusClass(t))
        ) return false;
        return true;
      });
      // PVE lists the active file's tasks first, then the archive, newest first.
      if (source === "all") {
        matching.sort((a, b) => Number(ended(a)) - Number(ended(b)));
      }
      const start = (p.start as number | undefined) ?? 0;
      const limit = (p.limit as number | undefined) || 50;
      const rows = matching.slice(start, start + limit).map((t) => {
        const out: Record<string, unknown> = {
          upid: t.upid,
          node: t.node,
          pid: t.pid,
          pstart: t.pstart,
          starttime: t.starttime,
          type: t.type,
          id: t.id,
          user: t.user,
        };
        // upid_decode splits a token's user `root@pam!ci` into user + tokenid.
        const bang = t.user.indexOf("!");
        if (bang >= 0) {
          out.user = t.user.slice(0, bang);
          out.tokenid = t.user.slice(bang + 1);
        }
        if (ended(t)) {
          out.endtime = Math.floor((t.endedAt ?? now) / 1000);
          out.status = t.exitstatus;
        } else if (source !== "archive") {
          out.status = "RUNNING";
        }
        return out;
      });
      return new Reply(rows, { total: matching.length });
    },
  },
];
