/**
 * The fault matrix's haResource and haStatus rows, one builder each for both models, with the
 * oracles that decide whether a verdict told the truth: after a haResource success the simulator's
 * HA manager holds the guest as a resource started on its node (its CRM state, not only the
 * config), and no record claims what PVE did not show. The fixture's manager applies a write one
 * round (50 ms) later.
 *
 * @module
 */
import type { Env } from "../e2e/env.ts";
import {
  config,
  type Endpoint,
  findIt,
  type GuestType,
  type RowSpec,
  type Snapshot,
  status,
  statusObserved,
  version,
  type Where,
  writesOnly,
} from "./methods.ts";
import type { RunResult } from "../../harness/types.ts";
import type { SimHa } from "../../simulator/types.ts";

const prefixOf = (type: GuestType) => type === "qemu" ? "vm" : "ct";
const sidOf = (type: GuestType, vmid: number) => `${prefixOf(type)}:${vmid}`;

/** Why a config lock does not bar haStatus: it only reads. */
const HA_READ_LOCK_FREE =
  "haStatus only reads the HA config and the manager's status (pve-ha-manager `PVE/API2/HA/Resources.pm` read, `Status.pm` status), which never look at the guest config's `lock`";

/** A read of the HA resource's config (`phase`: the `skip`-th such read). */
function haConfig(
  type: GuestType,
  vmid: number,
  phase: string,
  skip: number,
): Endpoint {
  const sid = sidOf(type, vmid);
  return {
    id: `GET /cluster/ha/resources/{sid}${phase}`,
    method: "GET",
    path: `^/api2/json/cluster/ha/resources/${sid}$`,
    sample: `/cluster/ha/resources/${sid}`,
    skip,
    kind: "read",
    pve500: "cfs-lock 'domain-ha' error: got lock request timeout",
    privilege: "/, Sys.Audit",
  };
}

/** A read of the manager's view (`phase`: the `skip`-th such read; the wait polls it). */
function haCurrent(phase: string, skip: number, polled = false): Endpoint {
  return {
    id: `GET /cluster/ha/status/current${phase}`,
    method: "GET",
    path: "^/api2/json/cluster/ha/status/current$",
    sample: "/cluster/ha/status/current",
    skip,
    polled,
    kind: "read",
    pve500: "got timeout",
    privilege: "/, Sys.Audit",
  };
}

/** The guest's sighting: version, find it, its status and config. */
function sighting(n: Where, type: GuestType, vmid: number): Endpoint[] {
  const st = status(n, vmid, "", 0, type);
  return [...findIt(n, vmid, st), st, config(n, vmid, "", 0, type)];
}

/** The HA status is a list: an object in its place (the `status?` fault) is unreadable. */
const NOT_A_LIST = {
  "status?": {
    verdict: "fail" as const,
    happened: /where the HA status list was expected/,
    note:
      "the HA status is a list of entries: an object in its place is an unreadable answer",
  },
};

/** Sets the HA knobs of `vmid` before a cell: a manager that applies a write 50 ms later. */
function knobs(vmid: number, ha: SimHa) {
  return (env: Env) => {
    const g = env.sim.guest(vmid);
    if (g) g.ha = { ...ha };
  };
}

/** What every HA run may record: only its guest, a status it had. */
function truth(type: GuestType, vmid: number) {
  return (env: Env, r: RunResult, before: Snapshot): string[] => [
    ...writesOnly(r, new RegExp(`^${prefixOf(type)}-${vmid}$`)),
    ...statusObserved(env, r, before, vmid, prefixOf(type)),
  ];
}

/** haResource of a stopped guest that is no HA resource yet: made one, started by the manager. */
export function haResourceSpec(
  n: Where,
  type: GuestType,
  vmid: number,
  names: RegExp,
): RowSpec {
  return {
    name: "haResource",
    args: { vmid, state: "started" },
    prepare: knobs(vmid, {
      managed: false,
      state: "stopped",
      applyDelayMs: 50,
    }),
    endpoints: [
      version,
      ...sighting(n, type, vmid),
      haConfig(type, vmid, "", 0),
      { ...haCurrent("", 0), expect: NOT_A_LIST },
      {
        id: "POST /cluster/ha/resources",
        method: "POST",
        path: "^/api2/json/cluster/ha/resources$",
        sample: "/cluster/ha/resources",
        kind: "mutation",
        pve500:
          "create resource failed: cfs-lock 'domain-ha' error: got lock request timeout",
        privilege: "/, Sys.Console",
        expect: {
          shape: {
            verdict: "fail",
            happened: /did not apply it: .*not listed by the HA manager/,
            readBack: true,
            note:
              "PVE answers null to an HA resource write; the manager's view shows the resource missing",
          },
        },
      },
      { ...haCurrent(" (the manager's round)", 1, true), expect: NOT_A_LIST },
      haConfig(type, vmid, " (read back)", 1),
    ],
    names,
    task: false,
    effect: (env) => {
      const g = env.sim.guest(vmid);
      const ha = g?.ha;
      return ha?.managed && ha.state === "started" && g?.status === "running" &&
          ha.crm !== null
        ? []
        : [
          `succeeded but the guest is ${g?.status} with HA ${
            JSON.stringify(ha)
          }`,
        ];
    },
    truth: truth(type, vmid),
  };
}

/** haStatus of a guest that is an HA resource: its config and the manager's view read. */
export function haStatusSpec(
  n: Where,
  type: GuestType,
  vmid: number,
  names: RegExp,
): RowSpec {
  return {
    name: "haStatus",
    args: { vmid },
    prepare: knobs(vmid, { managed: true, state: "stopped" }),
    endpoints: [
      ...sighting(n, type, vmid),
      haConfig(type, vmid, "", 0),
      { ...haCurrent("", 0), expect: NOT_A_LIST },
    ],
    names,
    task: false,
    lockFree: HA_READ_LOCK_FREE,
    effect: () => [],
    truth: truth(type, vmid),
  };
}

/** A read of rule `pin` (`phase`: the `skip`-th such read). */
function ruleRead(phase: string, skip: number): Endpoint {
  return {
    id: `GET /cluster/ha/rules/{rule}${phase}`,
    method: "GET",
    path: "^/api2/json/cluster/ha/rules/pin$",
    sample: "/cluster/ha/rules/pin",
    skip,
    kind: "read",
    pve500: "cfs-lock 'domain-ha' error: got lock request timeout",
    privilege: "/, Sys.Audit",
  };
}

/** Why a config lock does not bar haRule: a rule is the cluster's, not the guest's config. */
const HA_RULE_LOCK_FREE =
  "pve-ha-manager `PVE/API2/HA/Rules.pm` writes rules.cfg under the HA domain lock (Config.pm lock_ha_domain), never checking the guest config's `lock`";

/** haRule of an HA guest: a node-affinity rule pinning it to its node, made and read back. */
export function haRuleSpec(
  n: Where,
  type: GuestType,
  vmid: number,
  names: RegExp,
): RowSpec {
  return {
    name: "haRule",
    args: { vmid, rule: "pin", type: "node-affinity", nodes: [n] },
    prepare: knobs(vmid, { managed: true, state: "stopped" }),
    endpoints: [
      version,
      ...sighting(n, type, vmid),
      {
        ...version,
        id: "GET /version (PVE 9 has rules)",
        skip: 1,
        kind: "read",
        names: /GET \/version/,
      },
      ruleRead("", 0),
      { ...haCurrent("", 0), expect: NOT_A_LIST },
      {
        id: "POST /cluster/ha/rules",
        method: "POST",
        path: "^/api2/json/cluster/ha/rules$",
        sample: "/cluster/ha/rules",
        kind: "mutation",
        pve500:
          "create ha rule failed: cfs-lock 'domain-ha' error: got lock request timeout",
        privilege: "/, Sys.Console",
        expect: {
          shape: {
            verdict: "fail",
            happened: /no such ha rule/,
            readBack: true,
            note:
              "PVE answers null to a rule write; the rule read back is missing",
          },
        },
      },
      { ...haCurrent(" (after the write)", 1, true), expect: NOT_A_LIST },
      ruleRead(" (read back)", 1),
    ],
    names,
    task: false,
    lockFree: HA_RULE_LOCK_FREE,
    effect: (env) => {
      const rule = env.sim.haRule("pin");
      return rule?.type === "node-affinity" && rule.nodes === n &&
          rule.resources === sidOf(type, vmid) && !rule.disable
        ? []
        : [`succeeded but rule pin is ${JSON.stringify(rule)}`];
    },
    truth: truth(type, vmid),
  };
}

/** A read of group `pin` (`phase`: the `skip`-th such read). */
function groupRead(phase: string, skip: number): Endpoint {
  return {
    ...ruleRead(phase, skip),
    id: `GET /cluster/ha/groups/{group}${phase}`,
    path: "^/api2/json/cluster/ha/groups/pin$",
    sample: "/cluster/ha/groups/pin",
  };
}

/** A read of every HA resource's config (`phase`: the `skip`-th such read). */
function resourcesRead(phase: string, skip: number): Endpoint {
  return {
    ...haCurrent(phase, skip),
    id: `GET /cluster/ha/resources${phase}`,
    path: "^/api2/json/cluster/ha/resources$",
    sample: "/cluster/ha/resources",
    pve500: "cfs-lock 'domain-ha' error: got lock request timeout",
    expect: {
      "status?": {
        verdict: "fail" as const,
        happened: /where the HA resources list was expected/,
        note:
          "Resources.pm index answers a list: an object in its place is unreadable",
      },
    },
  };
}

/**
 * haRule on PVE 8 (pve-ha-manager stable-4 `src/PVE/API2/HA/Groups.pm`): the node-affinity rule
 * made as the HA group `pin`, then set as the guest's `group`; both read back.
 */
export function haGroupSpec(
  n: Where,
  type: GuestType,
  vmid: number,
  names: RegExp,
): RowSpec {
  const sid = sidOf(type, vmid);
  return {
    ...haRuleSpec(n, type, vmid, names),
    pve: 8,
    endpoints: [
      version,
      ...sighting(n, type, vmid),
      {
        ...version,
        id: "GET /version (PVE 8 has groups)",
        skip: 1,
        kind: "read",
        names: /GET \/version/,
      },
      groupRead("", 0),
      resourcesRead("", 0),
      { ...haCurrent("", 0), expect: NOT_A_LIST },
      {
        id: "POST /cluster/ha/groups",
        method: "POST",
        path: "^/api2/json/cluster/ha/groups$",
        sample: "/cluster/ha/groups",
        kind: "mutation",
        pve500:
          "create ha group failed: cfs-lock 'domain-ha' error: got lock request timeout",
        privilege: "/, Sys.Console",
        expect: {
          shape: {
            verdict: "fail",
            happened: /HA group 'pin' does not exist/,
            readBack: true,
            note:
              "PVE answers null to a group write; the next write, the resource's `group`, is refused as the group is missing (Resources.pm update)",
          },
        },
      },
      {
        id: "PUT /cluster/ha/resources/{sid} (group)",
        method: "PUT",
        path: `^/api2/json/cluster/ha/resources/${sid}$`,
        sample: `/cluster/ha/resources/${sid}`,
        kind: "mutation",
        pve500:
          "update resource failed: cfs-lock 'domain-ha' error: got lock request timeout",
        privilege: "/, Sys.Console",
        expect: {
          shape: {
            verdict: "fail",
            happened: /it still needs PUT (vm|ct):\d+ group=pin/,
            readBack: true,
            note:
              "PVE answers null to a resource write; the resource read back names no group, so a new plan would still set it",
          },
        },
      },
      { ...haCurrent(" (after the writes)", 1, true), expect: NOT_A_LIST },
      groupRead(" (read back)", 1),
      resourcesRead(" (read back)", 1),
    ],
    effect: (env) => {
      const group = env.sim.haGroup("pin");
      const member = env.sim.guest(vmid)?.ha?.group;
      return group?.nodes.join(",") === n && member === "pin" ? [] : [
        `succeeded but group pin is ${
          JSON.stringify(group)
        }, ${sid}'s group ${member}`,
      ];
    },
  };
}
