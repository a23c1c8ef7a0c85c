/**
 * Task status and log, read on the node named in the UPID.
 *
 * A task's files live on the node that ran it. A read sent to another node is
 * proxied there, finds no file, and answers like an unknown task: status → 400
 * "no such task" (raise_param_exc), log → 200 with PVE's "unable to open file"
 * line (the log reader does not check that the file exists). Another user's
 * task needs Sys.Audit on the node: 403 (pve-manager `PVE/API2/Tasks.pm`
 * read_task_status after its "no such task", read_task_log before reading).
 *
 * @module
 */

import type { Ctx, Route } from "./context.ts";
import { ApiError, paramError, Reply } from "./http.ts";
import { readsTask } from "./routes_tasklist.ts";
import { parseUpid, type TaskRecord } from "./tasks.ts";

/** The task this read may see, or undefined when PVE would find no task file. */
function visibleTask(ctx: Ctx): TaskRecord | undefined {
  const upid = ctx.params.upid as string;
  if (!parseUpid(upid)) {
    throw paramError({ upid: "unable to parse worker upid" });
  }
  const task = ctx.core.tasks.find(upid);
  if (
    !task || task.node !== ctx.params.node || Date.now() < task.invisibleUntil
  ) return undefined;
  return task;
}

/** 403 unless the caller may read a task of `user` (its own, or Sys.Audit on the node). */
function mayRead(ctx: Ctx, user: string): void {
  const node = ctx.params.node as string;
  if (readsTask(ctx, user, node)) return;
  throw new ApiError(
    403,
    `Permission check failed (/nodes/${node}, Sys.Audit)`,
  );
}

/** The task routes. */
export const taskRoutes: Route[] = [
  {
    method: "GET",
    path: "/nodes/{node}/tasks/{upid}/status",
    handler: (ctx) => {
      const task = visibleTask(ctx);
      // Right after dispatch PVE may not have written the task file yet.
      if (!task) throw paramError({ upid: "no such task" });
      mayRead(ctx, task.user);
      const out: Record<string, unknown> = {
        upid: task.upid,
        node: task.node,
        pid: task.pid,
        pstart: task.pstart,
        starttime: task.starttime,
        type: task.type,
        id: task.id,
        user: task.user,
        status: task.status,
      };
      // PVE splits a token's UPID user `root@pam!ci` into user + tokenid.
      const bang = task.user.indexOf("!");
      if (bang >= 0) {
        out.user = task.user.slice(0, bang);
        out.tokenid = task.user.slice(bang + 1);
      }
      if (task.status === "stopped") out.exitstatus = task.exitstatus;
      return out;
    },
  },
  {
    method: "GET",
    path: "/nodes/{node}/tasks/{upid}/log",
    params: {
      start: { type: "integer", optional: true, minimum: 0 },
      limit: { type: "integer", optional: true, minimum: 0 },
      download: { type: "boolean", optional: true },
    },
    handler: (ctx) => {
      const task = visibleTask(ctx);
      // read_task_log checks before it opens the file: the task's user is the UPID's.
      mayRead(ctx, parseUpid(ctx.params.upid as string)?.user ?? "");
      if (!task) {
        return new Reply([{
          n: 1,
          t: "unable to open file - No such file or directory",
        }], { total: 1 });
      }
      // pve-common `PVE/Tools.pm` dump_logfile: `limit` 0 reads to the end; an empty log reads
      // as one line "no content".
      const start = (ctx.params.start as number | undefined) ?? 0;
      const limit = (ctx.params.limit as number | undefined) ?? 50;
      const end = limit === 0 ? undefined : start + limit;
      const lines = task.log.slice(start, end).map((t, i) => ({
        n: start + i + 1,
        t,
      }));
      if (task.log.length === 0) {
        return new Reply([{ n: 1, t: "no content" }], { total: 1 });
      }
      return new Reply(lines, { total: task.log.length });
    },
  },
];
