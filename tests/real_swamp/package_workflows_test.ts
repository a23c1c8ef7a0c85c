/**
 * The package's own workflows (js/workflows/, installed with the package) through the real swamp
 * CLI against the simulator: fleet-power, vm-from-cloud-image, backup-verify and drift-check (with
 * its schedule overridden in `.swamp/serve.yaml`). provision-vm and provision-ct run in
 * recipes_test.ts, which docs/recipes.md points to.
 *
 * @module
 */
import assert from "node:assert/strict";
import { extraGuest, withRealSwamp } from "./fixture.ts";
import { demoGuests } from "../../simulator/demo_cluster.ts";
import {
  DOWNLOAD_STORAGES,
  hexDigest,
  imageBytes,
  startImageServer,
} from "../../simulator/image_server.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

function stepStatuses(
  run: { jobs: { steps: { name: string; status: string }[] }[] },
) {
  return Object.fromEntries(
    run.jobs.flatMap((j) => j.steps).map((s) => [s.name, s.status]),
  );
}

/** `--input` flags: strings as they are, anything else as JSON (`key:json=…`). */
function inputs(values: Record<string, unknown>): string[] {
  return Object.entries(values).flatMap(([k, v]) => [
    "--input",
    typeof v === "string" ? `${k}=${v}` : `${k}:json=${JSON.stringify(v)}`,
  ]);
}

const run = (name: string, values: Record<string, unknown>) => [
  "workflow",
  "run",
  `@stateless/proxmox/${name}`,
  ...inputs({ model: "fleet", ...values }),
];

Deno.test(
  "workflow fleet-power: start starts every guest with the tag, one step per guest",
  opts,
  async () => {
    const guests = [
      ...demoGuests(),
      extraGuest({ vmid: 120, name: "web-a", tags: ["swamp", "web"] }),
      extraGuest({ vmid: 121, node: "pve2", name: "web-b", tags: ["web"] }),
      extraGuest({ vmid: 122, name: "db-a", tags: ["swamp", "db"] }),
    ];
    await withRealSwamp({ guests }, async (env) => {
      const r = await env.cli.json(
        run("fleet-power", { tag: "web", action: "start" }),
      );
      assert.equal(r.json.status, "succeeded");
      assert.deepEqual(stepStatuses(r.json), {
        sync: "succeeded",
        "start-120": "succeeded",
        "start-121": "succeeded",
      });
      assert.equal(env.sim.guest(120)?.status, "running");
      assert.equal(env.sim.guest(121)?.status, "running");
      assert.equal(env.sim.guest(122)?.status, "stopped");
    });
  },
);

Deno.test(
  "workflow vm-from-cloud-image: downloaded with PVE's checksum check, created from the image, started, ready",
  opts,
  async () => {
    const image = imageBytes(300_000);
    const images = startImageServer({ "/cloud.qcow2": image });
    try {
      await withRealSwamp(
        { sim: { storages: DOWNLOAD_STORAGES } },
        async (env) => {
          const r = await env.cli.json(run("vm-from-cloud-image", {
            url: images.url("/cloud.qcow2"),
            filename: "cloud.qcow2",
            checksum: hexDigest("sha256", image),
            name: "from-image",
            vmidRange: { min: 400, max: 499 },
            ipv4: false,
            readyTimeoutSec: 30,
          }));
          assert.equal(r.json.status, "succeeded");
          assert.deepEqual(stepStatuses(r.json), {
            download: "succeeded",
            create: "succeeded",
            ready: "succeeded",
          });
          const vm = env.sim.guest(400);
          assert.equal(vm?.status, "running");
          assert.match(String(vm?.config.virtio0), /^local-lvm:vm-400-disk-0/);
          const records = await env.cli.latest('modelName == "fleet"');
          assert.equal(
            records.get("volume-local-cloud.qcow2")?.checksumVerified,
            true,
          );
        },
      );
    } finally {
      await images.close();
    }
  },
);

/** VM 120 with its agent up, to back up. */
const source = () =>
  extraGuest({
    vmid: 120,
    status: "running",
    config: {
      agent: 1,
      scsi0: "local-lvm:vm-120-disk-0,size=8G",
      net0: "virtio=BC:24:11:00:01:20,bridge=vmbr0",
    },
  });

Deno.test(
  "workflow backup-verify: backup, restore to the scratch VMID, start, check, delete the scratch",
  opts,
  async () => {
    await withRealSwamp(
      { guests: [...demoGuests(), source()] },
      async (env) => {
        const r = await env.cli.json(run("backup-verify", {
          vmid: 120,
          storage: "local",
          scratchVmid: 930,
          readyTimeoutSec: 30,
        }));
        assert.equal(r.json.status, "succeeded");
        assert.deepEqual(stepStatuses(r.json), {
          backup: "succeeded",
          restore: "succeeded",
          start: "succeeded",
          check: "succeeded",
          "delete-scratch": "succeeded",
        });
        assert.equal(env.sim.guest(930), undefined, "the scratch is gone");
        const records = await env.cli.latest('modelName == "fleet"');
        assert.equal(records.get("vm-930-exec")?.exitCode, 0);
      },
    );
  },
);

Deno.test(
  "workflow backup-verify: a failed check fails the run and the scratch is still deleted",
  opts,
  async () => {
    await withRealSwamp(
      { guests: [...demoGuests(), source()] },
      async (env) => {
        const r = await env.cli.json(
          run("backup-verify", {
            vmid: 120,
            storage: "local",
            scratchVmid: 930,
            readyTimeoutSec: 30,
            check: ["sh", "-c", "exit 1"],
          }),
          1,
        );
        assert.equal(r.json.status, "failed");
        const statuses = stepStatuses(r.json);
        assert.equal(statuses.check, "failed");
        assert.equal(statuses["delete-scratch"], "succeeded");
        assert.equal(env.sim.guest(930), undefined);
      },
    );
  },
);

Deno.test(
  "workflow drift-check: the assert passes when guests are as declared and names those that differ",
  opts,
  async () => {
    await withRealSwamp({}, async (env) => {
      const ok = await env.cli.json(run("drift-check", {
        declared: [{ vmid: 100, status: "running", node: "pve1" }],
      }));
      assert.equal(ok.json.status, "succeeded");
      const r = await env.cli.json(
        run("drift-check", {
          declared: [
            { vmid: 100, status: "running" },
            { vmid: 101, status: "stopped" },
            { vmid: 777, status: "running" },
          ],
        }),
        1,
      );
      assert.equal(r.json.status, "failed");
      const step = r.json.jobs.flatMap((j: { steps: unknown[] }) => j.steps)
        .find((s: { name: string }) => s.name === "as-declared");
      assert.equal(step.status, "failed");
      assert.equal(
        step.assertResult.message,
        "guests that differ from the declared state: 101,777",
      );
    });
  },
);

Deno.test(
  "workflow drift-check: hourly by default; serve.yaml overrides the schedule and supplies the inputs",
  opts,
  async () => {
    await withRealSwamp({ type: null }, async (env) => {
      const name = "@stateless/proxmox/drift-check";
      const before = await env.cli.json(["workflow", "trigger", "get", name]);
      assert.equal(before.json.effective.schedule, "0 * * * *");
      await env.cli.json([
        "workflow",
        "trigger",
        "set",
        name,
        "--schedule",
        "*/15 * * * *",
        "--input",
        "model=pve-east",
      ]);
      const serve = await env.cli.read(".swamp/serve.yaml");
      assert.match(serve, /\*\/15 \* \* \* \*/);
      const after = await env.cli.json(["workflow", "trigger", "get", name]);
      assert.equal(after.json.effective.schedule, "*/15 * * * *");
      assert.deepEqual(after.json.effective.inputs, { model: "pve-east" });
    });
  },
);
