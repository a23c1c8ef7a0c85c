/**
 * The package's methods through the real swamp CLI against the simulator: what swamp lists,
 * creates, runs and stores must match what the swamp-faithful harness promises.
 *
 * @module
 */
import assert from "node:assert/strict";
import { demoGuests } from "../../simulator/demo_cluster.ts";
import {
  assertLookupStoresVm100,
  extraGuest,
  runMethod,
  withRealSwamp,
} from "./fixture.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

Deno.test(
  "real swamp: model type search lists both models of the installed package",
  opts,
  async () => {
    await withRealSwamp({ type: null }, async ({ cli }) => {
      const r = await cli.json(["model", "type", "search", "proxmox"]);
      const types = r.json.results.map((t: { raw: string }) => t.raw).sort();
      assert.deepEqual(types, [
        "@stateless/proxmox/lxc",
        "@stateless/proxmox/qemu",
      ]);
    });
  },
);

Deno.test(
  "real swamp: model create writes a definition at the package's model version",
  opts,
  async () => {
    await withRealSwamp({}, async ({ cli }) => {
      const text = await cli.read("models/@stateless/proxmox/qemu/fleet.yaml");
      assert.match(text, /^type: '@stateless\/proxmox\/qemu'$/m);
      const { model } = await import("../../js/proxmox_qemu.ts");
      assert.match(text, new RegExp(`^typeVersion: ${model.version}$`, "m"));
      assert.match(text, /^\s+kind: api$/m);
    });
  },
);

Deno.test(
  "real swamp: lookup succeeds and stores the live state as vm-<vmid>",
  opts,
  async () => {
    await withRealSwamp({}, async (env) => {
      await assertLookupStoresVm100(env);
    });
  },
);

Deno.test(
  "real swamp: guestExec of exit 0 succeeds with exitCode 0 in its exec record",
  opts,
  async () => {
    await withRealSwamp({}, async (env) => {
      const r = await runMethod(env, "guestExec", {
        vmid: 100,
        command: ["sh", "-c", "echo hi; exit 0"],
      });
      assert.equal(r.json.status, "succeeded");
      const exec = r.json.dataArtifacts.find((a: { name: string }) =>
        a.name === "vm-100-exec"
      );
      assert.equal(exec.attributes.exitCode, 0);
      assert.equal(exec.attributes.stdout, "hi\n");
    });
  },
);

Deno.test(
  "real swamp: guestExec of exit 42 fails the run (exit status 1) and keeps the exec record",
  opts,
  async () => {
    await withRealSwamp({}, async (env) => {
      const { cli } = env;
      const r = await runMethod(env, "guestExec", {
        vmid: 100,
        command: ["sh", "-c", "exit 42"],
      }, 1);
      assert.equal(r.json.code, "method_execution_failed");
      assert.match(r.json.error, /exited with code 42/);
      const stored = await cli.latest(
        'modelName == "fleet" && name == "vm-100-exec"',
      );
      assert.equal(stored.get("vm-100-exec")?.exitCode, 42);
    });
  },
);

Deno.test(
  "real swamp: start of an HA guest whose request never applies fails, recording it still stopped",
  opts,
  async () => {
    const guests = [
      ...demoGuests(),
      extraGuest({
        ha: { managed: true, state: "stopped", neverApplies: true },
      }),
    ];
    await withRealSwamp(
      { guests, fleetArgs: { taskTimeoutSec: 2 } },
      async (env) => {
        const { cli } = env;
        const r = await runMethod(env, "start", { vmid: 120 }, 1);
        assert.match(r.json.error, /did not reach status running/);
        const stored = await cli.latest(
          'modelName == "fleet" && name == "vm-120"',
        );
        assert.equal(stored.get("vm-120")?.status, "stopped");
      },
    );
  },
);

Deno.test(
  "real swamp: a failed start keeps its task's log as a taskLog file swamp lists, the record naming it",
  opts,
  async () => {
    const guests = [...demoGuests(), extraGuest({})];
    await withRealSwamp({ guests }, async (env) => {
      const { cli } = env;
      env.sim.nextTask({ exitstatus: "start failed: QEMU exited with code 1" });
      const r = await runMethod(env, "start", { vmid: 120 }, 1);
      assert.match(r.json.error, /start failed: QEMU exited with code 1/);
      const stored = await cli.latest(
        'modelName == "fleet" && name == "vm-120"',
      );
      const name = String(stored.get("vm-120")?.lastTaskLog);
      assert.match(name, /^tasklog-pve1-[0-9A-F]+-[0-9A-F]+$/);
      const listed = await cli.json(["data", "list", "fleet"]);
      const files = listed.json.groups.find((g: { type: string }) =>
        g.type === "file"
      );
      assert.deepEqual(
        files?.items.map((f: { name: string; contentType: string }) => [
          f.name,
          f.contentType,
        ]),
        [[name, "text/plain"]],
      );
      const got = await cli.json(["data", "get", "fleet", name]);
      assert.equal(got.json.tags.specName, "taskLog");
      assert.equal(
        got.json.content,
        "TASK ERROR: start failed: QEMU exited with code 1\n",
      );
    });
  },
);

Deno.test(
  "real swamp: moveDisk of a running VM with delete stores the guest it observed, the disk on the target",
  opts,
  async () => {
    const config = {
      smbios1: "uuid=00000000-0000-4000-8000-000000000120",
      scsi0: "local-lvm:vm-120-disk-0,size=4G",
    };
    const guests = [
      ...demoGuests(),
      extraGuest({ status: "running", config }),
    ];
    await withRealSwamp({ guests }, async (env) => {
      const args = { vmid: 120, storage: "local-zfs", delete: true };
      const r = await runMethod(env, "moveDisk", args);
      assert.equal(r.json.status, "succeeded", JSON.stringify(r.json));
      const scsi0 = String(env.sim.guest(120)?.config.scsi0);
      assert.match(scsi0, /^local-zfs:vm-120-disk-\d+,/);
      assert.equal(env.sim.guest(120)?.config.unused0, undefined);
      const stored = await env.cli.latest(
        'modelName == "fleet" && name == "vm-120"',
      );
      assert.equal(stored.get("vm-120")?.lastOperation, "moveDisk");
      assert.equal(stored.get("vm-120")?.status, "running");
    });
  },
);

Deno.test(
  "real swamp: firewallIpset and firewallAlias declare a VM's IP set and alias and store the guest they observed",
  opts,
  async () => {
    await withRealSwamp({}, async (env) => {
      const set = {
        vmid: 100,
        name: "web",
        cidrs: [{ cidr: "10.0.0.0/8" }, { cidr: "fd00::/8", nomatch: true }],
      };
      const r = await runMethod(env, "firewallIpset", set);
      assert.equal(r.json.status, "succeeded", JSON.stringify(r.json));
      const entries = env.sim.firewall(100)?.ipsets.web ?? [];
      assert.deepEqual(entries.map((e) => e.cidr), ["10.0.0.0/8", "fd00::/8"]);
      const alias = { vmid: 100, name: "gateway", cidr: "10.0.0.1" };
      const a = await runMethod(env, "firewallAlias", alias);
      assert.equal(a.json.status, "succeeded", JSON.stringify(a.json));
      assert.equal(env.sim.firewall(100)?.aliases.gateway?.cidr, "10.0.0.1");
      const stored = await env.cli.latest(
        'modelName == "fleet" && name == "vm-100"',
      );
      assert.equal(stored.get("vm-100")?.lastOperation, "firewallAlias");
    });
  },
);

Deno.test(
  "real swamp: data query returns the latest record of each guest a sync wrote",
  opts,
  async () => {
    await withRealSwamp({}, async (env) => {
      const { cli } = env;
      await runMethod(env, "sync");
      const stored = await cli.latest(
        'modelName == "fleet" && specName == "guest"',
      );
      const onPve1 = demoGuests().filter((g) =>
        g.node === "pve1" && g.type === "qemu"
      );
      for (const g of onPve1) {
        const record = stored.get(`vm-${g.vmid}`);
        assert.ok(record, `vm-${g.vmid} stored`);
        assert.equal(record.status, g.status, `vm-${g.vmid} status`);
      }
    });
  },
);

Deno.test(
  "real swamp: every method run stores the method-observed report of what its records say",
  opts,
  async () => {
    await withRealSwamp({}, async (env) => {
      const { cli } = env;
      await runMethod(env, "lookup", { vmid: 102 });
      const r = await cli.json([
        "report",
        "get",
        "@stateless/proxmox/method-observed",
        "--model",
        "fleet",
      ]);
      assert.equal(r.json.json.verdict, "succeeded");
      assert.deepEqual(
        r.json.json.rows.map((row: { subject: string; observed: string }) => [
          row.subject,
          row.observed,
        ]),
        [["vm-102", "stopped"]],
      );
    });
  },
);

Deno.test(
  "real swamp: create takes its config as dotted --input keys (the main job's command line)",
  opts,
  async () => {
    await withRealSwamp({}, async (env) => {
      const r = await env.cli.json([
        "model",
        "method",
        "run",
        "fleet",
        "create",
        "--input",
        "vmid=130",
        "--input",
        "name=dotted",
        "--input",
        "config.virtio0=local-lvm:1",
        "--input",
        "config.net0=virtio,bridge=vmbr0",
      ]);
      assert.equal(r.json.status, "succeeded");
      const cfg = env.sim.guest(130)?.config;
      assert.match(String(cfg?.virtio0), /^local-lvm:vm-130-disk-0,size=1G$/);
      assert.match(String(cfg?.net0), /^virtio=[0-9A-F:]{17},bridge=vmbr0$/);
    });
  },
);

Deno.test(
  "real swamp: a log line quoting braces reaches the method's log file whole",
  opts,
  async () => {
    await withRealSwamp({}, async (env) => {
      await runMethod(env, "guestExec", {
        vmid: 100,
        command: ["sh", "-c", "echo '{a}'"],
      });
      const dir =
        `${env.cli.dir}/.swamp/outputs/@stateless/proxmox/qemu/guestExec`;
      const logs = [...Deno.readDirSync(dir)].filter((e) =>
        e.name.endsWith(".log")
      );
      assert.equal(logs.length, 1);
      const text = Deno.readTextFileSync(`${dir}/${logs[0].name}`);
      // LogTape reads `{a}` in a template as a placeholder: left there it would log `undefined`.
      assert.match(text, /started \["sh", "-c", "echo '\{a\}'"\]/);
      assert.doesNotMatch(text, /undefined/);
    });
  },
);

Deno.test(
  "real swamp: haResource succeeds once the HA manager shows the guest started, and haStatus records it",
  opts,
  async () => {
    const guests = [
      ...demoGuests(),
      extraGuest({
        ha: { managed: false, state: "stopped", applyDelayMs: 200 },
      }),
    ];
    await withRealSwamp({ guests }, async (env) => {
      const r = await runMethod(env, "haResource", {
        vmid: 120,
        state: "started",
      });
      assert.equal(r.json.status, "succeeded");
      assert.equal(env.sim.guest(120)?.status, "running");
      const s = await runMethod(env, "haStatus", { vmid: 120 });
      assert.equal(s.json.status, "succeeded");
      const record = s.json.dataArtifacts.find((a: { name: string }) =>
        a.name === "vm-120"
      );
      assert.equal(record.attributes.ha.managed, true);
      assert.equal(record.attributes.ha.crmState, "started");
    });
  },
);

Deno.test(
  "real swamp: haResource whose request the HA manager never applies fails",
  opts,
  async () => {
    const guests = [
      ...demoGuests(),
      extraGuest({
        ha: { managed: false, state: "stopped", neverApplies: true },
      }),
    ];
    await withRealSwamp(
      { guests, fleetArgs: { taskTimeoutSec: 2 } },
      async (env) => {
        const r = await runMethod(env, "haResource", { vmid: 120 }, 1);
        assert.match(r.json.error, /the HA manager did not apply it/);
      },
    );
  },
);

Deno.test(
  "real swamp: haRule makes a node-affinity rule naming the HA guest",
  opts,
  async () => {
    const guests = [
      ...demoGuests(),
      extraGuest({ ha: { managed: true, state: "stopped" } }),
    ];
    await withRealSwamp({ guests }, async (env) => {
      const r = await runMethod(env, "haRule", {
        vmid: 120,
        rule: "pin",
        type: "node-affinity",
        nodes: ["pve1"],
      });
      assert.equal(r.json.status, "succeeded");
    });
  },
);

Deno.test(
  "real swamp: haRule on PVE 8 makes the rule's HA group, set as the HA guest's group",
  opts,
  async () => {
    const guests = [
      ...demoGuests(),
      extraGuest({ ha: { managed: true, state: "stopped" } }),
    ];
    await withRealSwamp({ guests, sim: { pveVersion: 8 } }, async (env) => {
      const r = await runMethod(env, "haRule", {
        vmid: 120,
        rule: "pin",
        type: "node-affinity",
        nodes: ["pve1"],
      });
      assert.equal(r.json.status, "succeeded");
      assert.equal(env.sim.guest(120)?.ha?.group, "pin");
    });
  },
);
