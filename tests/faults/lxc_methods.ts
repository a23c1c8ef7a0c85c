/**
 * The per-method table of the fault matrix for the lxc model: for every method of
 * `@stateless/proxmox/lxc`, valid arguments, the requests it sends (in order, with the phase a
 * repeated request is in), and the oracles that decide whether a verdict told the truth. Agent
 * faults do not apply: a container has no guest agent.
 *
 * @module
 */
import type { RunResult } from "../../harness/types.ts";
import type { Env } from "../e2e/env.ts";
import { downloadSpec } from "./download_rows.ts";
import { container, TEMPLATE } from "../e2e/lxc_fixture.ts";
import { backupSpecs } from "./backup_rows.ts";
import { demoGuests } from "../../simulator/demo_cluster.ts";
import type { SimGuest } from "../../simulator/types.ts";
import {
  config,
  CT_LOCKED,
  deleteSpec,
  type Endpoint,
  findIt,
  flaggedOn,
  guestPath,
  lastWrite,
  type MethodSpec,
  methodSpecs,
  nextid,
  other,
  powerSpec,
  QUORUM,
  READ_LOCK_FREE,
  readBackDecides,
  rebootSpec,
  resources,
  type RowSpec,
  type Snapshot,
  status,
  statusObserved,
  taskStatus,
  templateSpec,
  version,
  type Where,
  writesOnly,
} from "./methods.ts";
import { resumeSpec, suspendSpec, waitTaskSpec } from "./power_rows.ts";
import { removeNicSpec, setNicSpec } from "./nic_rows.ts";
import { attachDiskSpec, detachDiskSpec, moveDiskSpec } from "./disk_rows.ts";
import {
  firewallAliasSpec,
  firewallIpsetSpec,
  firewallOptionsSpec,
  firewallRulesSpec,
} from "./firewall_rows.ts";
import {
  haGroupSpec,
  haResourceSpec,
  haRuleSpec,
  haStatusSpec,
} from "./ha_rows.ts";
import { migrateSpec } from "./migrate_rows.ts";
import { preflightSpec } from "./preflight_rows.ts";
import { snapshotSpecs } from "./snapshot_rows.ts";

/**
 * The lxc matrix's cluster: the demo guests (VMs 100… and container 200), a stopped and a running
 * managed container on each node (320/322 on pve1, 321/323 on pve2).
 */
export function lxcFleet(): SimGuest[] {
  return [
    ...demoGuests(),
    container(320, { name: "ct320" }),
    container(322, { name: "ct322", status: "running" }),
    container(321, { name: "ct321", node: "pve2" }),
    container(323, { name: "ct323", node: "pve2", status: "running" }),
  ];
}

type Rec = Record<string, unknown>;

/** Every method of the lxc model the matrix knows, with its containers on `where`. */
export function lxcMethodSpecs(where: Where = "pve1"): MethodSpec[] {
  const n = where;
  const stopped = where === "pve1" ? 320 : 321;
  const running = where === "pve1" ? 322 : 323;
  const label = (vmid: number) => new RegExp(`CT ${vmid}|${vmid}`);
  const st = (vmid: number, phase = "", skip = 0) =>
    status(n, vmid, phase, skip, "lxc");
  const cfg = (vmid: number, phase = "", skip = 0) =>
    config(n, vmid, phase, skip, "lxc");
  const ct = (
    spec: Omit<MethodSpec, "model" | "row">,
    row = spec.name,
  ): MethodSpec => ({ ...spec, model: "lxc", row: `lxc ${row}` });

  const lookup = ct({
    name: "lookup",
    args: { vmid: running },
    endpoints: [...findIt(n, running, st(running)), st(running), cfg(running)],
    names: label(running),
    task: false,
    lockFree: READ_LOCK_FREE,
    effect: (env, r) => {
      const rec = lastWrite(r, `ct-${running}`);
      const g = env.sim.guest(running);
      return rec?.status === g?.status && rec?.node === n &&
          rec?.present === true
        ? []
        : [`ct-${running} ${JSON.stringify(rec)} does not match the container`];
    },
    truth: (env, r, before) => [
      ...writesOnly(r, new RegExp(`^ct-${running}$`)),
      ...(r.status === "failed" && r.written.length > 0
        ? ["a failed lookup wrote a record"]
        : []),
      ...statusObserved(env, r, before, running, "ct"),
    ],
  });

  const start = ct(
    powerSpec(
      n,
      "lxc",
      "start",
      stopped,
      "running",
      { vmid: stopped },
      label(stopped),
    ),
  );
  const stop = ct(
    powerSpec(
      n,
      "lxc",
      "stop",
      running,
      "stopped",
      { vmid: running },
      label(running),
    ),
  );
  const shutdown = ct(powerSpec(
    n,
    "lxc",
    "shutdown",
    running,
    "stopped",
    { vmid: running, timeoutSec: 2 },
    label(running),
    // The container's state decides: an unobserved task end leaves timeoutSec to see it stop.
    flaggedOn(
      "the task's end was not observed, but the container was seen stopped; the record warns that only the state decided",
    ),
  ));

  const del = ct(deleteSpec(n, "lxc", stopped, label(stopped)));

  const setConfig = ct({
    name: "setConfig",
    args: { vmid: stopped, config: { memory: 1024 } },
    endpoints: [
      version,
      ...findIt(n, stopped, st(stopped)),
      st(stopped),
      cfg(stopped),
      {
        id: "PUT config",
        method: "PUT",
        path: guestPath(n, stopped, "/config", "lxc"),
        sample: `/nodes/${n}/lxc/${stopped}/config`,
        kind: "mutation",
        pve500: CT_LOCKED,
        privilege: `/vms/${stopped}, VM.Config.Memory`,
        expect: readBackDecides(/`memory` is neither applied nor pending/),
      },
      {
        id: "GET pending (read back)",
        method: "GET",
        path: guestPath(n, stopped, "/pending", "lxc"),
        sample: `/nodes/${n}/lxc/${stopped}/pending`,
        kind: "read",
        pve500: "got timeout",
        privilege: `/vms/${stopped}, VM.Audit`,
      },
    ],
    names: label(stopped),
    task: false,
    effect: (env) =>
      String(env.sim.guest(stopped)?.config.memory) === "1024"
        ? []
        : ["succeeded but memory is not 1024"],
    truth: (env, r, before) => {
      const problems = [
        ...writesOnly(r, new RegExp(`^ct-${stopped}$`)),
        ...statusObserved(env, r, before, stopped, "ct"),
      ];
      const pending = lastWrite(r, `ct-${stopped}`)?.pending as
        | Rec
        | undefined;
      for (const key of Object.keys(pending ?? {})) {
        if (!(key in (env.sim.guest(stopped)?.pending ?? {}))) {
          problems.push(`records ${key} as pending, PVE holds no such change`);
        }
      }
      return problems;
    },
  });

  const resize = ct({
    name: "resize",
    args: { vmid: stopped, size: "+1G" },
    endpoints: [
      version,
      ...findIt(n, stopped, st(stopped, " (before)")),
      st(stopped, " (before)"),
      cfg(stopped, " (identity)"),
      cfg(stopped, " (size before)", 1),
      {
        id: "PUT resize",
        method: "PUT",
        path: guestPath(n, stopped, "/resize", "lxc"),
        sample: `/nodes/${n}/lxc/${stopped}/resize`,
        kind: "mutation",
        pve500: CT_LOCKED,
        privilege: `/vms/${stopped}, VM.Config.Disk`,
      },
      taskStatus(n, "resize"),
      cfg(stopped, " (size after)", 2),
      {
        ...st(stopped, " (record after)", 1),
        // The refresh only feeds the record: a failed read keeps the earlier state, as a warning.
        expect: flaggedOn(
          "the volume reached its size; the record keeps the earlier state with a warning",
        ),
      },
    ],
    names: label(stopped),
    task: true,
    leftLock: "backup",
    effect: (env) =>
      /size=9G/.test(String(env.sim.guest(stopped)?.config.rootfs))
        ? []
        : [`succeeded but rootfs is ${env.sim.guest(stopped)?.config.rootfs}`],
    truth: (env, r, before) => [
      ...writesOnly(r, new RegExp(`^ct-${stopped}$`)),
      ...statusObserved(env, r, before, stopped, "ct"),
    ],
  });

  const pendingRead: Endpoint = {
    id: "GET pending",
    method: "GET",
    path: guestPath(n, stopped, "/pending", "lxc"),
    sample: `/nodes/${n}/lxc/${stopped}/pending`,
    kind: "read",
    pve500: "got timeout",
    privilege: `/vms/${stopped}, VM.Audit`,
  };
  const getConfig = ct({
    name: "getConfig",
    args: { vmid: stopped },
    endpoints: [...findIt(n, stopped, pendingRead), pendingRead],
    names: label(stopped),
    task: false,
    lockFree: READ_LOCK_FREE,
    effect: (env, r) => {
      const rec = lastWrite(r, `ct-${stopped}-config`);
      const c = rec?.config as Rec | undefined;
      return String(c?.memory) === String(env.sim.guest(stopped)?.config.memory)
        ? []
        : [`config record ${JSON.stringify(rec)} does not match`];
    },
    truth: (_env, r) => [
      ...writesOnly(r, new RegExp(`^ct-${stopped}-config$`)),
      ...(r.status === "failed" && r.written.length > 0
        ? ["a failed getConfig wrote a record"]
        : []),
    ],
  });

  const syncTruth = (env: Env, r: RunResult, before: Snapshot): string[] => {
    const problems: string[] = [];
    for (const w of r.written) {
      const vmid = Number(/^ct-(\d+)$/.exec(w.instance)?.[1]);
      if (!vmid) {
        problems.push(`unexpected record ${w.instance}`);
        continue;
      }
      problems.push(...statusObserved(env, r, before, vmid, "ct"));
      const rec = w.data as Rec;
      if (rec.present === false && env.sim.guest(vmid)) {
        problems.push(`records CT ${vmid} absent, but it exists`);
      }
    }
    return problems;
  };
  const syncEffect = (nodes: string[]) => (env: Env, r: RunResult) => {
    const problems: string[] = [];
    for (const vmid of [200, 320, 321, 322, 323]) {
      const g = env.sim.guest(vmid);
      if (!g || !nodes.includes(g.node)) continue;
      const rec = lastWrite(r, `ct-${vmid}`);
      if (rec?.status !== g.status) {
        problems.push(
          `ct-${vmid} is ${rec?.status}, the container ${g.status}`,
        );
      }
    }
    return problems;
  };
  const nodeList = (node: string): Endpoint => ({
    id: `GET /nodes/${node === n ? "<node>" : node}/lxc`,
    method: "GET",
    path: `^/api2/json/nodes/${node}/lxc$`,
    sample: `/nodes/${node}/lxc`,
    kind: "read",
    pve500: "got timeout",
    privilege: `/nodes/${node}, Sys.Audit`,
  });
  const sync = where === "pve1"
    ? ct({
      name: "sync",
      args: { scope: "node" },
      endpoints: [
        nodeList(n),
        {
          ...cfg(200, " (identity of a renamed container)"),
          path: `^/api2/json/nodes/${n}/lxc/\\d+/config$`,
          // sync reads a config only when a cheap signal says the VMID may hold another guest:
          // container 200 was recorded (with its identity) under another name.
          prepare: async (env) => {
            const r = await env.run("lookup", { vmid: 200 });
            if (r.status !== "succeeded") throw new Error(r.error);
            env.sim.setGuest(200, { name: "ct-renamed" });
          },
          expect: {
            ...flaggedOn(
              "state read from the list; the container's record says its identity was not checked",
            ),
            // A container carries no identity (no smbios uuid): even the retried read that
            // succeeds leaves the record warning that the VMID may have been reused.
            ...Object.fromEntries(
              (["reset", "hang", "html"] as const).map((f) => [f, {
                verdict: "ok-flagged" as const,
                note:
                  "retried and read; a container holds no identity to compare, so the record warns the VMID may have been reused (as without a fault)",
              }]),
            ),
          },
        },
      ],
      names: new RegExp(`node ${n}`),
      task: false,
      effect: syncEffect([n]),
      truth: syncTruth,
    }, "sync (node)")
    : ct({
      name: "sync",
      args: { scope: "cluster" },
      endpoints: [
        {
          id: "GET /nodes",
          method: "GET",
          path: "^/api2/json/nodes$",
          sample: "/nodes",
          kind: "read",
          pve500: QUORUM,
          privilege: "/, Sys.Audit",
        },
        nodeList("pve2"),
      ],
      names: /node pve2|nodes/,
      task: false,
      effect: syncEffect(["pve1", "pve2"]),
      truth: syncTruth,
    }, "sync (cluster)");

  // The node reads are the qemu model's (shared by both models): the same requests and records.
  const shared = methodSpecs(where);
  const nodeRead = (name: string) => {
    const spec = shared.find((s) => s.name === name);
    if (!spec) throw new Error(`no ${name} spec`);
    return ct(spec);
  };

  const specs: MethodSpec[] = [
    lookup,
    sync,
    setConfig,
    ct(setNicSpec(n, "lxc", stopped, label(stopped))),
    ct(removeNicSpec(n, "lxc", stopped, label(stopped))),
    resize,
    ct(moveDiskSpec(n, "lxc", stopped, label(stopped))),
    ct(attachDiskSpec(n, "lxc", stopped, label(stopped))),
    ct(detachDiskSpec(n, "lxc", stopped, label(stopped))),
    ct(firewallOptionsSpec(n, "lxc", stopped, label(stopped))),
    ct(firewallRulesSpec(n, "lxc", stopped, label(stopped))),
    ct(firewallIpsetSpec(n, "lxc", stopped, label(stopped))),
    ct(firewallAliasSpec(n, "lxc", stopped, label(stopped))),
    ct(haResourceSpec(n, "lxc", stopped, label(stopped))),
    ct(haStatusSpec(n, "lxc", stopped, label(stopped))),
    ct(haRuleSpec(n, "lxc", stopped, label(stopped))),
    ct(haGroupSpec(n, "lxc", stopped, label(stopped)), "haRule (PVE 8)"),
    start,
    stop,
    shutdown,
    del,
    getConfig,
    nodeRead("nodeStatus"),
    nodeRead("nodeConfig"),
    ...snapshotSpecs(n, "lxc", stopped, label(stopped)).map((spec) => ct(spec)),
    ct(migrateSpec(n, other(n), "lxc", stopped, label(stopped))),
    ct(templateSpec(n, "lxc", stopped, label(stopped))),
    ct(rebootSpec(n, "lxc", running, label(running))),
    ct(suspendSpec(n, "lxc", running, label(running))),
    ct(resumeSpec(n, "lxc", running, label(running))),
    ct(waitTaskSpec(n, "lxc", stopped)),
    ...backupSpecs(n, "lxc", stopped, label(stopped)).map((spec) => ct(spec)),
  ];
  if (where === "pve1") {
    // What the token may do is the API node's to say: no pve2 twin, no node scenarios.
    specs.push(ct(preflightSpec("lxc", running)));
    // create works on the transport's node only: no pve2 twin, no node scenarios.
    specs.splice(2, 0, create());
    // pct exec runs on the node the ssh transport reaches: no pve2 twin either.
    specs.push(ct(containerExecSpec(running, label(running))));
    // A download lands on the transport's node: no pve2 twin either.
    specs.push(ct(downloadSpec("lxc")));
  }
  return specs;
}

const NEW_CT = 400;
const NET0 = "name=eth0,bridge=vmbr0,ip=10.0.0.40/24,gw=10.0.0.1";

function create(): MethodSpec {
  const n = "pve1";
  const nodeRead = (
    path: string,
    id: string,
    privilege: string,
  ): Endpoint => ({
    id: `GET ${id}`,
    method: "GET",
    path: `^/api2/json/nodes/${n}/${path}$`,
    sample: `/nodes/${n}/${path}`,
    kind: "read",
    pve500: "got timeout",
    privilege,
  });
  return {
    model: "lxc",
    name: "create",
    row: "lxc create",
    args: {
      vmid: NEW_CT,
      ostemplate: TEMPLATE,
      hostname: "new-ct",
      storage: "local-lvm",
      config: { net0: NET0 },
    },
    endpoints: [
      version,
      nextid(" (is the VMID free?)"),
      nodeRead("storage", "/nodes/<node>/storage", `/nodes/${n}, Sys.Audit`),
      nodeRead(
        "storage/local/content",
        "/nodes/<node>/storage/local/content (the template)",
        "/storage/local, Datastore.Audit",
      ),
      nodeRead("network", "/nodes/<node>/network", `/nodes/${n}, Sys.Audit`),
      {
        id: "POST /nodes/<node>/lxc",
        method: "POST",
        path: `^/api2/json/nodes/${n}/lxc$`,
        sample: `/nodes/${n}/lxc`,
        kind: "mutation",
        pve500: `unable to create CT ${NEW_CT} - CT ${NEW_CT} already exists`,
        privilege: `/vms/${NEW_CT}, VM.Allocate`,
        stores: {
          config: { net0: `${NET0},firewall=1` },
          happened: /`net0` is "[^"]*firewall=1", not the requested/,
        },
      },
      taskStatus(n, "vzcreate"),
      status(n, NEW_CT, " (the container)", 0, "lxc"),
      config(n, NEW_CT, " (the container)", 0, "lxc"),
    ],
    names: new RegExp(`container ${NEW_CT}|CT ${NEW_CT}|${NEW_CT}`),
    task: true,
    leftLock: "create",
    noEffect: /still locked: create/,
    effect: (env, r) => {
      const g = env.sim.guest(NEW_CT);
      const rec = lastWrite(r, `ct-${NEW_CT}`);
      return g?.name === "new-ct" && g.tags.includes("swamp") &&
          rec?.present === true && (rec.tags as string[]).includes("swamp")
        ? []
        : [
          `succeeded but CT ${NEW_CT} is ${JSON.stringify(g?.name)} ${
            JSON.stringify(g?.tags)
          }`,
        ];
    },
    truth: (env, r, before) => {
      const problems = [
        ...writesOnly(r, new RegExp(`^ct-${NEW_CT}$`)),
        ...statusObserved(env, r, before, NEW_CT, "ct"),
      ];
      const rec = lastWrite(r, `ct-${NEW_CT}`);
      if (rec?.present === true && !env.sim.guest(NEW_CT)) {
        problems.push("records a container that does not exist");
      }
      if (
        rec && Array.isArray(rec.tags) && rec.tags.includes("swamp") &&
        !env.sim.guest(NEW_CT)?.tags.includes("swamp")
      ) problems.push("records a swamp tag the container does not carry");
      return problems;
    },
  };
}

/** The lxc model's methods, in the matrix's order (a missing one is reported, never skipped). */
export const EXPECTED_LXC_METHODS = [
  "lookup",
  "sync",
  "create",
  "setConfig",
  "setNic",
  "removeNic",
  "resize",
  "moveDisk",
  "attachDisk",
  "detachDisk",
  "firewallOptions",
  "firewallRules",
  "firewallIpset",
  "firewallAlias",
  "haResource",
  "haStatus",
  "haRule",
  "start",
  "stop",
  "shutdown",
  "delete",
  "getConfig",
  "nodeStatus",
  "nodeConfig",
  "snapshot",
  "rollback",
  "deleteSnapshot",
  "listSnapshots",
  "migrate",
  "convertToTemplate",
  "reboot",
  "guestExec",
  "downloadUrl",
  "backup",
  "listBackups",
  "deleteBackup",
  "restore",
  "preflight",
  "suspend",
  "resume",
  "waitTask",
];

/** guestExec of a running container over ssh: `pct exec` on pve1, its output recorded. */
function containerExecSpec(vmid: number, names: RegExp): RowSpec {
  return {
    name: "guestExec",
    via: "ssh",
    faults: ["500", "403", "400", "shape"],
    args: { vmid, command: ["sh", "-c", "echo ok"], timeoutSec: 5 },
    lockFree:
      "a command inside the container: `pct exec` (PVE/CLI/pct.pm) checks that it runs, not the config lock",
    endpoints: [
      version,
      resources(),
      {
        ...status("pve1", vmid, "", 0, "lxc"),
        id: "GET status/current (is it running?)",
      },
    ],
    names,
    task: false,
    effect: (_env, r) => {
      const rec = lastWrite(r, `ct-${vmid}-exec`);
      return rec?.exitCode === 0 && rec?.stdout === "ok\n" &&
          rec?.accepted === true
        ? []
        : [`exec record ${JSON.stringify(rec)} is not the command's output`];
    },
    truth: (_env, r) => {
      const problems = writesOnly(r, new RegExp(`^ct-${vmid}-exec$`));
      const rec = lastWrite(r, `ct-${vmid}-exec`);
      if (
        r.status === "failed" && rec?.accepted !== undefined &&
        rec.accepted !== false
      ) {
        problems.push("failed but accepted");
      }
      return problems;
    },
  };
}
