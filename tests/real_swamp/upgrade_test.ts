/**
 * Upgrading a repository the upstream `@stateless/proxmox` package used, in real swamp: the swamp
 * repository is seeded from the committed fixture (tests/fixtures/upstream-2026.06.10.1/: the
 * definitions upstream's `model create` leaves and the records its methods left, at the paths
 * swamp keeps them), this package is the one in `extensions/models/`, and its methods run.
 * tests/e2e/upgrade_test.ts runs the same fixture in the harness.
 *
 * @module
 */
import assert from "node:assert/strict";
import { model as qemuModel } from "../../js/proxmox_qemu.ts";
import { model as lxcModel } from "../../js/proxmox_lxc.ts";
import { definitionPath } from "../../harness/repo_files.ts";
import {
  assertNoContradiction,
  LXC,
  QEMU,
  seedRepository,
  UPSTREAM_RECORDS,
} from "../fixtures/upstream.ts";
import { type RealSwamp, runMethod, TOKEN, withRealSwamp } from "./fixture.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

/**
 * A repository with this package installed and the fixture's files in place. swamp has run only
 * `init` in it, so its catalog (`.swamp/data/_catalog.db`, the index `data query` reads) does not
 * exist yet: swamp builds it from the data files at the first query.
 */
function withUpgradedRepo(body: (env: RealSwamp) => Promise<void>) {
  return withRealSwamp({ type: null }, async (env) => {
    await seedRepository(env.cli.dir, {
      apiUrl: env.sim.url,
      tokenSecret: TOKEN.secret,
    });
    await body(env);
  });
}

/** A definition file of the repository, parsed line by line. */
async function definition(env: RealSwamp, which: typeof QEMU | typeof LXC) {
  const text = await env.cli.read(definitionPath(which.type, which.name));
  const typeVersion = text.match(/^typeVersion: (\S+)$/m)?.[1];
  const globalArguments = text.slice(text.indexOf("globalArguments:"))
    .replace(/\nmethods:[\s\S]*$/, "").trim().split("\n");
  return { text, typeVersion, globalArguments };
}

Deno.test(
  "upgrade: a qemu definition upstream 2026.06.10.1 wrote moves to this version on its next run and its global arguments carry over",
  opts,
  async () => {
    await withUpgradedRepo(async (env) => {
      const before = await definition(env, QEMU);
      assert.equal(before.typeVersion, QEMU.typeVersion);

      const r = await runMethod(env, "lookup", { vmid: 100 }, 0, QEMU.name);
      assert.equal(r.json.status, "succeeded");

      const after = await definition(env, QEMU);
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
  "upgrade: an lxc definition at upstream 2026.06.02.1 moves to this version and its lookup of CT 200 succeeds",
  opts,
  async () => {
    await withUpgradedRepo(async (env) => {
      assert.equal((await definition(env, LXC)).typeVersion, LXC.typeVersion);
      const r = await runMethod(env, "lookup", { vmid: 200 }, 0, LXC.name);
      assert.equal(r.json.status, "succeeded");
      const record = r.json.dataArtifacts.find((a: { name: string }) =>
        a.name === "ct-200"
      );
      assert.equal(record.attributes.status, "running");
      assert.equal((await definition(env, LXC)).typeVersion, lxcModel.version);
    });
  },
);

Deno.test(
  "upgrade: after a cluster sync no latest record upstream wrote contradicts the live state",
  opts,
  async () => {
    await withUpgradedRepo(async (env) => {
      // swamp reads what upstream left: a record under a guest's name (web), a vm-<vmid> record
      // with status unknown (VM 150 lives on pve2, upstream read pve1), and, after upstream's
      // delete of VM 120, every record tombstoned. Read with `data get` (the data files): a catalog
      // built from the files leaves out a name whose latest version is a tombstone, so `data query`
      // would show none of them yet.
      for (const name of UPSTREAM_RECORDS) {
        const got = await env.cli.json(["data", "get", QEMU.name, name]);
        assert.equal(got.json.version, 2, name);
        assert.equal(typeof got.json.content.deletedAt, "string", name);
      }
      const vm150 = await env.cli.json(["data", "get", QEMU.name, "vm-150"]);
      assert.equal(vm150.json.content.status, "unknown");
      assert.equal(env.sim.guest(120), undefined);

      const r = await runMethod(
        env,
        "sync",
        { scope: "cluster" },
        0,
        QEMU.name,
      );
      assert.equal(r.json.status, "succeeded");
      const latest = await env.cli.latest(
        `modelName == "${QEMU.name}" && specName == "guest"`,
      );
      assertNoContradiction(latest, (vmid) => env.sim.guest(vmid));
    });
  },
);
