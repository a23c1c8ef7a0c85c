/**
 * The fault matrix's firewallOptions, firewallRules, firewallIpset and firewallAlias rows, one
 * builder each for both models, with the oracles that decide whether a verdict told the truth: after
 * a success the guest's `.fw` holds the options (the one rule, the IP set, the alias) asked for, and
 * no record claims what PVE did not show. The fixture
 * puts the firewall in effect (the cluster's on, net0 with `firewall=1`), so a clean run has
 * nothing to warn about and a failed in-effect read shows as a flagged success.
 *
 * @module
 */
import { api, tokenHeader } from "../../simulator/sim_client.ts";
import { type Env, TOKEN_ID, TOKEN_SECRET } from "../e2e/env.ts";
import {
  config,
  type Endpoint,
  type Expect,
  findIt,
  flaggedOn,
  guestPath,
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
import type { FaultId } from "./faults.ts";

const prefixOf = (type: GuestType) => type === "qemu" ? "vm" : "ct";

/** Why a config lock does not bar a firewall method. */
const FIREWALL_LOCK_FREE =
  "pve-firewall `PVE/API2/Firewall/VM.pm`, `Rules.pm`, `IPSet.pm` and `Aliases.pm` write `<vmid>.fw` under the firewall's own cluster lock (`PVE/Firewall.pm` lock_vmfw_conf), never checking the guest config's `lock`";

/** A write PVE answers null: its answer is not needed, the read-back decides. */
const readBackShows = (
  happened: RegExp,
  note =
    "PVE answers null to a firewall write; the read-back shows the change missing",
): Partial<Record<FaultId, Expect>> => ({
  shape: { verdict: "fail", happened, readBack: true, note },
});

const fwPath = (n: Where, type: GuestType, vmid: number, rest: string) => ({
  path: guestPath(n, vmid, `/firewall/${rest}`, type),
  sample: `/nodes/${n}/${type}/${vmid}/firewall/${rest}`,
});

/** A read of the guest's firewall section `rest`, in the phase `phase` (the `skip`-th such read). */
function fwRead(
  n: Where,
  type: GuestType,
  vmid: number,
  rest: string,
  phase: string,
  skip: number,
): Endpoint {
  return {
    id: `GET firewall/${rest}${phase}`,
    method: "GET",
    ...fwPath(n, type, vmid, rest),
    skip,
    kind: "read",
    pve500: "got timeout",
    privilege: `/vms/${vmid}, VM.Audit`,
  };
}

/** A write to the guest's firewall section `rest`. */
function fwWrite(
  n: Where,
  type: GuestType,
  vmid: number,
  method: "POST" | "PUT" | "DELETE",
  rest: string,
): Endpoint {
  return {
    id: `${method} firewall/${rest}`,
    method,
    ...fwPath(n, type, vmid, rest),
    kind: "mutation",
    pve500: `cfs-lock 'firewall-vm-${vmid}' error: got lock request timeout`,
    privilege: `/vms/${vmid}, VM.Config.Network`,
  };
}

/** The guest's sighting: version, find it, its status and config. */
function sighting(n: Where, type: GuestType, vmid: number): Endpoint[] {
  const st = status(n, vmid, "", 0, type);
  return [version, ...findIt(n, vmid, st), st, config(n, vmid, "", 0, type)];
}

/** Whether the firewall applies, read after the change: a failed read is a warning, not a failure. */
const inEffectExpect = () =>
  flaggedOn(
    "the change read back; whether the firewall is in effect could not be read, and the summary and a warning say so",
  );

/**
 * The in-effect reads: the guest's options (unless `skip` is undefined: firewallOptions judges by
 * the options it read back) and the cluster's.
 */
function inEffect(
  n: Where,
  type: GuestType,
  vmid: number,
  skip?: number,
): Endpoint[] {
  const guest: Endpoint[] = skip === undefined ? [] : [{
    ...fwRead(n, type, vmid, "options", " (in effect)", skip),
    expect: inEffectExpect(),
  }];
  return [
    ...guest,
    {
      id: "GET /cluster/firewall/options (in effect)",
      method: "GET",
      path: "^/api2/json/cluster/firewall/options$",
      sample: "/cluster/firewall/options",
      kind: "read",
      pve500: "got timeout",
      privilege: "/, Sys.Audit",
      expect: inEffectExpect(),
    },
  ];
}

/**
 * Puts the firewall of `vmid` in effect but for the guest's own `enable` (set too with `enable`):
 * the cluster's firewall on, net0 with `firewall=1`. Sent before the fault is armed.
 */
async function inEffectFixture(
  env: Env,
  type: GuestType,
  vmid: number,
  enable: boolean,
): Promise<void> {
  const guest = env.sim.guest(vmid);
  if (!guest) return;
  guest.config.net0 = `${guest.config.net0},firewall=1`;
  await send(env, "PUT", "/cluster/firewall/options", { enable: 1 });
  if (enable) {
    const path = `/nodes/${guest.node}/${type}/${vmid}/firewall/options`;
    await send(env, "PUT", path, { enable: 1 });
  }
}

/** One request to the simulator as the package's token, before the fault is armed. */
async function send(
  env: Env,
  method: "PUT" | "POST",
  path: string,
  params: Record<string, string | number>,
): Promise<void> {
  const auth = tokenHeader(TOKEN_ID, TOKEN_SECRET);
  const r = await api(env.sim.url, method, path, params, { auth });
  if (r.status !== 200) throw new Error(`${path}: ${JSON.stringify(r)}`);
}

/** What every firewall run may record: only its guest, a status it had. */
function truth(type: GuestType, vmid: number) {
  return (env: Env, r: RunResult, before: Snapshot): string[] => [
    ...writesOnly(r, new RegExp(`^${prefixOf(type)}-${vmid}$`)),
    ...statusObserved(env, r, before, vmid, prefixOf(type)),
  ];
}

/** firewallOptions of a stopped guest: enable it with policy_in DROP. */
export function firewallOptionsSpec(
  n: Where,
  type: GuestType,
  vmid: number,
  names: RegExp,
): RowSpec {
  return {
    name: "firewallOptions",
    args: { vmid, enable: true, policyIn: "DROP" },
    prepare: (env) => inEffectFixture(env, type, vmid, false),
    endpoints: [
      ...sighting(n, type, vmid),
      fwRead(n, type, vmid, "options", "", 0),
      {
        ...fwWrite(n, type, vmid, "PUT", "options"),
        expect: readBackShows(/`enable` reads "", asked 1/),
      },
      fwRead(n, type, vmid, "options", " (read back)", 1),
      ...inEffect(n, type, vmid),
    ],
    names,
    task: false,
    lockFree: FIREWALL_LOCK_FREE,
    effect: (env) => {
      const options = env.sim.firewall(vmid)?.options ?? {};
      return Number(options.enable) === 1 && options.policy_in === "DROP"
        ? []
        : [`succeeded but the options are ${JSON.stringify(options)}`];
    },
    truth: truth(type, vmid),
  };
}

const SSH = { type: "in", action: "ACCEPT", proto: "tcp", dport: "22" };

/** firewallRules of a stopped guest without rules: one rule made, moved to its place. */
export function firewallRulesSpec(
  n: Where,
  type: GuestType,
  vmid: number,
  names: RegExp,
): RowSpec {
  return {
    name: "firewallRules",
    args: { vmid, rules: [SSH] },
    prepare: (env) => inEffectFixture(env, type, vmid, true),
    endpoints: [
      ...sighting(n, type, vmid),
      fwRead(n, type, vmid, "rules", "", 0),
      {
        ...fwWrite(n, type, vmid, "POST", "rules"),
        expect: readBackShows(
          /PVE refused to change the firewall rules/,
          "PVE answers null to a firewall write; the rule was not made, so the next write, moving it, is refused",
        ),
      },
      {
        ...fwWrite(n, type, vmid, "PUT", "rules/0"),
        expect: {
          shape: {
            verdict: "ok",
            note:
              "PVE answers null; with one rule the move to its place changes nothing, and the list reads back as declared",
          },
        },
      },
      fwRead(n, type, vmid, "rules", " (read back)", 1),
      ...inEffect(n, type, vmid, 0),
    ],
    names,
    task: false,
    lockFree: FIREWALL_LOCK_FREE,
    effect: (env) => {
      const rules = env.sim.firewall(vmid)?.rules ?? [];
      const [rule] = rules;
      return rules.length === 1 && rule.type === "in" &&
          rule.action === "ACCEPT" && rule.proto === "tcp" &&
          rule.dport === "22"
        ? []
        : [`succeeded but the rules are ${JSON.stringify(rules)}`];
    },
    truth: truth(type, vmid),
  };
}

/**
 * firewallIpset of a stopped guest whose set `web` holds 10.0.0.0/8 (commented) and 192.0.2.1:
 * its comment set, 192.0.2.1 deleted, 10.0.0.0/8 updated, 198.51.100.0/24 added.
 */
export function firewallIpsetSpec(
  n: Where,
  type: GuestType,
  vmid: number,
  names: RegExp,
): RowSpec {
  const sets = (phase: string, skip: number) =>
    fwRead(n, type, vmid, "ipset", phase, skip);
  const set = (phase: string, skip: number) =>
    fwRead(n, type, vmid, "ipset/web", phase, skip);
  return {
    name: "firewallIpset",
    args: {
      vmid,
      name: "web",
      comment: "lab",
      cidrs: [{ cidr: "10.0.0.0/8" }, { cidr: "198.51.100.0/24" }],
    },
    prepare: async (env) => {
      await inEffectFixture(env, type, vmid, true);
      const guest = env.sim.guest(vmid)!;
      const base = `/nodes/${guest.node}/${type}/${vmid}/firewall/ipset`;
      await send(env, "POST", base, { name: "web" });
      await send(env, "POST", `${base}/web`, { cidr: "192.0.2.1" });
      await send(env, "POST", `${base}/web`, {
        cidr: "10.0.0.0/8",
        comment: "old",
      });
    },
    endpoints: [
      ...sighting(n, type, vmid),
      sets("", 0),
      set("", 0),
      {
        ...fwWrite(n, type, vmid, "POST", "ipset"),
        expect: readBackShows(/IP set web has the comment None/),
      },
      {
        ...fwWrite(n, type, vmid, "DELETE", "ipset/web/192.0.2.1"),
        expect: readBackShows(/lists 192\.0\.2\.1 .*not as declared/),
      },
      {
        ...fwWrite(n, type, vmid, "PUT", "ipset/web/10.0.0.0/8"),
        // The cidr travels as one path segment, its slash encoded.
        path: guestPath(n, vmid, "/firewall/ipset/web/10.0.0.0(/|%2F)8", type),
        expect: readBackShows(
          /lists 10\.0\.0\.0\/8 \(nomatch false, comment Some\("old"\)/,
        ),
      },
      {
        ...fwWrite(n, type, vmid, "POST", "ipset/web"),
        expect: readBackShows(/IP set web lacks 198\.51\.100\.0\/24/),
      },
      sets(" (read back)", 1),
      set(" (read back)", 1),
      ...inEffect(n, type, vmid, 0),
    ],
    names,
    task: false,
    lockFree: FIREWALL_LOCK_FREE,
    effect: (env) => {
      const f = env.sim.firewall(vmid);
      const held = (f?.ipsets.web ?? []).map((e) =>
        `${e.nomatch ? "!" : ""}${e.cidr}${e.comment ? ` # ${e.comment}` : ""}`
      );
      return f?.ipsetComments.web === "lab" &&
          held.join(",") === "10.0.0.0/8,198.51.100.0/24"
        ? []
        : [
          `succeeded but the set is ${
            JSON.stringify(held)
          }, ${f?.ipsetComments.web}`,
        ];
    },
    truth: truth(type, vmid),
  };
}

/** firewallAlias of a stopped guest whose alias `gateway` names 10.0.0.1: moved to 10.0.0.2. */
export function firewallAliasSpec(
  n: Where,
  type: GuestType,
  vmid: number,
  names: RegExp,
): RowSpec {
  return {
    name: "firewallAlias",
    args: { vmid, name: "gateway", cidr: "10.0.0.2", comment: "router" },
    prepare: async (env) => {
      await inEffectFixture(env, type, vmid, true);
      const guest = env.sim.guest(vmid)!;
      const path = `/nodes/${guest.node}/${type}/${vmid}/firewall/aliases`;
      await send(env, "POST", path, { name: "gateway", cidr: "10.0.0.1" });
    },
    endpoints: [
      ...sighting(n, type, vmid),
      fwRead(n, type, vmid, "aliases", "", 0),
      {
        ...fwWrite(n, type, vmid, "PUT", "aliases/gateway"),
        expect: readBackShows(
          /cidr Some\("10\.0\.0\.1"\)/,
        ),
      },
      fwRead(n, type, vmid, "aliases", " (read back)", 1),
      ...inEffect(n, type, vmid, 0),
    ],
    names,
    task: false,
    lockFree: FIREWALL_LOCK_FREE,
    effect: (env) => {
      const alias = env.sim.firewall(vmid)?.aliases.gateway;
      return alias?.cidr === "10.0.0.2" && alias?.comment === "router"
        ? []
        : [`succeeded but the alias is ${JSON.stringify(alias)}`];
    },
    truth: truth(type, vmid),
  };
}
