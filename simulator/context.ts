/**
 * What a route handler gets (the cluster, tasks, the agent, the caller and the
 * checked parameters) and the checks many routes share.
 *
 * @module
 */

import { ApiError } from "./http.ts";
import type { Broadcast } from "./broadcast.ts";
import type { Params, ParamSpec } from "./params.ts";
import type { Decoding } from "./schema/check.ts";
import type { ConformanceLog } from "./schema/conformance.ts";
import type { GuestAgent } from "./qga.ts";
import type { RealGuests } from "./real_guests.ts";
import type { ClusterState } from "./state.ts";
import type { SimNodeFacts } from "./node_types.ts";
import type { NodeResources } from "./storage.ts";
import type { TaskManager } from "./tasks.ts";
import type { Timers } from "./timers.ts";
import type { GuestState } from "./types.ts";

/** The authenticated caller. */
export interface AuthUser {
  /** Full token id, `root@pam!ci`: the user field of UPIDs. */
  tokenId: string;
  /** VMIDs this token may not touch. */
  deny: ReadonlySet<number>;
  /**
   * Who PVE's Perl sees (`$rpcenv->get_user()`): the token id for an API token
   * (so `root@pam!ci` is NOT root@pam to the root-only checks), `root@pam` for
   * pvesh run over ssh.
   */
  authuser: string;
  /** How the node decoded the parameters: an HTTP form, or pvesh's options. */
  decoding: Decoding;
  /** The privileges the caller holds on an ACL path (`/vms/100`), as PVE computes them. */
  privilegesOn(path: string): ReadonlySet<string>;
  /** The paths `GET /access/permissions` reports without `path`: the top-level ones and the ACLs'. */
  reportedPaths: readonly string[];
}

/** Whether PVE's `$authuser eq 'root@pam'` shortcuts hold for this caller. */
export function isRootPam(user: AuthUser): boolean {
  return user.authuser === "root@pam";
}

/** Shared simulator internals. */
export interface SimCore {
  state: ClusterState;
  tasks: TaskManager;
  timers: Timers;
  agent?: GuestAgent;
  /** The real VMs behind guests marked `real` (when the simulator runs any). */
  real?: RealGuests;
  /** Storages and bridges of every node. */
  resources: NodeResources;
  /** pvestatd's last broadcast: what `/cluster/resources` shows of each guest. */
  broadcast: Broadcast;
  /** Where every schema verdict goes (the conformance layer reads it). */
  conformance: ConformanceLog;
  /** Subscription and repositories per node (SimOptions `nodeFacts`). */
  nodeFacts?: Record<string, SimNodeFacts>;
  /** The PVE major version served. */
  major: 8 | 9;
}

/** One request as a handler sees it. */
export interface Ctx {
  core: SimCore;
  user: AuthUser;
  /** Checked parameters, path parameters (`node`, `vmid`, `upid`) included. */
  params: Params;
}

/** A `/api2/json` endpoint. */
export interface Route {
  method: "GET" | "POST" | "PUT" | "DELETE";
  /** Path pattern relative to `/api2/json`, e.g. `/nodes/{node}/qemu/{vmid}/config`. */
  path: string;
  /** Privilege on `/vms/{vmid}` (checked first, like PVE, before the VMID is even looked up). */
  privilege?: string;
  /** The PVE major version that added the endpoint: an older one answers 501. */
  since?: 9;
  /** Declared non-path parameters; path parameters are added automatically. */
  params?: Record<string, ParamSpec>;
  /** Admits further parameters by name (config options). */
  dynamic?: (key: string) => ParamSpec | undefined;
  /**
   * PVE's Perl-side rules for this endpoint (perl_rules.ts: identity checks,
   * refusals before any task), run in order after the schema check and
   * before the handler.
   */
  rules?: ((ctx: Ctx) => void)[];
  /** Returns the `data` value (or a Reply); throws ApiError for an error answer. */
  handler(ctx: Ctx): unknown | Promise<unknown>;
}

/** 403 unless the caller holds `privilege` (one of `A|B|…`) on `/vms/<vmid>`. */
export function checkVmPerm(
  user: AuthUser,
  vmid: number,
  privilege: string,
): void {
  const held = user.privilegesOn(`/vms/${vmid}`);
  if (user.deny.has(vmid) || !privilege.split("|").some((p) => held.has(p))) {
    throw new ApiError(
      403,
      `Permission check failed (/vms/${vmid}, ${privilege})`,
    );
  }
}

/** The qemu guest `vmid` on `node`, or PVE's 500 (also when it lives on another node, or is a container). */
export function qemuGuest(ctx: Ctx): GuestState {
  const node = ctx.params.node as string;
  const vmid = ctx.params.vmid as number;
  const g = ctx.core.state.get(vmid);
  if (!g || g.type !== "qemu" || g.node !== node) {
    throw new ApiError(
      500,
      `Configuration file 'nodes/${node}/qemu-server/${vmid}.conf' does not exist`,
    );
  }
  return g;
}

/**
 * The text qemu-server dies with for a locked guest: PVE::AbstractConfig::check_lock
 * (pve-guest-common) dies `<guest type> is locked (<lock>)` — "VM is locked (backup)" — as the
 * older PVE/QemuServer.pm check_lock did (`die "VM is locked ($conf->{lock})\n"`).
 */
export function lockedMessage(g: GuestState): string {
  return `VM is locked (${g.lock})`;
}

/** 500 "VM is locked (…)" unless unlocked or `skiplock` is set. */
export function checkLock(g: GuestState, skiplock: unknown): void {
  if (g.lock && skiplock !== true) throw new ApiError(500, lockedMessage(g));
}
