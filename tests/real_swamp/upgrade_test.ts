/**
 * Upgrading a repository from the upstream `@stateless/proxmox` package, in real swamp: the upstream
 * package (`../shared/baseline/proxmox`, or `$UPSTREAM_PACKAGE`) creates the definitions and writes
 * the data store, then this package replaces it in `extensions/models/`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { demoGuests } from "../../simulator/demo_cluster.ts";
import { model as qemuModel } from "../../js/proxmox_qemu.ts";
import {
  extraGuest,
  OUR_PACKAGE,
  type RealSwamp,
  runMethod,
  withRealSwamp,
} from "./fixture.ts";
import { PROJECT_ROOT } from "./swamp_cli.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

const UPSTREAM = Deno.env.get("UPSTREAM_PACKAGE") ??
  join(PROJECT_ROOT, "../shared/baseline/proxmox");

/** The definition file of `name` (type `@stateless/proxmox/<model>`), parsed line by line. */
async function definition(env: RealSwamp, model: string, name: string) {
  const text = await env.cli.read(
    `models/@stateless/proxmox/${model}/${name}.yaml`,
  );
  const typeVersion = text.match(/^typeVersion: (\S+)$/m)?.[1];
  const globalArguments = text.slice(text.indexOf("globalArguments:"))
    .replace(/\nmethods:[\s\S]*$/, "").trim().split("\n");
  return { text, typeVersion, globalArguments };
}

const run = (env: RealSwamp, method: string, args = {}, expect = 0) =>
  runMethod(env, method, args, expect);

Deno.test(
  "upgrade: a qemu definition created by upstream 2026.06.10.1 moves to this version and its global arguments carry over",
  opts,
  async () => {
    await withRealSwamp({ packageDir: UPSTREAM }, async (env) => {
      const before = await definition(env, "qemu", "fleet");
      assert.equal(before.typeVersion, "2026.06.10.1");
      await run(env, "lookup", { vmid: 100 });

      await env.cli.install(OUR_PACKAGE);
      const r = await run(env, "lookup", { vmid: 100 });
      assert.equal(r.json.status, "succeeded");

      const after = await definition(env, "qemu", "fleet");
      assert.equal(after.typeVersion, qemuModel.version);
      // Every upstream line is still there, unchanged; the one new argument is added with its default.
      assert.deepEqual(
        after.globalArguments.filter((l) =>
          !before.globalArguments.includes(l)
        ),
        ["  requestTimeoutSec: 30"],
      );
      assert.deepEqual(
        before.globalArguments.filter((l) =>
          !after.globalArguments.includes(l)
        ),
        [],
      );
    });
  },
);

Deno.test(
  "upgrade: an lxc definition at upstream 2026.06.02.1 moves to this version and its methods run",
  opts,
  async () => {
    await withRealSwamp(
      { packageDir: UPSTREAM, type: "@stateless/proxmox/lxc" },
      async (env) => {
        const path = "models/@stateless/proxmox/lxc/fleet.yaml";
        const text = await env.cli.read(path);
        // A definition from before 2026.06.10.1: same shape, older typeVersion.
        await env.cli.write(
          path,
          text.replace(/^typeVersion: .*$/m, "typeVersion: 2026.06.02.1"),
        );
        await env.cli.install(OUR_PACKAGE);
        const r = await run(env, "lookup", { vmid: 200 });
        assert.equal(r.json.status, "succeeded");
        const record = r.json.dataArtifacts.find((a: { name: string }) =>
          a.name === "ct-200"
        );
        assert.equal(record.attributes.status, "running");
        const { model } = await import("../../js/proxmox_lxc.ts");
        const after = await definition(env, "lxc", "fleet");
        assert.equal(after.typeVersion, model.version);
      },
    );
  },
);

Deno.test(
  "upgrade: after a cluster sync no latest record upstream wrote contradicts the live state",
  opts,
  async () => {
    const guests = [...demoGuests(), extraGuest({})];
    await withRealSwamp({ packageDir: UPSTREAM, guests }, async (env) => {
      // What a repository that used upstream holds: a record under a guest's name (web), a
      // vm-<vmid> record with status unknown (VM 150 lives on pve2, upstream reads only pve1), and
      // after upstream's delete of VM 120 every record tombstoned.
      await run(env, "lookup", { vmid: 100 });
      await run(env, "lookup", { vmid: 150 });
      await run(env, "delete", { vmid: 120 });
      const upstream = await env.cli.latest(
        'modelName == "fleet" && specName == "guest"',
      );
      assert.equal(upstream.get("web")?.name, "web");
      assert.equal(upstream.get("vm-150")?.status, "unknown");
      assert.ok(upstream.get("web")?.deletedAt, "web tombstoned by upstream");

      await env.cli.install(OUR_PACKAGE);
      await run(env, "sync", { scope: "cluster" });
      const latest = await env.cli.latest(
        'modelName == "fleet" && specName == "guest"',
      );
      for (const [instance, record] of latest) {
        assert.equal(
          record.deletedAt,
          undefined,
          `${instance} still tombstoned`,
        );
        assert.notEqual(record.status, "unknown", `${instance} still unknown`);
        const holder = typeof record.supersededBy === "string"
          ? latest.get(record.supersededBy)
          : record;
        assert.ok(holder, `${instance}: ${record.supersededBy} missing`);
        const live = env.sim.guest(Number(holder.vmid));
        assert.equal(
          holder.present,
          live !== undefined,
          `${instance} presence`,
        );
        if (live) {
          assert.equal(holder.status, live.status, `${instance} status`);
        }
      }
      assert.equal(latest.get("web")?.supersededBy, "vm-100");
      assert.equal(latest.get("vm-150")?.status, "running");
      assert.equal(latest.get("vm-120")?.present, false);
    });
  },
);
