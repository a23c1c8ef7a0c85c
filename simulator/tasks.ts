/**
 * PVE worker tasks: UPIDs, a duration, an outcome and a log. A mutation's effect
 * happens when its task ends, and only if the task succeeds (OK or WARNINGS).
 *
 * @module
 */

import { fakePid } from "./state.ts";
import type { Timers } from "./timers.ts";
import type { TaskOverride } from "./types.ts";

/** The fields a UPID encodes. */
export interface UpidFields {
  node: string;
  pid: number;
  pstart: number;
  starttime: number;
  type: string;
  id: string;
  user: string;
}

/** A task the simulator ran or runs. */
export interface TaskRecord extends UpidFields {
  upid: string;
  status: "running" | "stopped";
  exitstatus?: string;
  /** Log lines, without numbers. */
  log: string[];
  /** Until this epoch ms, status reads answer 400 "no such task". */
  invisibleUntil: number;
  /** When the task ended (epoch ms, `Date.now()`); set when status becomes "stopped". */
  endedAt?: number;
  /** The override's `truncateTo`: the file this task writes keeps only so many bytes. */
  truncateTo?: number;
  /** The override's `loseFile`: the file this task writes is gone afterwards. */
  loseFile?: boolean;
}

/** What a route asks to run. */
export interface TaskSpec {
  node: string;
  type: string;
  id: string;
  user: string;
  /** Lines logged when the task starts. */
  log?: string[];
  /**
   * The effect, run when the task ends. Throw TaskFailure (or any Error) to fail
   * the task with that text; return lines to log them as warnings. An effect that
   * takes real time (a real VM booting or shutting down) returns a promise: the
   * task then runs until it settles.
   */
  run?: () => string[] | void | Promise<string[] | void>;
  /** Runs when the task ends without its effect (failed), e.g. to release a reserved VMID. */
  onFailure?: () => void;
  /**
   * The progress line PVE's worker prints while it runs (progress_lines.ts), logged every
   * {@link PROGRESS_EVERY_MS} until the task ends.
   */
  progress?: (fraction: number, elapsedMs: number) => string;
}

/** How often a running task with `progress` prints a line (PVE's workers print every 1–2 s). */
export const PROGRESS_EVERY_MS = 1000;

/** A worker's error: the task's exitstatus becomes the message. */
export class TaskFailure extends Error {
  /** @param message the exitstatus text */
  constructor(message: string) {
    super(message);
    this.name = "TaskFailure";
  }
}

const UPID_RE =
  /^UPID:([a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?):([0-9A-Fa-f]{8}):([0-9A-Fa-f]{8,9}):([0-9A-Fa-f]{8}):([^:\s]+):([^:\s]*):([^:\s]+):$/;

/** `UPID:<node>:<pid>:<pstart>:<starttime>:<type>:<id>:<user>:` with PVE's `%08X` fields. */
export function formatUpid(f: UpidFields): string {
  const hex = (n: number) => n.toString(16).toUpperCase().padStart(8, "0");
  return `UPID:${f.node}:${hex(f.pid)}:${hex(f.pstart)}:${
    hex(f.starttime)
  }:${f.type}:${f.id}:${f.user}:`;
}

/** Decodes a UPID with PVE's pattern; undefined when it does not parse. */
export function parseUpid(upid: string): UpidFields | undefined {
  const m = UPID_RE.exec(upid);
  if (!m) return undefined;
  return {
    node: m[1],
    pid: parseInt(m[3], 16),
    pstart: parseInt(m[4], 16),
    starttime: parseInt(m[5], 16),
    type: m[6],
    id: m[7],
    user: m[8],
  };
}

/** Whether an exitstatus means success (`OK` or `WARNINGS: n`). */
export function isSuccess(exitstatus: string): boolean {
  return exitstatus === "OK" || exitstatus.startsWith("WARNINGS");
}

/** Fake boot time in clock ticks, so pstart looks like /proc's start time. */
const BOOT_TICKS = 100000 + Math.floor(Math.random() * 1000000);

/** Runs tasks on timers and remembers them for status/log reads. */
export class TaskManager {
  readonly #timers: Timers;
  readonly #tasks = new Map<string, TaskRecord>();
  readonly #overrides: TaskOverride[] = [];
  /** How long an ended task still shows as running in the task list (the daemon's reaping). */
  listLagMs = 0;
  /** The guest of a VMID, for an override's `leaveLock` (the simulator sets it). */
  guestOf?: (vmid: number) => { lock?: string } | undefined;
  /** Task duration when no override says otherwise: one for all, or one per task. */
  defaultDurationMs: number | ((task: { type: string; id: string }) => number);

  /** @param timers owner of the task timers; @param defaultDurationMs default duration */
  constructor(
    timers: Timers,
    defaultDurationMs:
      | number
      | ((task: { type: string; id: string }) => number),
  ) {
    this.#timers = timers;
    this.defaultDurationMs = defaultDurationMs;
  }

  /** Queues an outcome override for the next task created. */
  enqueueOverride(o: TaskOverride): void {
    this.#overrides.push({ ...o });
  }

  /** The task with this UPID, if the simulator created it. */
  find(upid: string): TaskRecord | undefined {
    return this.#tasks.get(upid);
  }

  /** Every task created so far, in creation order. */
  all(): TaskRecord[] {
    return [...this.#tasks.values()];
  }

  /** Starts a task and returns it; the effect runs when its duration is over. */
  start(spec: TaskSpec): TaskRecord {
    const override = this.#overrides.shift() ?? {};
    const now = Date.now();
    const fields: UpidFields = {
      node: spec.node,
      pid: fakePid(),
      pstart: BOOT_TICKS + Math.floor(performance.now() / 10),
      starttime: Math.floor(now / 1000),
      type: spec.type,
      id: spec.id,
      user: spec.user,
    };
    const task: TaskRecord = {
      ...fields,
      upid: formatUpid(fields),
      status: "running",
      log: [...(spec.log ?? [])],
      invisibleUntil: now + (override.noSuchTaskFor ?? 0),
      truncateTo: override.truncateTo,
      loseFile: override.loseFile,
    };
    this.#tasks.set(task.upid, task);
    const durationMs = override.durationMs ?? this.#durationOf(spec);
    this.#timers.after(durationMs, () => this.#settle(task, spec, override));
    if (spec.progress) {
      this.#printProgress(task, spec.progress, durationMs, now);
    }
    return task;
  }

  #durationOf(spec: TaskSpec): number {
    const d = this.defaultDurationMs;
    return typeof d === "function" ? d({ type: spec.type, id: spec.id }) : d;
  }

  /** Logs the task's progress line every PROGRESS_EVERY_MS while it runs. */
  #printProgress(
    task: TaskRecord,
    line: NonNullable<TaskSpec["progress"]>,
    durationMs: number,
    startedAt: number,
  ): void {
    const tick = () => {
      if (task.status !== "running") return;
      const elapsed = Date.now() - startedAt;
      task.log.push(
        line(Math.min(elapsed / Math.max(durationMs, 1), 1), elapsed),
      );
      this.#timers.after(PROGRESS_EVERY_MS, tick);
    };
    this.#timers.after(PROGRESS_EVERY_MS, tick);
  }

  /** Runs an effect that returns a promise to its end, then finishes the task with its outcome. */
  #settle(task: TaskRecord, spec: TaskSpec, override: TaskOverride): void {
    const forced = override.exitstatus;
    if (forced !== undefined && !isSuccess(forced)) {
      return this.#finish(task, spec, override);
    }
    const settled = (run: () => string[] | void) =>
      this.#finish(task, { ...spec, run }, override);
    let effect: ReturnType<NonNullable<TaskSpec["run"]>>;
    try {
      // noEffect: the task ends as told, but its effect never runs (the worker lied).
      effect = override.noEffect ? undefined : spec.run?.();
    } catch (err) {
      return settled(() => {
        throw err;
      });
    }
    if (effect instanceof Promise) {
      effect.then((more) => settled(() => more), (err) =>
        settled(() => {
          throw err;
        }));
    } else settled(() => effect as string[] | void);
  }

  /** An override's `leaveLock`: the guest is locked as the task ends OK (and maybe cleared later). */
  #leaveLock(task: TaskRecord, override: TaskOverride): void {
    const leave = override.leaveLock;
    const guest = leave && this.guestOf?.(leave.vmid ?? Number(task.id));
    if (!leave || !guest) return;
    guest.lock = leave.lock;
    if (leave.clearAfterMs === undefined) return;
    this.#timers.after(leave.clearAfterMs, () => {
      if (guest.lock === leave.lock) guest.lock = undefined;
    });
  }

  #finish(task: TaskRecord, spec: TaskSpec, override: TaskOverride): void {
    const warnings = [...(override.warnings ?? [])];
    const forced = override.exitstatus;
    let exitstatus: string;
    if (forced !== undefined && !isSuccess(forced)) {
      // The scenario says the worker failed: its effect never happens.
      exitstatus = forced;
      spec.onFailure?.();
    } else {
      try {
        const more = spec.run?.() as string[] | void; // #settle resolved a promise
        if (more) warnings.push(...more);
        // A forced "WARNINGS: n" still needs its WARN lines: clients read them from the log.
        const count = Number(/^WARNINGS: (\d+)$/.exec(forced ?? "")?.[1] ?? 0);
        while (warnings.length < count) {
          warnings.push("no efidisk configured! Using temporary efivars disk.");
        }
        exitstatus = forced ??
          (warnings.length > 0 ? `WARNINGS: ${warnings.length}` : "OK");
      } catch (err) {
        exitstatus = (err as Error).message;
        spec.onFailure?.();
      }
    }
    if (isSuccess(exitstatus)) this.#leaveLock(task, override);
    for (const w of warnings) task.log.push(`WARN: ${w}`);
    if (exitstatus === "OK") task.log.push("TASK OK");
    else if (isSuccess(exitstatus)) task.log.push(`TASK ${exitstatus}`);
    else task.log.push(`TASK ERROR: ${exitstatus}`);
    task.exitstatus = exitstatus;
    task.endedAt = Date.now();
    task.status = "stopped";
  }
}
