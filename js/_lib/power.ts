/**
 * The methods both models share for suspending and resuming a guest, and for waiting on any PVE
 * task (`waitTask`), with the `task` record that one writes. The core applies the same argument
 * rules (src/methods/suspend.rs, resume.rs, wait_task.rs); tests/properties/argument_agreement_test.ts
 * proves they agree.
 *
 * @module
 */
import { z } from "npm:zod@4";
import { type MethodContext, type ModelName, runOnCore } from "./core.ts";
import {
  field,
  GuestArgs,
  guestRef,
  optionalNodeName,
  optionalVmid,
  pathSegment,
  requireGuest,
  StopArgs,
} from "./schemas.ts";

/** suspend of a VM: to RAM, or `toDisk` with the state on `stateStorage` (PVE's choice without it). */
const QemuSuspendArgs = z.object({
  ...guestRef,
  toDisk: field.falseByDefault,
  stateStorage: pathSegment("stateStorage").optional(),
  force: field.falseByDefault,
}).check(
  requireGuest,
  // PVE's schema: statestorage `requires => 'todisk'`.
  z.refine(
    (a) => a.stateStorage === undefined || a.toDisk,
    { message: "stateStorage needs toDisk: true", path: ["stateStorage"] },
  ),
);

/**
 * A UPID in PVE's form, printable ASCII, started by 2106 (at most FFFFFFFF seconds), on a node whose
 * name fits a path (src/methods/wait_task.rs `upid_arg`).
 */
const UPID =
  /^UPID:[A-Za-z0-9][A-Za-z0-9._-]*:[0-9A-Fa-f]+:[0-9A-Fa-f]+:0*[0-9A-Fa-f]{1,8}:[!-9;-~]+:[!-9;-~]*:[!-9;-~]*:$/;

/** waitTask: a UPID, or a filter of a node's task list (type, guest, started at or after). */
const WaitTaskArgs = z.object({
  upid: field.string.regex(
    UPID,
    "upid must be a PVE task id, UPID:<node>:<pid>:<pstart>:<starttime>:<type>:<id>:<user>:",
  ).optional(),
  node: optionalNodeName,
  type: pathSegment("type").optional(),
  vmid: optionalVmid,
  /** Unix seconds: tasks started at or after it (PVE's `since`). */
  startedAfter: field.integer.min(0).max(4294967295).optional(),
}).refine(
  // A UPID alone, or a filter (a node alone filters nothing).
  (a) => {
    const filtered = [a.type, a.vmid, a.startedAfter].some((f) =>
      f !== undefined
    );
    return a.upid === undefined ? filtered : !filtered && a.node === undefined;
  },
  {
    message:
      "give either upid or a filter: type, vmid and/or startedAfter (on node)",
    path: ["upid"],
  },
);

/** What one waitTask saw of its task (instance task-<node>-<pid>-<starttime>). */
export const TaskRecord = z.object({
  /** Names the task's node and user too. */
  upid: field.string,
  type: field.string,
  id: field.optionalString,
  startedAt: field.string,
  /** Whether its end was observed in the run. */
  ended: field.boolean,
  exitStatus: field.optionalString,
  warnings: field.optionalStrings,
  /** The file output (spec taskLog) holding its log, when it did not end plainly OK. */
  logFile: field.optionalString,
  /**
   * A failed task's last log lines (at most 10, 2 KB), as the failure message quotes them, when
   * no file holds its log (a swamp without file outputs).
   */
  logTail: field.optionalStrings,
  error: field.optionalString,
  lastOperation: field.string,
  recordedAt: field.string,
});

/** The `task` record spec both models declare. */
export const taskResource = {
  task: {
    description:
      "One task waitTask followed (instance task-<node>-<pid>-<starttime>): how it ended; a failed one's exit status and its log file (logFile), or its log's tail where swamp stores no files",
    schema: TaskRecord,
    // One instance per task, never written again: versions alone would never expire it.
    lifetime: "90d" as const,
    garbageCollection: 20,
  },
};

/**
 * The file output both models declare: the log of a task a method followed that did not end
 * plainly OK (src/task.rs `keep_log`).
 */
export const taskLogFile = {
  taskLog: {
    description:
      "The log of a task a method followed that failed or ended with warnings (name tasklog-<node>-<pid>-<starttime>): one line each, its end within 1 MiB, secrets scrubbed; the record points to it (lastTaskLog; waitTask's logFile)",
    contentType: "text/plain",
    // One file per task, never written again: kept 90 days rather than forever.
    lifetime: "90d" as const,
    garbageCollection: 20,
  },
};

/** suspend, resume and waitTask of `model`. */
export function powerMethods(model: ModelName) {
  const vm = model === "qemu";
  const SuspendArgs = vm ? QemuSuspendArgs : StopArgs;
  return {
    suspend: {
      description: vm
        ? "Suspend a running VM tagged swamp (force overrides): to RAM (QEMU paused), or with toDisk to disk (its state saved to a volume on stateStorage, else where PVE chooses; the VM stopped and locked suspended); succeeds when status/current shows qmpstatus paused, or status stopped with lock suspended. A stopped VM, and an HA-managed one to disk, are refused as PVE refuses them"
        : "Suspend a running container tagged swamp (force overrides): PVE checkpoints it (lxc-checkpoint) and stops it; succeeds when its task ended OK and status/current shows it stopped (the checkpoint itself is not visible through the API). A stopped container is refused as PVE refuses it",
      kind: "action" as const,
      arguments: SuspendArgs,
      execute: (args: z.infer<typeof SuspendArgs>, ctx: MethodContext) =>
        runOnCore(model, "suspend", args, ctx),
    },
    resume: {
      description: vm
        ? "Resume a paused or suspended VM (one suspended to disk starts from its saved state); succeeds when status/current shows it running with qmpstatus running and no lock. A stopped VM is refused as PVE refuses it"
        : "Restore a suspended container from its checkpoint; succeeds when status/current shows it running",
      kind: "action" as const,
      arguments: GuestArgs,
      execute: (args: z.infer<typeof GuestArgs>, ctx: MethodContext) =>
        runOnCore(model, "resume", args, ctx),
    },
    waitTask: {
      description:
        "Wait within taskTimeoutSec for a PVE task someone else started to end — by upid, or the one task of node's list (default the transport's node) matching type, vmid and startedAfter (Unix seconds, at or after); succeeds when it ended OK or WARNINGS; a failed task fails with its exit status and its log's last lines (at most 10, 2 KB). Records task-<node>-<pid>-<starttime>",
      kind: "action" as const,
      arguments: WaitTaskArgs,
      execute: (args: z.infer<typeof WaitTaskArgs>, ctx: MethodContext) =>
        runOnCore(model, "waitTask", args, ctx),
    },
  };
}
