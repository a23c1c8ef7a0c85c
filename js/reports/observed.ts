/**
 * What the package's records say was observed, as report rows: one row per record a step (or a
 * method run) wrote, grouped by guest. Shared by the method- and workflow-scope reports; it reads
 * records and lays them out, and decides nothing.
 *
 * @module
 */

/** One record of one step, as the report shows it. */
export interface ObservedRow {
  /** The guest (`vm-100`, `ct-200`) or node (`node-pve1`) the record is about. */
  subject: string;
  step?: string;
  method: string;
  /** The step's (or run's) verdict: `succeeded` or `failed`. */
  verdict: string;
  /** What the record says was observed: `exit 0`, `running`, `absent`, `signal 9`… */
  observed: string;
  /** Config keys waiting for the next start. */
  pending?: string[];
  lock?: string;
  warnings?: string[];
  record: string;
  recordedAt?: string;
}

/** The guest or node a record instance is about: `vm-100-exec` → `vm-100`. */
export function subjectOf(instance: string): string {
  return instance.match(
    /^((?:vm|ct)-\d+|node-[^-]+(?:-[^-]+)*?)(?:-exec|-config|-backup|-backups)?$/,
  )
    ?.[1] ?? instance;
}

/** What one record says was observed, in a few words. */
export function observedIn(record: Record<string, unknown>): string {
  if (typeof record.outcome === "string") {
    if (record.outcome === "exited") return `exit ${record.exitCode}`;
    if (record.outcome === "signaled") return `signal ${record.signal}`;
    return record.error ? `${record.outcome}: ${record.error}` : record.outcome;
  }
  if (typeof record.supersededBy === "string") {
    return `superseded by ${record.supersededBy}`;
  }
  if (record.present === false) return "absent";
  if (typeof record.status === "string") {
    const parts = [record.status];
    if (
      typeof record.qmpStatus === "string" && record.qmpStatus !== record.status
    ) parts.push(`qmp ${record.qmpStatus}`);
    const ha = record.ha as { managed?: boolean; state?: string } | undefined;
    if (ha?.managed) parts.push(`HA ${ha.state ?? "?"}`);
    return parts.join(", ");
  }
  // A backup's archive (`…-backup`), a storage's listing (`…-backups`).
  if (typeof record.volid === "string") return `archive ${record.volid}`;
  if (Array.isArray(record.backups)) {
    return `${record.backups.length} backup(s) listed`;
  }
  if (record.config) return "config read";
  if (record.storages) return "storages and bridges read";
  if (record.disks) return "node status read";
  return "recorded";
}

/** A row for `record` (instance `instance`) written by `method` with `verdict`. */
export function rowOf(
  instance: string,
  record: Record<string, unknown>,
  method: string,
  verdict: string,
  step?: string,
): ObservedRow {
  const pending = [
    ...Object.keys((record.pending as Record<string, unknown>) ?? {}),
    ...((record.pendingDelete as string[] | undefined) ?? []).map((k) =>
      `-${k}`
    ),
  ];
  const warnings = record.warnings as string[] | undefined;
  return {
    subject: subjectOf(instance),
    ...(step ? { step } : {}),
    method,
    verdict,
    observed: observedIn(record),
    ...(pending.length ? { pending } : {}),
    ...(typeof record.lock === "string" ? { lock: record.lock } : {}),
    ...(warnings?.length ? { warnings } : {}),
    record: instance,
    ...(typeof record.recordedAt === "string"
      ? { recordedAt: record.recordedAt }
      : {}),
  };
}

/** Rows grouped by subject, in first-seen order. */
export function bySubject(rows: ObservedRow[]): Map<string, ObservedRow[]> {
  const groups = new Map<string, ObservedRow[]>();
  for (const row of rows) {
    groups.set(row.subject, [...(groups.get(row.subject) ?? []), row]);
  }
  return groups;
}

const cell = (text: string) => text.replace(/\|/g, "\\|").replace(/\n/g, " ");

/** One markdown table per subject. */
export function markdownOf(
  title: string,
  summary: string[],
  rows: ObservedRow[],
): string {
  const out = [`# ${title}`, "", ...summary, ""];
  if (rows.length === 0) {
    out.push("No record of this package was written.");
  }
  for (const [subject, group] of bySubject(rows)) {
    out.push(
      `## ${subject}`,
      "",
      "| step | method | verdict | observed | pending | lock | warnings |",
      "|---|---|---|---|---|---|---|",
    );
    for (const r of group) {
      out.push(
        `| ${
          [
            r.step ?? "",
            r.method,
            r.verdict,
            r.observed,
            (r.pending ?? []).join(", "),
            r.lock ?? "",
            (r.warnings ?? []).join("; "),
          ].map(cell).join(" | ")
        } |`,
      );
    }
    out.push("");
  }
  return out.join("\n");
}

/** The part of swamp's data repository the reports read. */
export interface DataReader {
  findAllForModel(
    type: unknown,
    modelId: string,
  ): Promise<
    { name: string; version: number; tags: Record<string, string> }[]
  >;
  getContent(
    type: unknown,
    modelId: string,
    name: string,
    version?: number,
  ): Promise<Uint8Array | null>;
}

/** A stored JSON record, or null when it is gone or not JSON. */
export async function readJson(
  data: DataReader,
  type: unknown,
  modelId: string,
  name: string,
  version?: number,
): Promise<Record<string, unknown> | null> {
  const bytes = await data.getContent(type, modelId, name, version);
  if (!bytes) return null;
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return null;
  }
}
