/**
 * The fault matrix's judgement of records, not only of verdicts (issue 24): after a run that
 * failed, or that wrote a record saying its outcome is unknown or its reading predates a change,
 * every record it wrote is checked
 * against what the simulator answered during the run (its request log keeps the answers of
 * `status/current` and snapshot-list reads, `RequestRecord.answer`):
 *
 * - a guest record (`vm-N`/`ct-N`, present) or snapshots record presented as current was read after
 *   the run's last change (a read of it answered after the last POST/PUT/DELETE the run sent), and
 *   shows the lock (resp. the snapshots and their `snapstate`s) of the last such answer;
 * - one marked `observedBeforeMutation: true` carries `observedAt`, was read before that change, and
 *   no read of it answered after the change (else the run had a newer reading and did not use it).
 *
 * Other records (exec, ready, file, config, node) hold what the method itself observed and are
 * counted as checked once their marks, if any, are consistent (`observedAt` with the before mark).
 *
 * And in every cell, whatever its verdict, the fields that state an effect must be backed by what
 * PVE answered in the same run ({@link checkClaims}, issue 31):
 *
 * - a volume record (`volume-<storage>-<file>`): `present` and `size` are what the storage's last
 *   content list showed; `downloaded` and `checksumVerified` only for a volume a list answered
 *   after the download showed;
 * - a backup record (`<vm|ct>-<vmid>-backup`): its `volid` and `size` are in a content list answered
 *   after the vzdump request, and its `mode` is the one its task's log holds (`backup mode: …`);
 * - a file record written by fileWrite: `bytes` and `chunks` are what the file-write calls PVE
 *   answered 200 carried;
 * - a guest record's `identityObservedAt` (since the simulator started) is when a config read of it
 *   answered, in this run or one before it (an identity carried forward keeps its time); and
 *   every key its `pending` holds was pending in a `…/pending` read answered after the run's last
 *   change (a reboot may have applied what was pending before it).
 *
 * @module
 */
import type { RunResult } from "../../harness/types.ts";
import type { RequestRecord } from "../../simulator/types.ts";
import type { Env } from "../e2e/env.ts";

/** What the record check saw in one cell. */
export interface RecordCheck {
  /** Whether the cell is one the check judges: the run failed or an outcome is unknown. */
  judged: boolean;
  /** Records checked. */
  records: number;
  problems: string[];
}

type Rec = Record<string, unknown>;

/** A clock slack for comparing the core's times (ms, its host clock) with request arrivals. */
const SLACK_MS = 5;

/** Whether a request changes something on PVE (not a command inside a guest). */
function isChange(q: RequestRecord): boolean {
  // An HA resource write changes the guest too: the HA manager starts or stops it.
  const guestWide = q.path.startsWith("/api2/json/nodes/") ||
    q.path.startsWith("/api2/json/cluster/ha/");
  return q.method !== "GET" && guestWide && !q.path.includes("/agent/");
}

/** Epoch ms of a request's arrival (the simulator runs in this process). */
const arrival = (q: RequestRecord) => performance.timeOrigin + q.at;

/** The reads in `log` that answered what a record of `instance` holds. */
export function readsOf(
  instance: string,
  log: RequestRecord[],
): RequestRecord[] {
  const m = instance.match(/^(vm|ct)-(\d+)(-snapshots)?$/);
  if (!m) return [];
  const kind = m[1] === "vm" ? "qemu" : "lxc";
  const tail = m[3] ? "snapshot" : "status/current";
  const path = new RegExp(`/${kind}/${m[2]}/${tail}$`);
  return log.filter((q) => q.answer !== undefined && path.test(q.path));
}

const lockOf = (answer: unknown) => {
  const lock = (answer as Rec | undefined)?.lock;
  return typeof lock === "string" && lock.trim() !== ""
    ? lock.trim()
    : undefined;
};

/** `name → snapstate` of a snapshot list (the `current` entry left out). */
function snapstates(list: unknown): Map<string, string | undefined> {
  const out = new Map<string, string | undefined>();
  if (!Array.isArray(list)) return out;
  for (const s of list as Rec[]) {
    if (s.name === "current") continue;
    out.set(String(s.name), s.snapstate ? String(s.snapstate) : undefined);
  }
  return out;
}

/** What the last read showed that the record must show too. */
function shownAsRead(
  instance: string,
  rec: Rec,
  last: RequestRecord,
): string[] {
  if (instance.endsWith("-snapshots")) {
    const want = snapstates(last.answer);
    const got = snapstates(rec.snapshots);
    const problems: string[] = [];
    for (const [name, state] of want) {
      if (!got.has(name)) {
        problems.push(`${instance} leaves out snapshot ${name} PVE listed`);
      } else if (got.get(name) !== state) {
        problems.push(
          `${instance} shows snapshot ${name} with snapstate ${
            got.get(name)
          }, PVE showed ${state}`,
        );
      }
    }
    for (const name of got.keys()) {
      if (!want.has(name)) {
        problems.push(`${instance} lists snapshot ${name} PVE did not list`);
      }
    }
    return problems;
  }
  const lock = lockOf(last.answer);
  return lock === (rec.lock ?? undefined) ? [] : [
    `${instance} records lock ${rec.lock}, but PVE's last answer showed lock ${lock}`,
  ];
}

/** Checks one record written by the run. */
function checkRecord(
  instance: string,
  rec: Rec,
  log: RequestRecord[],
): string[] {
  const before = rec.observedBeforeMutation === true;
  if (before && typeof rec.observedAt !== "string") {
    return [
      `${instance} is marked as read before the change but says not when (observedAt)`,
    ];
  }
  const stateful = /^(vm|ct)-\d+(-snapshots)?$/.test(instance) &&
    (instance.endsWith("-snapshots") || rec.present === true);
  if (!stateful) return [];
  const changes = log.filter(isChange);
  const lastChange = changes.at(-1);
  const reads = readsOf(instance, log);
  const after = lastChange
    ? reads.filter((q) => log.indexOf(q) > log.indexOf(lastChange))
    : reads;
  if (before) {
    const problems: string[] = [];
    const readAt = Date.parse(String(rec.observedAt));
    if (lastChange && readAt > arrival(lastChange) + SLACK_MS) {
      problems.push(
        `${instance} is marked as read before the change, but its reading (${rec.observedAt}) came after it`,
      );
    }
    if (after.length > 0) {
      problems.push(
        `${instance} is marked as read before the change, yet PVE answered a read of it after the change`,
      );
    }
    return problems;
  }
  if (lastChange && after.length === 0) {
    return [
      `${instance} is presented as current, but no read of it answered after the run's last change (${lastChange.method} ${lastChange.path})`,
    ];
  }
  const last = after.at(-1) ?? reads.at(-1);
  return last ? shownAsRead(instance, rec, last) : [];
}

/** The record check of one run; `from` is where the run's requests begin in the simulator's log. */
export function checkRecords(
  env: Env,
  r: RunResult,
  from: number,
): RecordCheck {
  const records = r.written.filter((w) => w.data && typeof w.data === "object");
  // A success is judged too when a record carries the marks (a reading said to predate a change).
  const marked = records.some((w) =>
    (w.data as Rec).outcome === "unknown" ||
    (w.data as Rec).observedBeforeMutation !== undefined
  );
  const judged = r.status === "failed" || marked;
  if (!judged) return { judged, records: 0, problems: [] };
  const log = env.sim.requests.slice(from);
  const problems = records.flatMap((w) =>
    checkRecord(w.instance, w.data as Rec, log).map((p) => `record truth: ${p}`)
  );
  return { judged, records: records.length, problems };
}

/** The reads in `log` (with kept answers) whose path matches `path`. */
const answered = (log: RequestRecord[], path: RegExp) =>
  log.filter((q) => q.answer !== undefined && path.test(q.path));

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** The entry for `volid` in a content list answer. */
const listedIn = (answer: unknown, volid: unknown) =>
  Array.isArray(answer)
    ? (answer as Rec[]).find((v) => v.volid === volid)
    : undefined;

/** A volume record: what the storage's content lists answered, before and after the download. */
function volumeClaims(instance: string, rec: Rec, log: RequestRecord[]) {
  const storage = String(rec.storage);
  const lists = answered(
    log,
    new RegExp(`/storage/${escape(storage)}/content$`),
  );
  const last = lists.at(-1);
  if (!last) {
    return [
      `${instance} was written, but no content list of ${storage} answered`,
    ];
  }
  const problems: string[] = [];
  const seen = listedIn(last.answer, rec.volid);
  if ((rec.present === true) !== (seen !== undefined)) {
    problems.push(
      `${instance} says present: ${rec.present}, but the last content list ${
        seen ? "showed" : "did not show"
      } ${rec.volid}`,
    );
  }
  if (seen && rec.size !== undefined && seen.size !== rec.size) {
    problems.push(
      `${instance} records size ${rec.size}, the list showed ${seen.size}`,
    );
  }
  const post = log.findLastIndex((q) =>
    q.method === "POST" && q.path.endsWith("/download-url")
  );
  const after = post < 0 ? [] : lists.filter((q) => log.indexOf(q) > post);
  const seenAfter = after.some((q) => listedIn(q.answer, rec.volid));
  for (const field of ["downloaded", "checksumVerified"]) {
    if (rec[field] === true && rec.present !== true) {
      problems.push(`${instance} says ${field}: true beside present: false`);
    }
    if (field === "downloaded" && rec[field] === true && !seenAfter) {
      problems.push(
        `${instance} says downloaded, but no list after the download showed ${rec.volid}`,
      );
    }
  }
  return problems;
}

/** A backup record: the archive listed after the vzdump request, the mode its task's log reported. */
function backupClaims(
  env: Env,
  instance: string,
  rec: Rec,
  log: RequestRecord[],
) {
  const problems: string[] = [];
  const post = log.findLastIndex((q) =>
    q.method === "POST" && q.path.endsWith("/vzdump")
  );
  const lists = answered(
    log,
    new RegExp(`/storage/${escape(String(rec.storage))}/content$`),
  )
    .filter((q) => log.indexOf(q) > post);
  const seen = lists.map((q) => listedIn(q.answer, rec.volid)).findLast((v) =>
    v
  );
  if (!seen) {
    problems.push(
      `${instance} records ${rec.volid}, but no list after the backup showed it`,
    );
  } else if (rec.size !== undefined && seen.size !== rec.size) {
    problems.push(
      `${instance} records size ${rec.size}, the list showed ${seen.size}`,
    );
  }
  // The task's log as PVE serves it (the simulator's record of the task).
  const lines = rec.task === undefined
    ? []
    : env.sim.task(String(rec.task))?.log ?? [];
  if (
    rec.mode !== undefined &&
    !lines.some((l) => l.includes(`backup mode: ${rec.mode}`))
  ) {
    problems.push(
      `${instance} records mode ${rec.mode}, but its task's log does not report it`,
    );
  }
  return problems;
}

/** A fileWrite record: what the file-write calls PVE answered 200 carried. */
function fileClaims(instance: string, rec: Rec, log: RequestRecord[]) {
  if (rec.verified === undefined) return []; // fileRead: what it read
  const written = log.filter((q) =>
    q.method === "POST" && q.path.endsWith("/agent/file-write") &&
    q.status === 200
  );
  const bytes = written.reduce((n, q) => {
    const content = q.form.find(([k]) => k === "content")?.[1] ?? "";
    return n + atob(content).length;
  }, 0);
  const problems: string[] = [];
  if (Number(rec.bytes) > bytes) {
    problems.push(
      `${instance} records ${rec.bytes} bytes written, PVE took ${bytes}`,
    );
  }
  if (Number(rec.chunks ?? 0) > written.length) {
    problems.push(
      `${instance} records ${rec.chunks} file-write calls, PVE answered ${written.length}`,
    );
  }
  return problems;
}

/** A guest record's `pending`: shown pending by a read answered after the run's last change. */
function pendingClaims(instance: string, rec: Rec, log: RequestRecord[]) {
  const keys = Object.keys((rec.pending ?? {}) as Rec);
  const m = instance.match(/^(vm|ct)-(\d+)$/);
  if (!m || keys.length === 0) return [];
  const kind = m[1] === "vm" ? "qemu" : "lxc";
  const last = log.findLastIndex(isChange);
  const read = answered(log, new RegExp(`/${kind}/${m[2]}/pending$`))
    .findLast((q) => log.indexOf(q) > last);
  const rows = (Array.isArray(read?.answer) ? read.answer : []) as Rec[];
  return keys.filter((k) =>
    !rows.some((r) => r.key === k && r.pending !== undefined)
  )
    .map((k) =>
      `${instance} records ${k} as pending, but no read after the run's last change showed it pending`
    );
}

/** A guest record's `identityObservedAt` since the simulator started: a config read answered then. */
function identityClaims(instance: string, rec: Rec, log: RequestRecord[]) {
  const at = Date.parse(String(rec.identityObservedAt ?? ""));
  const m = instance.match(/^(vm|ct)-(\d+)$/);
  const first = log[0];
  if (!m || Number.isNaN(at) || !first || at < arrival(first) - SLACK_MS) {
    return [];
  }
  const kind = m[1] === "vm" ? "qemu" : "lxc";
  const reads = answered(log, new RegExp(`/${kind}/${m[2]}/config$`));
  // The core stamps the identity as it gets the config's answer (a status read may follow).
  const then = reads.some((q) =>
    arrival(q) <= at + SLACK_MS && arrival(q) >= at - 2_000
  );
  return then ? [] : [
    `${instance} says its identity was read at ${rec.identityObservedAt}, but no config read of it answered then`,
  ];
}

/**
 * The effect claims of every record a run wrote, against what PVE answered in the run (from
 * `from` in the simulator's request log), whatever the verdict.
 */
export function checkClaims(env: Env, r: RunResult, from: number): string[] {
  const log = env.sim.requests.slice(from);
  return r.written.flatMap((w) => {
    const rec = w.data as Rec;
    if (!rec || typeof rec !== "object") return [];
    const claims = w.instance.startsWith("volume-")
      ? volumeClaims(w.instance, rec, log)
      : /^(vm|ct)-\d+-backup$/.test(w.instance)
      ? backupClaims(env, w.instance, rec, log)
      : /^(vm|ct)-\d+-file$/.test(w.instance)
      ? fileClaims(w.instance, rec, log)
      : [
        // A carried identity may come from a run before this one: the whole log is asked.
        ...identityClaims(w.instance, rec, env.sim.requests),
        ...pendingClaims(w.instance, rec, log),
      ];
    return claims.map((p) => `record truth: ${p}`);
  });
}
