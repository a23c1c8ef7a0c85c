/**
 * Upgrading a repository the upstream `@stateless/proxmox` package used, in the harness: its
 * definitions and records come from the committed fixture (tests/fixtures/upstream-2026.06.10.1/),
 * the package's next runs move the definitions to this version and correct the records.
 * tests/real_swamp/upgrade_test.ts runs the same fixture through swamp itself.
 *
 * @module
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { parse } from "npm:yaml@2";
import { model as qemuModel } from "../../js/proxmox_qemu.ts";
import { model as lxcModel } from "../../js/proxmox_lxc.ts";
import { dataDirectory } from "../../harness/repo_files.ts";
import {
  assertNoContradiction,
  definitionFor,
  LXC,
  QEMU,
  qemuRecords,
  UPSTREAM_RECORDS,
  UPSTREAM_REPO,
} from "../fixtures/upstream.ts";
import { withEnv, written } from "./env.ts";

// The fixture's token is not in the e2e token's deny list (VM 150 must be readable).
const NO_DENY: number[] = [];

Deno.test("upgrade: a qemu definition upstream 2026.06.10.1 wrote moves to this version on its next run, every upstream global argument unchanged and requestTimeoutSec 30 added", async () => {
  await withEnv({
    definition: await definitionFor(QEMU),
    data: await qemuRecords(),
    denyVmids: NO_DENY,
  }, async (env) => {
    const before = env.repo.definition;
    assert.equal(before.typeVersion, QEMU.typeVersion);
    const r = await env.run("lookup", { vmid: 100 });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(written(r, "vm-100").status, "running");

    const after = env.repo.definition;
    assert.equal(after.typeVersion, qemuModel.version);
    // swamp writes the arguments in key order: the upstream ones first, as they were, then the new one.
    assert.deepEqual(Object.keys(after.globalArgs), [
      ...Object.keys(before.globalArgs),
      "requestTimeoutSec",
    ]);
    assert.deepEqual(after.globalArgs, {
      ...before.globalArgs,
      requestTimeoutSec: 30,
    });
    assert.equal(after.id, QEMU.id);
    assert.equal(after.name, QEMU.name);
    assert.equal(after.version, before.version);
  });
});

Deno.test("upgrade: an lxc definition at upstream 2026.06.02.1 moves to this version and its lookup of CT 200 succeeds", async () => {
  await withEnv({
    model: lxcModel,
    definition: await definitionFor(LXC),
    denyVmids: NO_DENY,
  }, async (env) => {
    const before = env.repo.definition;
    assert.equal(before.typeVersion, LXC.typeVersion);
    const r = await env.run("lookup", { vmid: 200 });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(written(r, "ct-200").status, "running");
    assert.equal(env.repo.definition.typeVersion, lxcModel.version);
    assert.deepEqual(env.repo.definition.globalArgs, {
      ...before.globalArgs,
      requestTimeoutSec: 30,
    });
  });
});

Deno.test("upgrade: after a cluster sync no latest record upstream wrote contradicts the live state", async () => {
  await withEnv({
    definition: await definitionFor(QEMU),
    data: await qemuRecords(),
    denyVmids: NO_DENY,
  }, async (env) => {
    // What upstream left: every record tombstoned by its delete of VM 120, VM 100 under its name.
    for (const name of UPSTREAM_RECORDS) {
      assert.equal(env.repo.versions(name).at(-1)?.tombstone, true, name);
    }
    assert.equal(
      (env.repo.latest("vm-150") as { status: string }).status,
      "unknown",
    );
    assert.equal(env.sim.guest(120), undefined);

    const r = await env.run("sync", { scope: "cluster" });
    assert.equal(r.status, "succeeded", r.error);
    const latest = new Map<string, Record<string, unknown>>();
    for (const name of env.repo.instances()) {
      const last = env.repo.versions(name).at(-1)!;
      if (last.spec !== "guest") continue;
      assert.equal(last.tombstone, false, `${name} is still a tombstone`);
      latest.set(name, last.data as Record<string, unknown>);
    }
    assertNoContradiction(latest, (vmid) => env.sim.guest(vmid));
  });
});

Deno.test("upgrade fixture: every stored version's size and checksum are its raw content's, and latest names its last version", async () => {
  const dir = join(UPSTREAM_REPO, dataDirectory(QEMU.type, QEMU.id));
  const versions = await qemuRecords();
  assert.deepEqual([...new Set(versions.map((v) => v.name))], [
    ...UPSTREAM_RECORDS,
  ]);
  for (const v of versions) {
    const at = join(dir, v.name, String(v.version));
    const meta = parse(await Deno.readTextFile(join(at, "metadata.yaml")));
    const raw = await Deno.readFile(join(at, "raw"));
    assert.equal(meta.size, raw.byteLength, `${at} size`);
    assert.equal(
      meta.checksum,
      createHash("sha256").update(raw).digest("hex"),
      `${at} checksum`,
    );
    assert.equal(meta.ownerDefinition.ownerRef, QEMU.id);
    assert.equal(meta.tags.modelName, QEMU.name);
    // A tombstone is the version before it plus deletedAt and deletedByMethod.
    if (v.lifecycle === "deleted") {
      const before = versions.find((b) =>
        b.name === v.name && b.version === v.version - 1
      )!;
      const { deletedAt, deletedByMethod, ...rest } = JSON.parse(v.content);
      assert.deepEqual(rest, JSON.parse(before.content));
      assert.equal(typeof deletedAt, "string");
      assert.equal(deletedByMethod, "delete");
    }
  }
  for (const name of UPSTREAM_RECORDS) {
    const last = versions.filter((v) => v.name === name).at(-1)!;
    assert.equal(
      await Deno.readTextFile(join(dir, name, "latest")),
      String(last.version),
    );
  }
});
