/**
 * A guest's firewall (`/nodes/{node}/{qemu|lxc}/{vmid}/firewall/…`: options, rules, IP sets,
 * aliases) and the cluster's switch (`/cluster/firewall/options`), as pve-firewall serves them:
 * `src/PVE/API2/Firewall/VM.pm` (get_options, set_options), `Rules.pm` (RulesBase with
 * VMRules/CTRules), `IPSet.pm` (BaseIPSetList, IPSetBase with VMIPset/CTIPset), `Aliases.pm`
 * (AliasesBase with VMAliases/CTAliases), `Cluster.pm` (get_options, set_options).
 *
 * All synchronous. Like PVE, none of them looks the guest up: the config is the file
 * `/etc/pve/firewall/<vmid>.fw`, empty when absent (Firewall.pm load_vmfw_conf), and a guest's
 * destruction removes it (ClusterState.remove). Every write reads the file, checks, writes it
 * and the next read parses it again (firewall.ts persist). Errors are PVE's: a plain die is a
 * 500, raise_param_exc a 400 naming the parameter.
 *
 * @module
 */

import type { Ctx, Route } from "./context.ts";
import {
  assertDigest,
  emptyFirewall,
  type FwEntry,
  type GuestFirewall,
  listWithDigest,
  paramError,
  persist,
  RULE_PROPERTIES,
  verifyRule,
  VM_FLAG_OPTIONS,
  VM_OPTIONS,
  withDigest,
} from "./firewall.ts";
import { ApiError } from "./http.ts";
import type { ParamSpec } from "./params.ts";
import { endpointFacts } from "./schema/facts.ts";
import { splitList } from "./schema/formats.ts";
import { ALIAS_REF, cleanCidr, parseIpOrCidr } from "./schema/fw_formats.ts";
import type { GuestType } from "./types.ts";

/**
 * The route's parameters as the schema layer already checked them (router.ts runs PVE's schema
 * first): each taken with its type, nothing checked twice.
 */
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

/** One route of the guest firewall, its parameters taken from the schema. */
function route(
  method: Route["method"],
  path: string,
  privilege: string,
  handler: Route["handler"],
): Route {
  return {
    method,
    path,
    privilege,
    dynamic: fromSchema(method, path),
    handler,
  };
}

/**
 * The guest's firewall config as read from its file (an absent file reads as empty): a copy,
 * so a request refused half-way leaves the config as it was, as PVE's re-read per request does.
 */
function load(ctx: Ctx): GuestFirewall {
  const fw = ctx.core.state.firewalls.get(ctx.params.vmid as number);
  return fw ? structuredClone(fw) : emptyFirewall();
}

/** save_vmfw_conf, then what the parser reads back; an empty config removes the file. */
function save(ctx: Ctx, fw: GuestFirewall, env: "vm" | "ct"): void {
  const vmid = ctx.params.vmid as number;
  const saved = persist(fw, env);
  const empty = Object.keys(saved.options).length === 0 &&
    Object.keys(saved.aliases).length === 0 &&
    Object.keys(saved.ipsets).length === 0 && saved.rules.length === 0;
  if (empty) ctx.core.state.firewalls.delete(vmid);
  else ctx.core.state.firewalls.set(vmid, saved);
}

/** `GET/PUT …/firewall/options` (VM.pm get_options, set_options). */
function optionRoutes(base: string, env: "vm" | "ct"): Route[] {
  return [
    route("GET", `${base}/options`, "VM.Audit", async (ctx) => {
      return (await withDigest(load(ctx).options)).data;
    }),
    route("PUT", `${base}/options`, "VM.Config.Network", async (ctx) => {
      const fw = load(ctx);
      assertDigest((await withDigest(fw.options)).digest, ctx.params.digest);
      for (const opt of splitList(String(ctx.params.delete ?? ""))) {
        if (!VM_OPTIONS.includes(opt)) {
          throw paramError("delete", `no such option '${opt}'`);
        }
        delete fw.options[opt];
      }
      for (const opt of VM_OPTIONS) {
        const v = ctx.params[opt];
        if (v === undefined) continue;
        fw.options[opt] = VM_FLAG_OPTIONS.includes(opt)
          ? (v ? 1 : 0)
          : String(v);
      }
      save(ctx, fw, env);
      return null;
    }),
  ];
}

/** The rule a request names by `pos`, or PVE's die. */
function ruleAt(fw: GuestFirewall, pos: number): FwEntry {
  if (pos >= fw.rules.length) {
    throw new ApiError(500, `no rule at position ${pos}`);
  }
  return fw.rules[pos];
}

/** Firewall.pm copy_rule_data: each rule property given; `''` or `-` clears it. */
function copyRuleData(rule: FwEntry, params: Ctx["params"]): void {
  for (const k of RULE_PROPERTIES) {
    const v = params[k];
    if (v === undefined) continue;
    if (v === "" || v === "-") delete rule[k];
    else rule[k] = v as string | number;
  }
  // pos and digest are copied too, but the writer never writes them.
  delete rule.pos;
  delete rule.digest;
}

/** Firewall.pm delete_rule_properties. */
function deleteRuleProperties(rule: FwEntry, list: string): void {
  for (const opt of splitList(list)) {
    if (!RULE_PROPERTIES.includes(opt)) {
      throw paramError("delete", `no such property ('${opt}')`);
    }
    if (opt === "type" || opt === "action") {
      throw paramError("delete", `unable to delete required property '${opt}'`);
    }
    delete rule[opt];
  }
}

/** `…/firewall/rules` and `…/rules/{pos}` (Rules.pm RulesBase). */
function ruleRoutes(base: string, env: "vm" | "ct"): Route[] {
  const one = `${base}/rules/{pos}`;
  return [
    // get_rules: the list with its digest, `pos` numbered from 0.
    route("GET", `${base}/rules`, "VM.Audit", async (ctx) => {
      const { data } = await listWithDigest(load(ctx).rules);
      return data.map((r, pos) => ({ ...r, pos }));
    }),
    route("GET", one, "VM.Audit", async (ctx) => {
      const pos = ctx.params.pos as number;
      const { data } = await listWithDigest(load(ctx).rules);
      return { ...ruleAt({ ...emptyFirewall(), rules: data }, pos), pos };
    }),
    // create_rule: verified, `enable` 0 unless given, always put first (`pos` is ignored).
    route("POST", `${base}/rules`, "VM.Config.Network", (ctx) => {
      const fw = load(ctx);
      const rule: FwEntry = {};
      copyRuleData(rule, ctx.params);
      verifyRule(rule, fw, env);
      if (ctx.params.enable === undefined) rule.enable = 0;
      fw.rules.unshift(rule);
      save(ctx, fw, env);
      return null;
    }),
    // update_rule: digest, then `moveto` (other fields ignored) or the fields and `delete`.
    route("PUT", one, "VM.Config.Network", async (ctx) => {
      const fw = load(ctx);
      assertDigest((await listWithDigest(fw.rules)).digest, ctx.params.digest);
      const pos = ctx.params.pos as number;
      const rule = ruleAt(fw, pos);
      const moveto = ctx.params.moveto as number | undefined;
      if (moveto !== undefined && moveto !== pos) {
        // The rule goes before the one at `moveto` (counted before the move), or last when
        // `moveto` is past the end: moved down, it lands at moveto - 1.
        const moved: FwEntry[] = [];
        fw.rules.forEach((r, i) => {
          if (i === pos) return;
          if (i === moveto) moved.push(rule);
          moved.push(r);
        });
        if (moveto >= fw.rules.length) moved.push(rule);
        fw.rules = moved;
      } else {
        copyRuleData(rule, ctx.params);
        if (ctx.params.delete) {
          deleteRuleProperties(rule, String(ctx.params.delete));
        }
        verifyRule(rule, fw, env);
      }
      save(ctx, fw, env);
      return null;
    }),
    route("DELETE", one, "VM.Config.Network", async (ctx) => {
      const fw = load(ctx);
      assertDigest((await listWithDigest(fw.rules)).digest, ctx.params.digest);
      const pos = ctx.params.pos as number;
      ruleAt(fw, pos);
      fw.rules.splice(pos, 1);
      save(ctx, fw, env);
      return null;
    }),
  ];
}

/** BaseIPSetList `$get_ipset_list`: names sorted, each with its comment. */
function ipsetList(fw: GuestFirewall): FwEntry[] {
  return Object.keys(fw.ipsets).sort().map((name) => {
    const e: FwEntry = { name };
    if (fw.ipsetComments[name]) e.comment = fw.ipsetComments[name];
    return e;
  });
}

/** IPSetBase load_config: the named set, or PVE's die. */
function ipsetOf(fw: GuestFirewall, name: string): FwEntry[] {
  const set = fw.ipsets[name];
  if (!set) throw new ApiError(500, `no such IPSet '${name}'`);
  return set;
}

/**
 * resolve_alias (Firewall.pm): the guest's aliases unless the scope is `dc/`, then the
 * datacenter's unless it is `guest/`; die unless one holds the name (without case).
 */
function resolveAlias(ctx: Ctx, fw: GuestFirewall, ref: string): void {
  const m = ALIAS_REF.exec(ref)!;
  const name = m[2].toLowerCase();
  const found = (m[1] !== "dc/" && fw.aliases[name]) ||
    (m[1] !== "guest/" && ctx.core.state.clusterAliases[name]);
  if (!found) throw new ApiError(500, `no such alias '${m[2]}'`);
}

/**
 * A set's entries as parse_fw_config lists them: one naming an alias that resolves to none carries
 * `errors` (its `cidr`), and pve-firewall leaves it out of the rules it compiles.
 */
function listedEntries(
  ctx: Ctx,
  fw: GuestFirewall,
  set: FwEntry[],
): Record<string, unknown>[] {
  return set.map((e) => {
    const cidr = String(e.cidr);
    if (!ALIAS_REF.test(cidr)) return e;
    try {
      resolveAlias(ctx, fw, cidr);
      return e;
    } catch (error) {
      return { ...e, errors: { cidr: (error as Error).message } };
    }
  });
}

/** `…/firewall/ipset` (BaseIPSetList) and `…/ipset/{name}[/{cidr}]` (IPSetBase). */
function ipsetRoutes(base: string, env: "vm" | "ct"): Route[] {
  const set = `${base}/ipset/{name}`;
  const entry = `${set}/{cidr}`;
  return [
    route("GET", `${base}/ipset`, "VM.Audit", async (ctx) => {
      return (await listWithDigest(ipsetList(load(ctx)))).data;
    }),
    // create_ipset: `name` is the new name; `rename` names the set to rename (and its comment).
    route("POST", `${base}/ipset`, "VM.Config.Network", async (ctx) => {
      const fw = load(ctx);
      const name = ctx.params.name as string;
      const rename = ctx.params.rename as string | undefined;
      const comment = ctx.params.comment as string | undefined;
      if (rename) {
        assertDigest(
          (await listWithDigest(ipsetList(fw))).digest,
          ctx.params.digest,
        );
        if (!fw.ipsets[rename]) {
          throw paramError("name", `IPSet '${rename}' does not exist`);
        }
        if (fw.ipsets[name] && name !== rename) {
          throw paramError("name", `IPSet '${name}' does already exist`);
        }
        const data = fw.ipsets[rename];
        delete fw.ipsets[rename];
        fw.ipsets[name] = data;
        const old = fw.ipsetComments[rename];
        delete fw.ipsetComments[rename];
        if (old) fw.ipsetComments[name] = old;
      } else {
        if (fw.ipsets[name]) {
          throw paramError("name", `IPSet '${name}' already exists`);
        }
        fw.ipsets[name] = [];
      }
      if (comment !== undefined) fw.ipsetComments[name] = comment;
      save(ctx, fw, env);
      return null;
    }),
    route("GET", set, "VM.Audit", async (ctx) => {
      const fw = load(ctx);
      const entries = ipsetOf(fw, ctx.params.name as string);
      // The digest is the config's, whatever the parser marks.
      const { digest } = await listWithDigest(entries);
      return listedEntries(ctx, fw, entries).map((e) => ({ ...e, digest }));
    }),
    // delete_ipset: a set with entries only with `force`.
    route("DELETE", set, "VM.Config.Network", (ctx) => {
      const fw = load(ctx);
      const name = ctx.params.name as string;
      if (ipsetOf(fw, name).length > 0 && !ctx.params.force) {
        throw new ApiError(500, `IPSet '${name}' is not empty`);
      }
      delete fw.ipsets[name];
      save(ctx, fw, env);
      return null;
    }),
    // create_ip: an alias must exist; an address is cleaned and normalized like the parser does.
    route("POST", set, "VM.Config.Network", (ctx) => {
      const fw = load(ctx);
      const list = ipsetOf(fw, ctx.params.name as string);
      let cidr = ctx.params.cidr as string;
      if (ALIAS_REF.test(cidr)) resolveAlias(ctx, fw, cidr);
      else cidr = parseIpOrCidr(cleanCidr(cidr)).cidr;
      if (list.some((e) => e.cidr === cidr)) {
        throw paramError("cidr", `address '${cidr}' already exists`);
      }
      if (/\/0+$/.test(cidr)) {
        throw paramError(
          "cidr",
          "a zero prefix is not allowed in ipset entries",
        );
      }
      const data: FwEntry = { cidr };
      if (ctx.params.nomatch) data.nomatch = 1;
      if (ctx.params.comment) data.comment = ctx.params.comment as string;
      list.unshift(data);
      save(ctx, fw, env);
      return null;
    }),
    // read_ip: the entry (with the set's digest), matched on the exact cidr.
    route("GET", entry, "VM.Audit", async (ctx) => {
      const list = ipsetOf(load(ctx), ctx.params.name as string);
      const found = (await listWithDigest(list)).data.find((e) =>
        e.cidr === ctx.params.cidr
      );
      if (!found) throw paramError("cidr", "no such IP/Network");
      return found;
    }),
    // update_ip: nomatch and comment replaced by what is given (absent clears them).
    route("PUT", entry, "VM.Config.Network", async (ctx) => {
      const fw = load(ctx);
      const list = ipsetOf(fw, ctx.params.name as string);
      assertDigest((await listWithDigest(list)).digest, ctx.params.digest);
      const found = list.find((e) => e.cidr === ctx.params.cidr);
      if (!found) throw paramError("cidr", "no such IP/Network");
      delete found.nomatch;
      delete found.comment;
      if (ctx.params.nomatch) found.nomatch = 1;
      if (ctx.params.comment) found.comment = ctx.params.comment as string;
      save(ctx, fw, env);
      return null;
    }),
    // remove_ip: an absent cidr is no error.
    route("DELETE", entry, "VM.Config.Network", async (ctx) => {
      const fw = load(ctx);
      const name = ctx.params.name as string;
      const list = ipsetOf(fw, name);
      assertDigest((await listWithDigest(list)).digest, ctx.params.digest);
      fw.ipsets[name] = list.filter((e) => e.cidr !== ctx.params.cidr);
      save(ctx, fw, env);
      return null;
    }),
  ];
}

/** Aliases.pm `$aliases_to_list`: by lower-cased name. */
function aliasList(fw: GuestFirewall): FwEntry[] {
  return Object.keys(fw.aliases).sort().map((k) => fw.aliases[k]);
}

/** `…/firewall/aliases[/{name}]` (Aliases.pm AliasesBase). */
function aliasRoutes(base: string, env: "vm" | "ct"): Route[] {
  const one = `${base}/aliases/{name}`;
  const entry = (ctx: Ctx): FwEntry => {
    const data: FwEntry = {
      name: ctx.params.name as string,
      cidr: ctx.params.cidr as string,
    };
    if (ctx.params.comment) data.comment = ctx.params.comment as string;
    return data;
  };
  return [
    route("GET", `${base}/aliases`, "VM.Audit", async (ctx) => {
      return (await listWithDigest(aliasList(load(ctx)))).data;
    }),
    route("POST", `${base}/aliases`, "VM.Config.Network", (ctx) => {
      const fw = load(ctx);
      const name = ctx.params.name as string;
      if (fw.aliases[name.toLowerCase()]) {
        throw paramError("name", `alias '${name}' already exists`);
      }
      fw.aliases[name.toLowerCase()] = entry(ctx);
      save(ctx, fw, env);
      return null;
    }),
    route("GET", one, "VM.Audit", (ctx) => {
      const found =
        load(ctx).aliases[(ctx.params.name as string).toLowerCase()];
      if (!found) throw paramError("name", "no such alias");
      return found;
    }),
    // update_alias: cidr and comment replaced; `rename` gives the new name.
    route("PUT", one, "VM.Config.Network", async (ctx) => {
      const fw = load(ctx);
      assertDigest(
        (await listWithDigest(aliasList(fw))).digest,
        ctx.params.digest,
      );
      const name = (ctx.params.name as string).toLowerCase();
      if (!fw.aliases[name]) throw paramError("name", "no such alias");
      fw.aliases[name] = entry(ctx);
      const rename = ctx.params.rename as string | undefined;
      if (rename && rename.toLowerCase() !== name) {
        if (fw.aliases[rename.toLowerCase()]) {
          throw paramError("name", `alias '${rename}' already exists`);
        }
        fw.aliases[rename.toLowerCase()] = {
          ...fw.aliases[name],
          name: rename,
        };
        delete fw.aliases[name];
      }
      save(ctx, fw, env);
      return null;
    }),
    // remove_alias: an absent alias is no error.
    route("DELETE", one, "VM.Config.Network", async (ctx) => {
      const fw = load(ctx);
      assertDigest(
        (await listWithDigest(aliasList(fw))).digest,
        ctx.params.digest,
      );
      delete fw.aliases[(ctx.params.name as string).toLowerCase()];
      save(ctx, fw, env);
      return null;
    }),
  ];
}

/** 403 unless the caller holds `privilege` on `/` (Cluster.pm's checks). */
function checkRoot(ctx: Ctx, privilege: string): void {
  if (!ctx.user.privilegesOn("/").has(privilege)) {
    throw new ApiError(403, `Permission check failed (/, ${privilege})`);
  }
}

/** Cluster.pm `$option_properties` (Firewall.pm `$cluster_option_properties`). */
const CLUSTER_OPTIONS = [
  "enable",
  "ebtables",
  "policy_in",
  "policy_out",
  "policy_forward",
  "log_ratelimit",
];

/**
 * The cluster options as load_clusterfw_conf reads them: parse_clusterfw_option turns an
 * `enable` timestamp (the anti-lockout double call) older than 60 s into 0.
 */
function clusterOptions(ctx: Ctx): FwEntry {
  const options = { ...ctx.core.state.clusterFirewall };
  const enable = Number(options.enable ?? 0);
  if (enable > 1 && Date.now() / 1000 - enable > 60) options.enable = 0;
  return options;
}

/**
 * `GET/PUT /cluster/firewall/options` (Cluster.pm get_options, set_options) and
 * `GET /cluster/firewall/aliases` (Aliases.pm ClusterAliases: Sys.Audit on /, by lower-cased name).
 */
function clusterRoutes(): Route[] {
  const path = "/cluster/firewall/options";
  return [
    {
      method: "GET",
      path: "/cluster/firewall/aliases",
      handler: async (ctx) => {
        checkRoot(ctx, "Sys.Audit");
        const aliases = ctx.core.state.clusterAliases;
        const list = Object.keys(aliases).sort().map((k) => aliases[k]);
        return (await listWithDigest(list)).data;
      },
    },
    {
      method: "GET",
      path,
      handler: async (ctx) => {
        checkRoot(ctx, "Sys.Audit");
        return (await withDigest(clusterOptions(ctx))).data;
      },
    },
    {
      method: "PUT",
      path,
      dynamic: fromSchema("PUT", path),
      handler: async (ctx) => {
        checkRoot(ctx, "Sys.Modify");
        const options = clusterOptions(ctx);
        assertDigest((await withDigest(options)).digest, ctx.params.digest);
        for (const opt of splitList(String(ctx.params.delete ?? ""))) {
          if (!CLUSTER_OPTIONS.includes(opt)) {
            throw paramError("delete", `no such option '${opt}'`);
          }
          delete options[opt];
        }
        for (const opt of CLUSTER_OPTIONS) {
          const v = ctx.params[opt];
          if (v === undefined) continue;
          // `enable` > 1 becomes the current time (the anti-lockout call).
          options[opt] = typeof v === "boolean"
            ? (v ? 1 : 0)
            : opt === "enable" && Number(v) > 1
            ? Math.floor(Date.now() / 1000)
            : v as string | number;
        }
        ctx.core.state.clusterFirewall = options;
        return null;
      },
    },
  ];
}

/** The firewall routes of one guest type: rule_env `vm` for VMs, `ct` for containers. */
function guestRoutes(type: GuestType): Route[] {
  const base = `/nodes/{node}/${type}/{vmid}/firewall`;
  const env = type === "qemu" ? "vm" : "ct";
  return [
    ...optionRoutes(base, env),
    ...ruleRoutes(base, env),
    ...ipsetRoutes(base, env),
    ...aliasRoutes(base, env),
  ];
}

export const firewallRoutes: Route[] = [
  ...guestRoutes("qemu"),
  ...guestRoutes("lxc"),
  ...clusterRoutes(),
];
