/**
 * The HA endpoints the package calls, as pve-ha-manager serves them: `src/PVE/API2/HA/Resources.pm`
 * (index, read, create, update, delete), `src/PVE/API2/HA/Status.pm` (status → `status/current`),
 * PVE 9's `Rules.pm` and PVE 8's `Groups.pm` (branch stable-4; PVE 9 refuses it once the groups
 * were migrated to rules, which the simulator's PVE 9 always has).
 * Every write only edits the resources config; the simulated CRM (ha.ts) applies it later. A
 * plain die is PVE's 500; privileges are on `/` (Sys.Audit to read, Sys.Console to write).
 *
 * @module
 */

import type { Ctx, Route } from "./context.ts";
import { ApiError } from "./http.ts";
import type { ParamSpec } from "./params.ts";
import { endpointFacts } from "./schema/facts.ts";
import { splitList } from "./schema/formats.ts";
import {
  configView,
  crmOf,
  feasibility,
  freeze,
  groupsOf,
  rulesOf,
  scheduleRound,
  serviceEntry,
  sidOf,
  type SimGroup,
  type SimRule,
} from "./ha.ts";
import type { GuestState, SimHa } from "./types.ts";

/** The route's parameters as the schema layer already checked them (router.ts runs it first). */
function fromSchema(method: string, path: string): (key: string) => ParamSpec {
  const props = endpointFacts(method, path)?.parameters?.properties ?? {};
  return (key) => {
    const type = props[key]?.type;
    return {
      type: type === "integer" || type === "boolean" ? type : "string",
      optional: true,
    };
  };
}

function checkRoot(ctx: Ctx, privilege: string): void {
  if (!ctx.user.privilegesOn("/").has(privilege)) {
    throw new ApiError(403, `Permission check failed (/, ${privilege})`);
  }
}

const die = (message: string) => new ApiError(500, message);

/** Config.pm parse_sid, then the plugin's verify_name and exists (PVEVM.pm, PVECT.pm). */
function guestOf(ctx: Ctx, raw: string, mustExist = true): GuestState {
  let type: string;
  let name: string;
  const numeric = /^(\d+)$/.exec(raw);
  if (numeric) {
    const g = ctx.core.state.get(Number(raw));
    if (!g) {
      throw die(`unable to detect SID from VMID - VM/CT ${raw} does not exist`);
    }
    [type, name] = [g.type === "qemu" ? "vm" : "ct", raw];
  } else {
    const m = /^(\S+):(\S+)$/.exec(raw);
    if (!m) throw die(`unable to parse service id '${raw}'`);
    [type, name] = [m[1], m[2]];
  }
  if (type !== "vm" && type !== "ct") {
    throw die(`unknown resource type '${type}'`);
  }
  if (!/^[1-9][0-9]+$/.test(name)) throw die("invalid VMID");
  const g = ctx.core.state.get(Number(name));
  if (mustExist && !g) {
    throw die(`resource '${type}:${name}' does not exist in cluster`);
  }
  const want = type === "vm" ? "qemu" : "lxc";
  if (g && g.type !== want) {
    throw die(
      `resource '${type}:${name}' - guest with ID ${name} is not a ${
        type === "vm" ? "VM" : "container"
      }`,
    );
  }
  return g!;
}

/** The options a create or update sets (PVEVM.pm / PVECT.pm options). */
function setOptions(ha: SimHa, p: Ctx["params"]): void {
  if (p.state !== undefined) {
    // Config.pm read_and_check_resources_config: `enabled` is `started`.
    ha.state = p.state === "enabled" ? "started" : String(p.state);
  }
  if (p.max_restart !== undefined) ha.maxRestart = Number(p.max_restart);
  if (p.max_relocate !== undefined) ha.maxRelocate = Number(p.max_relocate);
  if (p.failback !== undefined) ha.failback = Boolean(p.failback);
  if (p.comment !== undefined) ha.comment = String(p.comment);
  if (p.group !== undefined) ha.group = String(p.group);
}

/**
 * PVE 9 refuses `group` once groups were migrated to rules; PVE 8 takes only an existing group
 * (stable-4 Resources.pm create/update: `HA group '<group>' does not exist`).
 */
function noGroup(ctx: Ctx): void {
  const group = ctx.params.group;
  if (group === undefined) return;
  if (ctx.core.major === 9) {
    throw die(
      "invalid parameter 'group': ha groups have been migrated to rules",
    );
  }
  if (!groupsOf(ctx.core).has(String(group))) {
    throw die(`HA group '${String(group)}' does not exist`);
  }
}

const RESOURCES = "/cluster/ha/resources";
const ONE = `${RESOURCES}/{sid}`;
const DELETABLE = [
  "comment",
  "failback",
  "group",
  "max_restart",
  "max_relocate",
  "state",
];

export const haRoutes: Route[] = [
  {
    // Resources.pm index: every resource's config (an `errors.group` for a missing group).
    method: "GET",
    path: RESOURCES,
    handler: (ctx) => {
      checkRoot(ctx, "Sys.Audit");
      return ctx.core.state.all().filter((g) => g.ha?.managed).map((g) => {
        const view = configView(g);
        const group = g.ha?.group;
        if (group !== undefined && !groupsOf(ctx.core).has(group)) {
          view.errors = { group: `group '${group}' does not exist` };
        }
        return view;
      });
    },
  },
  {
    method: "GET",
    path: ONE,
    handler: (ctx) => {
      checkRoot(ctx, "Sys.Audit");
      const g = guestOf(ctx, String(ctx.params.sid), false);
      if (!g?.ha?.managed) {
        throw die(`no such resource '${String(ctx.params.sid)}'`);
      }
      return configView(g);
    },
  },
  {
    method: "POST",
    path: RESOURCES,
    dynamic: fromSchema("POST", RESOURCES),
    handler: (ctx) => {
      checkRoot(ctx, "Sys.Console");
      const g = guestOf(ctx, String(ctx.params.sid));
      const type = g.type === "qemu" ? "vm" : "ct";
      if (ctx.params.type !== undefined && ctx.params.type !== type) {
        throw die("types does not match");
      }
      noGroup(ctx);
      if (g.ha?.managed) throw die(`resource ID '${sidOf(g)}' already defined`);
      // The fault knobs stay; the options start from PVE's defaults.
      freeze(g);
      g.ha = {
        applyDelayMs: g.ha?.applyDelayMs,
        neverApplies: g.ha?.neverApplies,
        appliesAs: g.ha?.appliesAs,
        crm: g.ha?.crm ?? null,
        round: g.ha?.round,
        managed: true,
        state: "started",
      };
      setOptions(g.ha, ctx.params);
      scheduleRound(ctx.core, g);
      return null;
    },
  },
  {
    method: "PUT",
    path: ONE,
    dynamic: fromSchema("PUT", ONE),
    handler: (ctx) => {
      checkRoot(ctx, "Sys.Console");
      const raw = String(ctx.params.sid);
      const g = guestOf(ctx, raw, false);
      if (ctx.params.type !== undefined && g) {
        const type = g.type === "qemu" ? "vm" : "ct";
        if (ctx.params.type !== type) throw die("types does not match");
      }
      noGroup(ctx);
      const ha = g?.ha;
      // Resources.pm check_service_state: a service in error takes only `disabled` (sent); an
      // ignored one counts as not managed (Config.pm service_check_ha_state).
      if (
        ha?.managed && ha.state !== "ignored" && crmOf(ha) === "error" &&
        ctx.params.state !== "disabled"
      ) {
        throw die(
          `service '${
            sidOf(g)
          }' in error state, must be disabled and fixed first`,
        );
      }
      if (!ha?.managed) throw die(`no such resource '${raw}'`);
      freeze(g);
      setOptions(ha, ctx.params);
      for (const key of splitList(String(ctx.params.delete ?? ""))) {
        if (!DELETABLE.includes(key)) throw die(`no such option '${key}'`);
        if (key === "state") ha.state = "started";
        if (key === "comment") ha.comment = undefined;
        if (key === "failback") ha.failback = undefined;
        if (key === "group") ha.group = undefined;
        if (key === "max_restart") ha.maxRestart = undefined;
        if (key === "max_relocate") ha.maxRelocate = undefined;
      }
      scheduleRound(ctx.core, g);
      return null;
    },
  },
  {
    method: "DELETE",
    path: ONE,
    dynamic: fromSchema("DELETE", ONE),
    handler: (ctx) => {
      checkRoot(ctx, "Sys.Console");
      const raw = String(ctx.params.sid);
      const g = guestOf(ctx, raw, false);
      if (!g?.ha?.managed) {
        throw die(`cannot delete service '${raw}', not HA managed!`);
      }
      freeze(g);
      g.ha.managed = false;
      // Config.pm delete_service_from_config: `purge` (default 1) drops the sid from every rule,
      // and a rule left without resources (PVE 9; PVE 8 has no rules).
      const purge = ctx.params.purge;
      if (ctx.core.major === 9 && purge !== false && purge !== 0) {
        const rules = rulesOf(ctx.core);
        for (const [id, r] of rules) {
          const rest = r.resources.split(",").filter((s) => s !== sidOf(g));
          if (rest.length) r.resources = rest.join(",");
          else rules.delete(id);
        }
      }
      scheduleRound(ctx.core, g);
      return null;
    },
  },
  {
    method: "GET",
    path: "/cluster/ha/status/current",
    handler: (ctx) => {
      checkRoot(ctx, "Sys.Audit");
      const nodes = ctx.core.state.nodes;
      const now = Math.floor(Date.now() / 1000);
      // A CRM that never applies is dead: Status.pm shows its master's last timestamp as old.
      const dead = ctx.core.state.all().some((g) => g.ha?.neverApplies);
      const stamp = dead ? now - 60 : now;
      const out: Record<string, unknown>[] = [
        {
          id: "quorum",
          type: "quorum",
          node: nodes[0],
          status: "OK",
          quorate: true,
        },
        {
          id: "master",
          type: "master",
          node: nodes[0],
          status: `${nodes[0]} (${dead ? "old timestamp - dead?" : "active"}, ${
            new Date(stamp * 1000).toString()
          })`,
          timestamp: stamp,
        },
        ...nodes.map((node) => ({
          id: `lrm:${node}`,
          type: "lrm",
          node,
          status: `${node} (active, watchdog active)`,
          timestamp: now,
        })),
      ];
      const services = ctx.core.state.all()
        .map(serviceEntry)
        .filter((e) => e !== undefined)
        .sort((a, b) => String(a.sid).localeCompare(String(b.sid)));
      return [...out, ...services];
    },
  },
];

const RULES_PATH = "/cluster/ha/rules";
const RULE = `${RULES_PATH}/{rule}`;
const RULE_OPTIONS = [
  "resources",
  "nodes",
  "strict",
  "affinity",
  "comment",
  "disable",
];

/** Rules.pm $get_api_ha_rule: the rule with its id, digest, order and (when infeasible) errors. */
function ruleView(ctx: Ctx, id: string): Record<string, unknown> {
  const rules = rulesOf(ctx.core);
  const r = rules.get(id);
  if (!r) throw die(`no such ha rule '${id}'`);
  const out: Record<string, unknown> = {
    rule: id,
    type: r.type,
    resources: r.resources,
    order: r.order,
    digest: JSON.stringify([...rules]).length.toString(16).padStart(40, "0"),
  };
  if (r.nodes !== undefined) out.nodes = r.nodes;
  if (r.strict !== undefined) out.strict = r.strict ? 1 : 0;
  if (r.affinity !== undefined) out.affinity = r.affinity;
  if (r.comment !== undefined) out.comment = r.comment;
  if (r.disable) out.disable = 1;
  const errors = feasibility(rules).get(id);
  if (errors) {
    out.errors = Object.fromEntries(
      Object.entries(errors).map(([k, v]) => [k, v.join(", ")]),
    );
  }
  return out;
}

/** The options a create or update sets; the resources and nodes checks of Rules.pm. */
function setRule(ctx: Ctx, r: SimRule): void {
  const p = ctx.params;
  if (p.resources !== undefined) {
    const sids = [...new Set(splitList(String(p.resources)))].sort();
    if (sids.length === 0) throw die("no resources were specified");
    const unmanaged = sids.filter((sid) => {
      const g = /^(vm|ct):(\d+)$/.exec(sid) &&
        ctx.core.state.get(Number(sid.split(":")[1]));
      return !g || !g.ha?.managed || sidOf(g) !== sid;
    });
    if (unmanaged.length > 0) {
      throw die(`cannot use unmanaged resource(s) ${unmanaged.join(", ")}.`);
    }
    r.resources = sids.join(",");
  }
  if (p.nodes !== undefined) {
    const nodes = splitList(String(p.nodes));
    if (nodes.length === 0) throw die("no nodes were specified");
    const missing = nodes.map((n) => n.split(":")[0])
      .filter((n) => !ctx.core.state.nodes.includes(n));
    if (missing.length > 0) {
      throw die(`cannot use non-existent node(s) ${missing.join(", ")}.`);
    }
    // NodeAffinity.pm decode_plugin_value / encode_plugin_value: a hash by node (the last
    // wins), the priority `int`, without `:0`, sorted by node.
    const byNode = new Map(nodes.map((n) => {
      const [name, prio] = n.split(":");
      return [name, Number(prio ?? 0)] as const;
    }));
    r.nodes = [...byNode].sort(([a], [b]) => a < b ? -1 : 1)
      .map(([n, p]) => p ? `${n}:${p}` : n).join(",");
  }
  if (p.strict !== undefined) r.strict = Boolean(p.strict);
  if (p.affinity !== undefined) r.affinity = p.affinity as SimRule["affinity"];
  if (p.comment !== undefined) r.comment = String(p.comment);
  // `delete $param->{disable} if !$param->{disable}`
  if (p.disable) r.disable = true;
}

/** Rules.pm $assert_feasibility: an infeasible rule is refused (400), nothing written. */
function assertFeasible(id: string, rules: Map<string, SimRule>) {
  const errors = feasibility(rules).get(id);
  if (!errors) return;
  const flat = Object.fromEntries(
    Object.entries(errors).map(([k, v]) => [k, v.join(", ")]),
  );
  throw new ApiError(400, `Rule '${id}' is invalid.`, flat);
}

haRoutes.push(
  {
    method: "GET",
    path: RULE,
    since: 9,
    handler: (ctx) => {
      checkRoot(ctx, "Sys.Audit");
      return ruleView(ctx, String(ctx.params.rule));
    },
  },
  {
    method: "POST",
    path: RULES_PATH,
    since: 9,
    dynamic: fromSchema("POST", RULES_PATH),
    handler: (ctx) => {
      checkRoot(ctx, "Sys.Console");
      const id = String(ctx.params.rule);
      const rules = rulesOf(ctx.core);
      if (rules.has(id)) throw die(`HA rule '${id}' already defined`);
      const type = ctx.params.type as SimRule["type"];
      if (type === "node-affinity" && ctx.params.nodes === undefined) {
        throw new ApiError(400, "Parameter verification failed.", {
          nodes: "property is missing and it is not optional",
        });
      }
      const order = Math.max(0, ...[...rules.values()].map((r) => r.order)) + 1;
      const rule: SimRule = { type, resources: "", order };
      setRule(ctx, rule);
      const next = new Map(rules).set(id, rule);
      assertFeasible(id, next);
      rules.set(id, rule);
      return null;
    },
  },
  {
    method: "PUT",
    path: RULE,
    since: 9,
    dynamic: fromSchema("PUT", RULE),
    handler: (ctx) => {
      checkRoot(ctx, "Sys.Console");
      const id = String(ctx.params.rule);
      const rules = rulesOf(ctx.core);
      const old = rules.get(id);
      if (!old) throw die(`HA rule '${id}' does not exist`);
      if (
        ctx.params.digest !== undefined &&
        ctx.params.digest !== ruleView(ctx, id).digest
      ) {
        throw die(
          "detected modified configuration - file changed by other user? Try again.",
        );
      }
      const rule: SimRule = { ...old };
      setRule(ctx, rule);
      for (const key of splitList(String(ctx.params.delete ?? ""))) {
        if (!RULE_OPTIONS.includes(key) || key === "resources") {
          throw die(`no such option '${key}'`);
        }
        delete (rule as unknown as Record<string, unknown>)[key];
      }
      const next = new Map(rules).set(id, rule);
      assertFeasible(id, next);
      rules.set(id, rule);
      return null;
    },
  },
  {
    method: "DELETE",
    path: RULE,
    since: 9,
    handler: (ctx) => {
      checkRoot(ctx, "Sys.Console");
      // Rules.pm delete_rule: a rule that does not exist is no error.
      rulesOf(ctx.core).delete(String(ctx.params.rule));
      return null;
    },
  },
);

const GROUPS_PATH = "/cluster/ha/groups";
const GROUP = `${GROUPS_PATH}/{group}`;

/** PVE 9's Groups.pm, fully migrated: every call dies (`cannot <what> group: …`). */
function migrated(ctx: Ctx, what: string): void {
  if (ctx.core.major === 9) {
    throw die(`cannot ${what} group: ha groups have been migrated to rules`);
  }
}

/** The options a group create or update sets (Groups.pm, PVE 8: check_config then copy). */
function setGroup(ctx: Ctx, g: SimGroup): void {
  const p = ctx.params;
  if (p.type !== undefined && p.type !== "group") {
    throw die("types does not match");
  }
  // decode_value: a hash of the entries as given (one per distinct text).
  if (p.nodes !== undefined) g.nodes = [...new Set(splitList(String(p.nodes)))];
  if (p.restricted !== undefined) g.restricted = Boolean(p.restricted);
  if (p.nofailback !== undefined) g.nofailback = Boolean(p.nofailback);
  if (p.comment !== undefined) g.comment = String(p.comment);
}

haRoutes.push(
  {
    method: "GET",
    path: GROUP,
    handler: (ctx) => {
      checkRoot(ctx, "Sys.Audit");
      migrated(ctx, "read");
      // $api_copy_config: `no such ha group`, else the section with `group`, `digest` and the
      // nodes encoded. The digest is a stand-in (PVE's is the SHA-1 of the whole groups config):
      // the package only passes it back, so any value that changes with the group serves.
      const id = String(ctx.params.group);
      const g = groupsOf(ctx.core).get(id);
      if (!g) throw die(`no such ha group '${id}'`);
      const out: Record<string, unknown> = {
        group: id,
        type: "group",
        nodes: g.nodes.join(","),
        digest: JSON.stringify(g).length.toString(16).padStart(40, "0"),
      };
      if (g.restricted !== undefined) out.restricted = g.restricted ? 1 : 0;
      if (g.nofailback !== undefined) out.nofailback = g.nofailback ? 1 : 0;
      if (g.comment !== undefined) out.comment = g.comment;
      return out;
    },
  },
  {
    method: "POST",
    path: GROUPS_PATH,
    dynamic: fromSchema("POST", GROUPS_PATH),
    handler: (ctx) => {
      checkRoot(ctx, "Sys.Console");
      migrated(ctx, "create");
      const id = String(ctx.params.group);
      const groups = groupsOf(ctx.core);
      if (groups.has(id)) throw die(`ha group ID '${id}' already defined`);
      const g: SimGroup = { nodes: [] };
      setGroup(ctx, g);
      groups.set(id, g);
      return null;
    },
  },
  {
    method: "PUT",
    path: GROUP,
    dynamic: fromSchema("PUT", GROUP),
    handler: (ctx) => {
      checkRoot(ctx, "Sys.Console");
      migrated(ctx, "update");
      const id = String(ctx.params.group);
      const old = groupsOf(ctx.core).get(id);
      if (!old) throw die(`no such ha group '${id}'`);
      const g: SimGroup = { ...old };
      setGroup(ctx, g);
      for (const key of splitList(String(ctx.params.delete ?? ""))) {
        if (!["nodes", "restricted", "nofailback", "comment"].includes(key)) {
          throw die(`no such option '${key}'`);
        }
        if (key === "nodes") {
          throw die(`unable to delete required option '${key}'`);
        }
        delete (g as unknown as Record<string, unknown>)[key];
      }
      groupsOf(ctx.core).set(id, g);
      return null;
    },
  },
  {
    method: "DELETE",
    path: GROUP,
    handler: (ctx) => {
      checkRoot(ctx, "Sys.Console");
      migrated(ctx, "delete");
      // Groups.pm delete: refused while a resource names the group; a missing group is no error.
      const id = String(ctx.params.group);
      for (const g of ctx.core.state.all()) {
        if (g.ha?.managed && g.ha.group === id) {
          throw die(`ha group is used by service '${sidOf(g)}'`);
        }
      }
      groupsOf(ctx.core).delete(id);
      return null;
    },
  },
);
