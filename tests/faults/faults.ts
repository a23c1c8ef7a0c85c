/**
 * The faults of the matrix: what the simulator serves instead of (or after) the real answer of one
 * endpoint, and what a failure message must quote to say what happened.
 *
 * @module
 */
import type { SimFault } from "../../simulator/types.ts";
import type { Endpoint } from "./methods.ts";

/** Column ids of the matrix, in display order. */
export const FAULT_IDS = [
  "500",
  "403",
  "501",
  "400",
  "reset",
  "reset∞",
  "lost",
  "hang",
  "malformed",
  "truncated",
  "empty",
  "html",
  "shape",
  "echo401",
  "echo200",
  "200KB",
  "status?",
  "stored≠",
] as const;

/** One column of the matrix. */
export type FaultId = (typeof FAULT_IDS)[number];

/** A fault of one endpoint. */
export interface FaultSpec {
  id: FaultId;
  /** One line for the legend of MATRIX.md. */
  legend: string;
  /** Whether the fault can reach this endpoint (e.g. `lost` needs a mutation). */
  applies(endpoint: Endpoint): boolean;
  /** The simulator fault for this endpoint (its match is added by the cell). */
  fault(endpoint: Endpoint): DistributiveOmit<SimFault, "pathRegex" | "method">;
  /** What a failure message must quote: the proof it says what happened. */
  happened(endpoint: Endpoint): RegExp;
  /** A transient fault: a safe read must retry it (once: absorbed; `reset∞`: bounded). */
  transient: boolean;
  /** The request may have reached PVE (and acted): a mutation's failure must say "unknown". */
  leavesEffectUnknown: boolean;
  /**
   * The column whose per-endpoint verdicts this one shares (its code path is that column's: a
   * 401 echo is a PVE error like a 500, a proxy's 200 page is unreadable like malformed JSON).
   */
  like?: FaultId;
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K>
  : never;

const isStatusRead = (e: Endpoint) =>
  e.method === "GET" && /status\/current\$?$/.test(e.path);

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const isRead = (e: Endpoint) => e.kind !== "mutation";
const NOT_PVE_JSON = /not PVE's JSON|empty body/;

/** An nginx-style error page: what a reverse proxy in front of PVE answers when PVE is down. */
export const HTML_PAGE =
  "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n";

/** The fault catalogue, one entry per column. */
export const FAULTS: Record<FaultId, FaultSpec> = {
  "500": {
    id: "500",
    legend:
      "HTTP 500 with PVE's message for that call (e.g. `VM is locked (backup)`, `cluster not ready - no quorum?`)",
    applies: () => true,
    fault: (e) => ({ kind: "status", status: 500, message: e.pve500 }),
    happened: (e) => new RegExp(escape(e.pve500)),
    transient: false,
    leavesEffectUnknown: false,
  },
  "403": {
    id: "403",
    legend: "HTTP 403 `Permission check failed (<path>, <privilege>)`",
    applies: () => true,
    fault: (e) => ({
      kind: "status",
      status: 403,
      message: `Permission check failed (${e.privilege})`,
    }),
    happened: (e) =>
      new RegExp(escape(`Permission check failed (${e.privilege})`)),
    transient: false,
    leavesEffectUnknown: false,
  },
  "501": {
    id: "501",
    legend: "HTTP 501 `Method '<verb> <path>' not implemented` (an older PVE)",
    applies: () => true,
    fault: (e) => ({
      kind: "status",
      status: 501,
      message: `Method '${e.method} /api2/json${e.sample}' not implemented`,
    }),
    happened: () => /not implemented \(HTTP 501\)/,
    transient: false,
    leavesEffectUnknown: false,
  },
  "400": {
    id: "400",
    legend: "HTTP 400 `Parameter verification failed.`",
    applies: () => true,
    fault: () => ({
      kind: "status",
      status: 400,
      message: "Parameter verification failed.",
    }),
    happened: () => /Parameter verification failed\. \(HTTP 400\)/,
    transient: false,
    leavesEffectUnknown: false,
  },
  reset: {
    id: "reset",
    legend:
      "the connection is reset before PVE handles the request, once (a safe read must retry it)",
    applies: () => true,
    fault: () => ({ kind: "reset" }),
    happened: () => /connection|reset|closed|error sending request/i,
    transient: true,
    leavesEffectUnknown: true,
  },
  "reset∞": {
    id: "reset∞",
    legend:
      "every such request is reset: a safe read retries a bounded number of times, then fails",
    applies: isRead,
    fault: () => ({ kind: "reset", times: Infinity }),
    happened: () => /connection|reset|closed|error sending request/i,
    transient: true,
    leavesEffectUnknown: true,
  },
  lost: {
    id: "lost",
    legend:
      "PVE carries the request out, then the connection is reset before its answer: a mutation's effect happened, or the agent handed out its one final exec-status — only the answer is lost",
    applies: (e) => e.kind === "mutation" || e.kind === "poll",
    fault: () => ({ kind: "reset", afterHandler: true }),
    happened: () => /connection|reset|closed|error sending request/i,
    transient: true,
    leavesEffectUnknown: true,
  },
  hang: {
    id: "hang",
    legend:
      "no answer at all, once: the request times out after `requestTimeoutSec` (1 s here)",
    applies: () => true,
    fault: () => ({ kind: "hang" }),
    happened: () => /no answer within 1000 ms \(budget: requestTimeoutSec=1s\)/,
    transient: true,
    leavesEffectUnknown: true,
  },
  malformed: {
    id: "malformed",
    legend: 'HTTP 200 with invalid JSON (`{"data": {status: running}}`)',
    applies: () => true,
    fault: () => ({ kind: "body", body: '{"data": {status: running}}' }),
    happened: () => NOT_PVE_JSON,
    transient: false,
    leavesEffectUnknown: true,
  },
  truncated: {
    id: "truncated",
    legend: 'HTTP 200 with a body cut short (`{"data":{"sta`)',
    applies: () => true,
    fault: () => ({ kind: "body", body: '{"data":{"sta' }),
    happened: () => NOT_PVE_JSON,
    transient: false,
    leavesEffectUnknown: true,
  },
  empty: {
    id: "empty",
    legend: "HTTP 200 with an empty body",
    applies: () => true,
    fault: () => ({ kind: "body", body: "" }),
    happened: () => /empty body/,
    transient: false,
    leavesEffectUnknown: true,
  },
  html: {
    id: "html",
    legend:
      "HTTP 502 with a reverse proxy's HTML error page, once (a gateway error: retried on a safe read, effect unknown on a mutation)",
    applies: () => true,
    fault: () => ({
      kind: "body",
      status: 502,
      body: HTML_PAGE,
      contentType: "text/html",
    }),
    happened: () => /HTTP 502/,
    transient: true,
    leavesEffectUnknown: true,
  },
  shape: {
    id: "shape",
    legend:
      'HTTP 200 with valid JSON of the wrong shape (`{"data":"unexpected"}`)',
    applies: () => true,
    fault: () => ({ kind: "body", body: '{"data":"unexpected"}' }),
    happened: () => /unexpected/,
    transient: false,
    leavesEffectUnknown: true,
  },
  echo401: {
    id: "echo401",
    legend:
      "HTTP 401 from a proxy that echoes the request's `Authorization` header base64-encoded: the echo must be scrubbed (shown as `***`)",
    applies: () => true,
    fault: () => ({ kind: "echo", into: "401", form: "base64" }),
    happened: () => /authentication failure \(got Authorization: \*\*\*\)/,
    transient: false,
    leavesEffectUnknown: false,
    like: "500",
  },
  echo200: {
    id: "echo200",
    legend:
      "HTTP 200 with a proxy's HTML page quoting the `Authorization` header: unreadable, and the quote scrubbed",
    applies: () => true,
    fault: () => ({ kind: "echo", into: "page", form: "header" }),
    happened: () => /Authorization: \*\*\*/,
    transient: false,
    leavesEffectUnknown: true,
    like: "malformed",
  },
  "200KB": {
    id: "200KB",
    legend:
      "HTTP 500 whose message is PVE's for that call followed by 200 KB: quoted cut to its beginning, with a marker",
    applies: () => true,
    fault: (e) => ({
      kind: "status",
      status: 500,
      message: `${e.pve500}${"#".repeat(200_000)}`,
    }),
    happened: (e) =>
      new RegExp(`${escape(e.pve500)}#+… \\[cut: \\d+ more characters\\]`),
    transient: false,
    leavesEffectUnknown: false,
    like: "500",
  },
  "status?": {
    id: "status?",
    legend:
      'a guest status read answers `status: "unknown"` (outside PVE\'s set): the state was not determined',
    applies: isStatusRead,
    fault: () => ({ kind: "body", body: '{"data":{"status":"unknown"}}' }),
    happened: () => /status "unknown" is not one of PVE's states/,
    transient: false,
    leavesEffectUnknown: true,
    like: "shape",
  },
  "stored≠": {
    id: "stored≠",
    legend:
      "a create or clone runs to its end, but the new guest stores another value than asked for a requested setting (a property the request left out kept, a disk left on another storage): the read-back must name the key, what PVE stored and what was asked",
    applies: (e) => e.stores !== undefined,
    fault: (e) => ({ kind: "stores", config: e.stores?.config ?? {} }),
    happened: (e) => e.stores?.happened ?? /$^/,
    transient: false,
    leavesEffectUnknown: false,
  },
};
