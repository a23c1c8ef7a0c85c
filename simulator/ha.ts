/**
 * A small HA stack: each guest's HA resource config (its `ha`, SimHa) and a simulated CRM that
 * applies a request one round after it was written, learned from pve-ha-manager:
 * `src/PVE/HA/Manager.pm` manage (a new service enters `service_status` as request_start or
 * request_stop, then started/stopped; an `ignored` one and one without config are deleted from
 * it), `src/PVE/HA/Tools.pm` get_verbose_service_state (the verbose `state` of `status/current`)
 * and `src/PVE/API2/HA/Status.pm` status (the entries). Fault knobs on SimHa: `applyDelayMs` (the
 * round's delay on the simulator clock), `neverApplies` (no round ever runs: no quorum, a dead
 * CRM), `appliesAs` (the round applies another state than requested).
 *
 * @module
 */

import type { SimCore } from "./context.ts";
import type { GuestState, SimHa } from "./types.ts";

/** `vm:<vmid>` / `ct:<vmid>` of a guest (PVE/HA/Tools.pm get_ha_resource_type). */
export function sidOf(g: GuestState): string {
  return `${g.type === "qemu" ? "vm" : "ct"}:${g.vmid}`;
}

/** The manager's state of the service: `null` when it does not hold it (new, ignored, dropped). */
export function crmOf(ha: SimHa): string | null {
  if (ha.crm !== undefined) return ha.crm;
  // A fixture's resource without a round: as if the manager had applied it long ago.
  if (!ha.managed || ha.state === "ignored") return null;
  return ha.state === "started" ? "started" : "stopped";
}

/** PVE/HA/Tools.pm get_verbose_service_state. */
function verbose(g: GuestState, ha: SimHa, crm: string | null): string {
  if (!ha.managed) return "deleting";
  const req = ha.state;
  if (req === "ignored") return "ignored";
  if (crm === null) return "queued";
  if (crm === "stopped") {
    return req === "started"
      ? "starting"
      : req === "disabled"
      ? "disabled"
      : "stopped";
  }
  if (crm === "started") {
    if (g.status !== "running") return "starting";
    return req === "stopped" || req === "disabled" ? "stopping" : "started";
  }
  // The manager clears an error once the config asks `disabled` (next_state_error).
  if (crm === "error" && req === "disabled") return "clearing error flag";
  return crm;
}

/** The `service:<sid>` entry of `status/current` (Status.pm $add_service), or none. */
export function serviceEntry(
  g: GuestState,
): Record<string, unknown> | undefined {
  const ha = g.ha;
  if (!ha) return undefined;
  const crm = crmOf(ha);
  // Without config and no longer held by the manager: gone.
  if (!ha.managed && crm === null) return undefined;
  const sid = sidOf(g);
  const state = verbose(g, ha, crm);
  const entry: Record<string, unknown> = {
    id: `service:${sid}`,
    type: "service",
    sid,
    node: g.node,
    state,
    status: `${sid} (${g.node}, ${state})`,
  };
  if (crm !== null) entry.crm_state = crm;
  if (ha.managed) {
    // read_and_check_resources_config fills the defaults.
    entry.request_state = ha.state;
    entry.max_restart = ha.maxRestart ?? 1;
    entry.max_relocate = ha.maxRelocate ?? 1;
    entry.failback = ha.failback ?? true;
    if (ha.comment !== undefined) entry.comment = ha.comment;
  }
  return entry;
}

/** The config section of a resource as `GET /cluster/ha/resources/{sid}` shows it. */
export function configView(g: GuestState): Record<string, unknown> {
  const ha = g.ha!;
  const out: Record<string, unknown> = {
    sid: sidOf(g),
    type: g.type === "qemu" ? "vm" : "ct",
    state: ha.state,
    digest: digestOf(g),
  };
  if (ha.maxRestart !== undefined) out.max_restart = ha.maxRestart;
  if (ha.maxRelocate !== undefined) out.max_relocate = ha.maxRelocate;
  if (ha.failback !== undefined) out.failback = ha.failback ? 1 : 0;
  if (ha.comment !== undefined) out.comment = ha.comment;
  if (ha.group !== undefined) out.group = ha.group;
  return out;
}

/** A stand-in for the config file's digest (40 hex characters, changing with the section). */
function digestOf(g: GuestState): string {
  const text = JSON.stringify({ ...g.ha, crm: undefined });
  let h = 0;
  for (const c of text) h = (h * 31 + c.charCodeAt(0)) >>> 0;
  return h.toString(16).padStart(8, "0").repeat(5);
}

/** Before a config write: the manager's state stays what it was until its next round. */
export function freeze(g: GuestState): void {
  if (g.ha) g.ha.crm = crmOf(g.ha);
}

/**
 * A config write: the manager applies it one round later (after `applyDelayMs`), unless it
 * never applies. A later write supersedes an earlier round.
 */
export function scheduleRound(core: SimCore, g: GuestState): void {
  const ha = g.ha!;
  const round = (ha.round ?? 0) + 1;
  ha.round = round;
  if (ha.neverApplies) return;
  core.timers.after(ha.applyDelayMs ?? 0, () => {
    const now = core.state.get(g.vmid);
    if (!now?.ha || now.ha.round !== round) return;
    applyRound(core, now);
  });
}

/** One CRM round for the guest's service (Manager.pm manage / next_state_*). */
function applyRound(core: SimCore, g: GuestState): void {
  const ha = g.ha!;
  if (!ha.managed) {
    ha.crm = null;
    return;
  }
  const want = ha.appliesAs ?? ha.state;
  if (want === "ignored") {
    ha.crm = null;
    return;
  }
  if (want === "started") {
    ha.crm = "started";
    if (g.status !== "running") core.state.start(g);
    return;
  }
  ha.crm = "stopped";
  if (g.status !== "stopped") core.state.stop(g);
}

/** One HA rule as `rules.cfg` holds it (pve-ha-manager `src/PVE/HA/Rules.pm`, PVE 9). */
export interface SimRule {
  type: "node-affinity" | "resource-affinity";
  /** `vm:100,ct:101`, sorted (Rules.pm encode_value). */
  resources: string;
  /** node-affinity: `node[:priority],…` (NodeAffinity.pm encode_plugin_value). */
  nodes?: string;
  strict?: boolean;
  affinity?: "positive" | "negative";
  comment?: string;
  disable?: boolean;
  order: number;
}

const RULES = new WeakMap<object, Map<string, SimRule>>();

/**
 * One HA group as PVE 8's `groups.cfg` holds it (pve-ha-manager stable-4 `src/PVE/HA/Groups.pm`):
 * `nodes` a hash of the `node[:prio]` entries as given (decode_value), listed joined by `,` in
 * the hash's order (encode_value).
 */
export interface SimGroup {
  nodes: string[];
  restricted?: boolean;
  nofailback?: boolean;
  comment?: string;
}

const GROUPS = new WeakMap<object, Map<string, SimGroup>>();

/** The cluster's HA groups (PVE 8; one set per simulated cluster). */
export function groupsOf(core: SimCore): Map<string, SimGroup> {
  let groups = GROUPS.get(core.state);
  if (!groups) GROUPS.set(core.state, groups = new Map());
  return groups;
}

/** The cluster's HA rules (one set per simulated cluster). */
export function rulesOf(core: SimCore): Map<string, SimRule> {
  let rules = RULES.get(core.state);
  if (!rules) RULES.set(core.state, rules = new Map());
  return rules;
}

/**
 * Rules.pm check_feasibility, the two checks the simulator models: a resource in more than one
 * node-affinity rule (NodeAffinity.pm check_single_resource_reference), a resource-affinity rule
 * with fewer than two resources (ResourceAffinity.pm check_resource_affinity_resources_count). Per rule id: option → messages.
 */
export function feasibility(
  rules: Map<string, SimRule>,
): Map<string, Record<string, string[]>> {
  const errors = new Map<string, Record<string, string[]>>();
  const add = (id: string, key: string, message: string) => {
    const e = errors.get(id) ?? {};
    (e[key] ??= []).push(message);
    errors.set(id, e);
  };
  const used = new Map<string, string[]>();
  for (const [id, r] of rules) {
    if (r.disable) continue;
    const sids = r.resources.split(",");
    if (r.type === "node-affinity") {
      for (const sid of sids) used.set(sid, [...(used.get(sid) ?? []), id]);
    } else if (sids.length < 2) {
      add(
        id,
        "resources",
        "rule is ineffective as there are less than two resources",
      );
    }
  }
  for (const [sid, ids] of used) {
    if (ids.length < 2) continue;
    for (const id of ids) {
      add(
        id,
        "resources",
        `resource '${sid}' is already used in another node affinity rule`,
      );
    }
  }
  return errors;
}
