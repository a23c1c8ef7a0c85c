/**
 * The workflow recipes, run as written through the real swamp CLI against the simulator:
 * docs/recipes.md's (read out of it) and the package's own provisioning workflows (js/workflows/,
 * installed with the package), which that page points to.
 *
 * @module
 */
import assert from "node:assert/strict";
import { withRealSwamp } from "./fixture.ts";
import { definitionPerGuest, writeRecipe } from "./recipes.ts";
import { demoGuests } from "../../simulator/demo_cluster.ts";
import type { SimGuest } from "../../simulator/types.ts";
import { PVESH_TOKEN, type SshNode, startSshNode } from "../ssh/node.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const VMIDS = [100, 101];
const VMIDS_INPUT = `vmids:json=${JSON.stringify(VMIDS)}`;

function stepStatuses(
  run: { jobs: { steps: { name: string; status: string }[] }[] },
) {
  return Object.fromEntries(
    run.jobs.flatMap((j) => j.steps).map((s) => [s.name, s.status]),
  );
}

Deno.test(
  "recipe fleet-one-definition: guestExec runs on every listed guest through one definition",
  opts,
  async () => {
    await withRealSwamp({}, async (env) => {
      await writeRecipe(env, "fleet-one-definition");
      const r = await env.cli.json([
        "workflow",
        "run",
        "fleet-one-definition",
        "--input",
        VMIDS_INPUT,
      ]);
      assert.equal(r.json.status, "succeeded");
      assert.deepEqual(stepStatuses(r.json), {
        "uptime-100": "succeeded",
        "uptime-101": "succeeded",
      });
      const execs = await env.cli.latest(
        'modelName == "fleet" && specName == "exec"',
      );
      assert.deepEqual(VMIDS.map((v) => execs.get(`vm-${v}-exec`)?.exitCode), [
        0,
        0,
      ]);
    });
  },
);

Deno.test(
  "recipe fleet-per-guest: each guest's step runs on its own definition",
  opts,
  async () => {
    await withRealSwamp({ type: null }, async (env) => {
      await definitionPerGuest(env, VMIDS);
      await writeRecipe(env, "fleet-per-guest");
      const r = await env.cli.json([
        "workflow",
        "run",
        "fleet-per-guest",
        "--input",
        VMIDS_INPUT,
      ]);
      assert.equal(r.json.status, "succeeded");
      for (const vmid of VMIDS) {
        const execs = await env.cli.latest(`modelName == "guest-${vmid}"`);
        assert.equal(
          execs.get(`vm-${vmid}-exec`)?.exitCode,
          0,
          `guest-${vmid}`,
        );
      }
    });
  },
);

Deno.test(
  "recipe exit-code-asserts: --junit lists the assert on the recorded exit code as passed",
  opts,
  async () => {
    await withRealSwamp({}, async (env) => {
      await writeRecipe(env, "exit-code-asserts");
      const r = await env.cli.run(
        "workflow",
        "run",
        "exit-code-asserts",
        "--junit",
      );
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /<testcase[^>]*name="os-release-exits-0"/);
      assert.doesNotMatch(r.stdout, /<failure/);
    });
  },
);

Deno.test(
  "recipe exit-code-asserts: a non-zero exit fails the run at the assert, which --junit reports with the code",
  opts,
  async () => {
    await withRealSwamp({}, async (env) => {
      await writeRecipe(env, "exit-code-asserts", (t) =>
        t.replace(
          'command: ["test", "-f", "/etc/os-release"]',
          'command: ["sh", "-c", "exit 3"]',
        ));
      const r = await env.cli.run(
        "workflow",
        "run",
        "exit-code-asserts",
        "--junit",
      );
      assert.equal(r.code, 1);
      assert.match(r.stdout, /<failure[^>]*>?[\s\S]*exited 3/);
    });
  },
);

/** A cloud-init template for the provisioning recipe: agent, a cloud-init drive, one NIC. */
const CLOUD_TEMPLATE: SimGuest = {
  vmid: 9000,
  node: "pve1",
  type: "qemu",
  name: "debian-cloud",
  status: "stopped",
  agent: "running",
  tags: ["swamp"],
  config: {
    template: 1,
    agent: 1,
    memory: 2048,
    scsi0: "local-lvm:base-9000-disk-0,size=8G",
    ide2: "local-lvm:vm-9000-cloudinit,media=cdrom",
    net0: "virtio=BC:24:11:90:00:00,bridge=vmbr0",
  },
};

/** The VMID the recipe's clone claimed in 200–299: the `vm-<n>` record named web1. */
function claimed(records: Map<string, Record<string, unknown>>): number {
  const found = [...records].find(([name, rec]) =>
    /^vm-\d+$/.test(name) && rec.name === "web1"
  );
  assert.ok(found, `no vm-<n> record named web1: ${[...records.keys()]}`);
  const vmid = Number(found[0].slice(3));
  assert.ok(vmid >= 200 && vmid <= 299, `VMID ${vmid} in the range`);
  return vmid;
}

/** The package's provision-vm on the `fleet` definition: template 9000 into 200–299, memory changed. */
const provisionInputs = (change: string[]) => [
  "--input",
  "model=fleet",
  "--input",
  "templateId=9000",
  "--input",
  "name=web1",
  "--input",
  'vmidRange:json={"min":200,"max":299}',
  "--input",
  "sshKey=ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOpsRecipeKey ops@example",
  "--input",
  "ipconfig0=ip=10.0.0.41/24,gw=10.0.0.1",
  "--input",
  'config:json={"memory":4096}',
  "--input",
  `change:json=${JSON.stringify(change)}`,
];

Deno.test(
  "workflow provision-vm: clone, cloud-init, ready, checked, snapshot; a failed change is rolled back by its own job",
  opts,
  async () => {
    await withRealSwamp(
      { guests: [...demoGuests(), CLOUD_TEMPLATE] },
      async (env) => {
        const r = await env.cli.json(
          [
            "workflow",
            "run",
            "@stateless/proxmox/provision-vm",
            ...provisionInputs(["sh", "-c", "exit 3"]),
          ],
          1,
        );
        assert.equal(r.json.status, "failed", "the change failed");
        assert.deepEqual(stepStatuses(r.json), {
          clone: "succeeded",
          "cloud-init": "succeeded",
          start: "succeeded",
          check: "succeeded",
          "pre-change": "succeeded",
          config: "succeeded",
          command: "failed",
          "to-pre-change": "succeeded",
        });
        const records = await env.cli.latest('modelName == "fleet"');
        const vmid = claimed(records);
        const vm = env.sim.guest(vmid);
        assert.equal(vm?.status, "running", "rolled back, then started");
        assert.equal(vm?.config.memory, 2048, "the change undone");
        assert.equal(records.get(`vm-${vmid}-ready`)?.ipv4, "10.0.0.41");
        assert.equal(records.get(`vm-${vmid}-exec`)?.exitCode, 3);
        assert.equal(
          records.get(`vm-${vmid}-snapshots`)?.currentParent,
          "pre-change",
        );
      },
    );
  },
);

Deno.test(
  "workflow provision-vm: a change that succeeds leaves the rollback job skipped",
  opts,
  async () => {
    await withRealSwamp(
      { guests: [...demoGuests(), CLOUD_TEMPLATE] },
      async (env) => {
        const r = await env.cli.json([
          "workflow",
          "run",
          "@stateless/proxmox/provision-vm",
          ...provisionInputs(["true"]),
        ]);
        assert.equal(r.json.status, "succeeded");
        const statuses = stepStatuses(r.json);
        assert.equal(statuses.command, "succeeded");
        assert.notEqual(statuses["to-pre-change"], "succeeded");
        const records = await env.cli.latest('modelName == "fleet"');
        const vm = env.sim.guest(claimed(records));
        assert.equal(String(vm?.config.memory), "4096", "the change kept");
      },
    );
  },
);

/** `--global-arg` flags of an lxc definition reaching the simulator through `ssh`'s pvesh and pct. */
function sshGlobalArgs(name: string, ssh: SshNode): string[] {
  const flat: Record<string, unknown> = { name, pollIntervalSec: 1 };
  for (const [k, v] of Object.entries(ssh.transport())) {
    flat[`transport.${k}`] = v;
  }
  // Numbers go as JSON (`key:json=5`): a plain value is a string to swamp.
  return Object.entries(flat).flatMap(([k, v]) => [
    "--global-arg",
    typeof v === "number" ? `${k}:json=${v}` : `${k}=${v}`,
  ]);
}

/** The VMID the container recipe's create claimed in 300–399: the `ct-<n>` record named web-ct1. */
function claimedCt(records: Map<string, Record<string, unknown>>): number {
  const found = [...records].find(([name, rec]) =>
    /^ct-\d+$/.test(name) && rec.name === "web-ct1"
  );
  assert.ok(found, `no ct-<n> record named web-ct1: ${[...records.keys()]}`);
  const vmid = Number(found[0].slice(3));
  assert.ok(vmid >= 300 && vmid <= 399, `VMID ${vmid} in the range`);
  return vmid;
}

Deno.test(
  "workflow provision-ct: create, start with its address, checked, snapshot; a failed change is rolled back by its own job",
  opts,
  async () => {
    await withRealSwamp(
      { type: null, tokens: [PVESH_TOKEN] },
      async (env) => {
        const ssh = await startSshNode(env.sim.url);
        try {
          await env.cli.json([
            "model",
            "create",
            "@stateless/proxmox/lxc",
            "containers",
            ...sshGlobalArgs("containers", ssh),
          ]);
          const r = await env.cli.json(
            [
              "workflow",
              "run",
              "@stateless/proxmox/provision-ct",
              "--input",
              "model=containers",
              "--input",
              "ostemplate=local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst",
              "--input",
              "hostname=web-ct1",
              "--input",
              'vmidRange:json={"min":300,"max":399}',
              "--input",
              "sshKey=ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOpsRecipeKey ops@example",
              "--input",
              "net0=name=eth0,bridge=vmbr0,ip=10.0.0.51/24,gw=10.0.0.1",
              "--input",
              'config:json={"memory":1024}',
              "--input",
              'change:json=["sh","-c","exit 3"]',
            ],
            1,
          );
          assert.equal(r.json.status, "failed", "the change failed");
          assert.deepEqual(stepStatuses(r.json), {
            create: "succeeded",
            start: "succeeded",
            check: "succeeded",
            "pre-change": "succeeded",
            config: "succeeded",
            command: "failed",
            "to-pre-change": "succeeded",
          });
          const records = await env.cli.latest('modelName == "containers"');
          const vmid = claimedCt(records);
          const ct = env.sim.guest(vmid);
          assert.equal(ct?.status, "running", "rolled back, then started");
          assert.notEqual(
            String(ct?.config.memory),
            "1024",
            "the change undone",
          );
          assert.equal(records.get(`ct-${vmid}-exec`)?.exitCode, 3);
          assert.equal(
            records.get(`ct-${vmid}-snapshots`)?.currentParent,
            "pre-change",
          );
        } finally {
          await ssh.close();
        }
      },
    );
  },
);
