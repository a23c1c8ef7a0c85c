/**
 * The harness applies a model's upgrade chain as swamp does (harness/upgrade.ts), takes records
 * stored before its first run (`RepoOptions.data`), refuses writes over another owner's records,
 * and reads swamp's repository files (harness/repo_files.ts): one behaviour per test, on a small
 * stand-in model.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { z } from "npm:zod@4";
import {
  type Definition,
  type MethodContext,
  type ModelLike,
  SwampRepo,
} from "../../harness/swamp.ts";
import type { StoredVersion } from "../../harness/data_store.ts";
import {
  dataDirectory,
  definitionPath,
  parseDefinition,
  readDataDirectory,
} from "../../harness/repo_files.ts";

/** The upgrades that ran, in order. */
let ran: string[] = [];

function step(toVersion: string, change: Record<string, unknown>) {
  return {
    toVersion,
    description: `to ${toVersion}`,
    upgradeAttributes: (old: Record<string, unknown>) => {
      ran.push(toVersion);
      return { ...old, ...change };
    },
  };
}

/** A model at 2026.03.01.2 whose definitions gained `timeout`, then `retries`, then `mode`. */
function model(over: Partial<ModelLike> = {}): ModelLike {
  return {
    type: "@test/harness/Upgradable",
    version: "2026.03.01.2",
    globalArguments: z.object({
      host: z.string(),
      timeout: z.number().optional(),
      retries: z.number().optional(),
      mode: z.string().optional(),
    }).strict(),
    upgrades: [
      step("2026.01.10.1", { timeout: 30 }),
      step("2026.02.01.1", { retries: 2 }),
      step("2026.03.01.2", { mode: "safe" }),
    ],
    resources: {
      guest: {
        description: "a guest",
        schema: z.object({ vmid: z.number() }).loose(),
        lifetime: "infinite",
        garbageCollection: 20,
      },
    },
    methods: {
      touch: {
        description: "writes vm-<vmid>",
        kind: "action",
        arguments: z.object({ vmid: z.number() }),
        execute: async (args: { vmid: number }, ctx: MethodContext) => {
          await ctx.writeResource("guest", `vm-${args.vmid}`, {
            vmid: args.vmid,
            seen: await ctx.readResource(`vm-${args.vmid}`),
          });
          return { dataHandles: [] };
        },
      },
      list: {
        description: "lists the definition's records",
        kind: "action",
        arguments: z.object({}),
        execute: async (_args: unknown, ctx: MethodContext) => {
          listed = await ctx.dataRepository.findAllForModel(
            ctx.modelType,
            ctx.modelId,
          );
          return { dataHandles: [] };
        },
      },
    },
    ...over,
  };
}

let listed: { name: string; version: number }[] = [];

function at(
  typeVersion: string | null | undefined,
  globalArgs: Record<string, unknown> = { host: "pve.example" },
): Definition {
  return { name: "lab", id: DEFINITION_ID, globalArgs, typeVersion };
}

const DEFINITION_ID = "0a4e6f52-9c1b-4d37-8e05-3b7f2c9d1a68";

function repo(
  definition: Definition,
  over: Partial<ModelLike> = {},
  data: StoredVersion[] = [],
) {
  ran = [];
  return new SwampRepo(model(over), definition, { data });
}

Deno.test("upgrade: a definition at an older typeVersion runs the upgrades newer than it, in the model's order, and keeps the result at the model's version", async () => {
  const r = repo(at("2026.01.10.1"));
  const result = await r.run("touch", { vmid: 1 });
  assert.equal(result.status, "succeeded", result.error);
  assert.deepEqual(ran, ["2026.02.01.1", "2026.03.01.2"]);
  assert.equal(r.definition.typeVersion, "2026.03.01.2");
  assert.deepEqual(r.definition.globalArgs, {
    host: "pve.example",
    retries: 2,
    mode: "safe",
  });
  assert.equal(r.definition.id, DEFINITION_ID);
  assert.equal(r.definition.name, "lab");
  // Once upgraded, the next run has nothing to apply.
  await r.run("touch", { vmid: 1 });
  assert.deepEqual(ran, ["2026.02.01.1", "2026.03.01.2"]);
});

Deno.test("upgrade: a typeVersion between two upgrades' versions runs only the later ones (micro compared as a number)", async () => {
  const r = repo(at("2026.03.01.1"));
  await r.run("touch", { vmid: 1 });
  assert.deepEqual(ran, ["2026.03.01.2"]);
});

Deno.test("upgrade: a definition at the model's version, or a newer one, is left as it is", async () => {
  for (const typeVersion of ["2026.03.01.2", "2026.04.01.1"]) {
    const r = repo(at(typeVersion));
    await r.run("touch", { vmid: 1 });
    assert.deepEqual(ran, []);
    assert.equal(r.definition.typeVersion, typeVersion);
    assert.deepEqual(r.definition.globalArgs, { host: "pve.example" });
  }
});

Deno.test("upgrade: a definition that records no typeVersion runs every upgrade", async () => {
  const r = repo(at(null));
  await r.run("touch", { vmid: 1 });
  assert.deepEqual(ran, ["2026.01.10.1", "2026.02.01.1", "2026.03.01.2"]);
  assert.equal(r.definition.typeVersion, "2026.03.01.2");
});

Deno.test("upgrade: a definition given without typeVersion is one model create made, at the model's version", async () => {
  const r = repo(at(undefined));
  assert.equal(r.definition.typeVersion, "2026.03.01.2");
  await r.run("touch", { vmid: 1 });
  assert.deepEqual(ran, []);
});

Deno.test("upgrade: a model without upgrades leaves an older definition's typeVersion as it is", async () => {
  const r = repo(at("2026.01.01.1"), { upgrades: undefined });
  const result = await r.run("touch", { vmid: 1 });
  assert.equal(result.status, "succeeded", result.error);
  assert.equal(r.definition.typeVersion, "2026.01.01.1");
});

Deno.test("upgrade: the upgraded definition is kept even when the run then fails on its global arguments", async () => {
  const r = repo(at("2026.02.01.1", { host: "pve.example", extra: true }));
  const result = await r.run("touch", { vmid: 1 });
  assert.equal(result.status, "failed");
  assert.match(result.error!, /Unknown argument\(s\): extra/);
  assert.equal(r.definition.typeVersion, "2026.03.01.2");
  assert.equal(r.definition.globalArgs.mode, "safe");
});

Deno.test("upgrade: an unknown method fails before the definition is upgraded", async () => {
  const r = repo(at("2026.01.10.1"));
  const result = await r.run("nope");
  assert.equal(result.errorCode, "unknown_method");
  assert.deepEqual(ran, []);
  assert.equal(r.definition.typeVersion, "2026.01.10.1");
});

Deno.test("upgrade: a typeVersion that is not CalVer fails the run with swamp's CalVer error and changes nothing", async () => {
  const r = repo(at("2026.13.01.1"));
  const result = await r.run("touch", { vmid: 1 });
  assert.equal(result.status, "failed");
  assert.equal(result.errorCode, "method_execution_failed");
  assert.match(result.error!, /^Invalid CalVer version: "2026\.13\.01\.1"/);
  assert.equal(r.definition.typeVersion, "2026.13.01.1");
  assert.deepEqual(r.versions("vm-1"), []);
});

Deno.test("upgrade: an upgradeAttributes that throws fails the run and leaves the definition as it was", async () => {
  const r = repo(at("2026.02.01.1"), {
    upgrades: [
      step("2026.02.01.1", {}),
      {
        toVersion: "2026.03.01.2",
        description: "breaks",
        upgradeAttributes: (old) => {
          (old as { host: string }).host = "changed";
          throw new Error("cannot upgrade");
        },
      },
    ],
  });
  const result = await r.run("touch", { vmid: 1 });
  assert.equal(result.status, "failed");
  assert.equal(result.error, "cannot upgrade");
  assert.equal(r.definition.typeVersion, "2026.02.01.1");
  // The upgrade was given a copy of the global arguments.
  assert.deepEqual(r.definition.globalArgs, { host: "pve.example" });
});

Deno.test("upgrade: a model whose chain does not end at its version, or is out of order, is refused", () => {
  assert.throws(
    () => repo(at(null), { upgrades: [step("2026.02.01.1", {})] }),
    /last upgrade's toVersion '2026\.02\.01\.1' is not the model version '2026\.03\.01\.2'/,
  );
  assert.throws(
    () =>
      repo(at(null), {
        upgrades: [step("2026.03.01.2", {}), step("2026.03.01.2", {})],
      }),
    /not in chronological order: '2026\.03\.01\.2' must be before '2026\.03\.01\.2'/,
  );
  assert.throws(
    () => repo(at(null), { upgrades: [step("2026.3.1.2", {})] }),
    /upgrades\[0\]\.toVersion '2026\.3\.1\.2' is not CalVer/,
  );
});

function stored(
  name: string,
  version: number,
  data: Record<string, unknown>,
  over: Partial<StoredVersion> = {},
): StoredVersion {
  return {
    name,
    version,
    dataId: "5b8e2d17-4f60-4a93-b1c8-9e0d7a6f2c34",
    specName: "guest",
    content: JSON.stringify(data),
    tags: { type: "resource", specName: "guest", modelName: "lab" },
    lifetime: "infinite",
    garbageCollection: 20,
    lifecycle: "active",
    writtenBy: "",
    ownerRef: DEFINITION_ID,
    ...over,
  };
}

Deno.test("seeded data: the records a repository already holds are what the first run reads and lists, and its write continues their versions", async () => {
  const r = repo(at(undefined), {}, [
    stored("vm-1", 1, { vmid: 1, status: "running" }),
    stored("vm-1", 2, { vmid: 1, status: "running", deletedAt: "then" }, {
      lifecycle: "deleted",
    }),
  ]);
  await r.run("list");
  assert.deepEqual(listed.map((d) => [d.name, d.version]), [["vm-1", 2]]);
  const result = await r.run("touch", { vmid: 1 });
  assert.equal(result.status, "succeeded", result.error);
  const versions = r.versions("vm-1");
  assert.deepEqual(versions.map((v) => [v.version, v.tombstone]), [
    [1, false],
    [2, true],
    [3, false],
  ]);
  assert.deepEqual((versions[2].data as { seen: unknown }).seen, {
    vmid: 1,
    status: "running",
    deletedAt: "then",
  });
});

Deno.test("seeded data: versions that do not follow each other are refused", () => {
  assert.throws(
    () =>
      repo(at(undefined), {}, [
        stored("vm-1", 2, { vmid: 1 }),
        stored("vm-1", 1, { vmid: 1 }),
      ]),
    /vm-1: version 1 does not follow version 2/,
  );
});

Deno.test("ownership: a write over a record another definition owns fails with swamp's ownership error", async () => {
  const other = "9d2c7b41-0e5a-4f86-a3b9-6c1e8f2d7a05";
  const r = repo(at(undefined), {}, [
    stored("vm-1", 1, { vmid: 1 }, { ownerRef: other }),
  ]);
  const result = await r.run("touch", { vmid: 1 });
  assert.equal(result.status, "failed");
  assert.equal(
    result.error,
    `Ownership validation failed for "vm-1": existing owner "model-method:${other}" does not match new owner "model-method:${DEFINITION_ID}"`,
  );
  assert.equal(r.versions("vm-1").length, 1);
});

Deno.test("repo files: a definition file reads as swamp writes it: typeVersion, id, name, version, tags, global and method arguments", () => {
  const text = [
    "type: '@test/harness/upgradable'",
    "typeVersion: 2026.01.10.1",
    `id: ${DEFINITION_ID}`,
    "name: lab",
    "version: 3",
    "tags:",
    "  team: infra",
    "globalArguments:",
    "  host: pve.example",
    "  nested:",
    "    port: 8006",
    "methods:",
    "  touch:",
    "    arguments:",
    "      vmid: 7",
    "  list: {}",
    "checks:",
    "  skip:",
    "    - reachable",
    "",
  ].join("\n");
  assert.deepEqual(parseDefinition(text), {
    type: "@test/harness/upgradable",
    typeVersion: "2026.01.10.1",
    id: DEFINITION_ID,
    name: "lab",
    version: 3,
    tags: { team: "infra" },
    globalArgs: { host: "pve.example", nested: { port: 8006 } },
    methodArgs: { touch: { vmid: 7 } },
    checks: { skip: ["reachable"] },
  });
});

Deno.test("repo files: a typeVersion that YAML reads as a number counts as none, as swamp's schema has it", () => {
  const text =
    `typeVersion: 2026.01\nid: ${DEFINITION_ID}\nname: lab\nversion: 1\n`;
  assert.equal(parseDefinition(text).typeVersion, null);
});

Deno.test("repo files: definitions and data live where swamp keeps them", () => {
  assert.equal(
    definitionPath("@stateless/proxmox/qemu", "fleet"),
    "models/@stateless/proxmox/qemu/fleet.yaml",
  );
  assert.equal(
    dataDirectory("@Test/Harness.Upgradable", DEFINITION_ID),
    `.swamp/data/@test/harness/upgradable/${DEFINITION_ID}`,
  );
});

/** Writes one version in swamp's layout under `dir/<name>/<version>/`. */
async function writeVersion(
  dir: string,
  name: string,
  version: number,
  raw: string,
  extra: string[] = [],
) {
  const at = join(dir, name, String(version));
  await Deno.mkdir(at, { recursive: true });
  await Deno.writeTextFile(join(at, "raw"), raw);
  await Deno.writeTextFile(
    join(at, "metadata.yaml"),
    [
      "id: 5b8e2d17-4f60-4a93-b1c8-9e0d7a6f2c34",
      `name: ${name}`,
      `version: ${version}`,
      "contentType: application/json",
      "lifetime: infinite",
      "garbageCollection: 20",
      "streaming: false",
      "tags:",
      "  type: resource",
      "  specName: guest",
      "  modelName: lab",
      "ownerDefinition:",
      "  ownerType: model-method",
      `  ownerRef: ${DEFINITION_ID}`,
      "createdAt: '2026-01-10T08:00:00.000Z'",
      ...extra,
      "",
    ].join("\n"),
  );
}

Deno.test("repo files: a data folder reads as each name's versions, oldest first, a tombstone by its lifecycle", async () => {
  const dir = await Deno.makeTempDir({ prefix: "harness-data-" });
  try {
    await writeVersion(dir, "vm-2", 1, '{"vmid":2}');
    await writeVersion(dir, "vm-1", 1, '{"vmid":1}');
    await writeVersion(dir, "vm-1", 2, '{"vmid":1,"deletedAt":"x"}', [
      "lifecycle: deleted",
    ]);
    await Deno.writeTextFile(join(dir, "vm-1", "latest"), "2");
    const versions = await readDataDirectory(dir);
    assert.deepEqual(
      versions.map((v) => [v.name, v.version, v.lifecycle, v.content]),
      [
        ["vm-1", 1, "active", '{"vmid":1}'],
        ["vm-1", 2, "deleted", '{"vmid":1,"deletedAt":"x"}'],
        ["vm-2", 1, "active", '{"vmid":2}'],
      ],
    );
    assert.equal(versions[0].specName, "guest");
    assert.equal(versions[0].ownerRef, DEFINITION_ID);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("repo files: a latest marker naming another version than the last is refused", async () => {
  const dir = await Deno.makeTempDir({ prefix: "harness-data-" });
  try {
    await writeVersion(dir, "vm-1", 1, "{}");
    await writeVersion(dir, "vm-1", 2, "{}");
    await Deno.writeTextFile(join(dir, "vm-1", "latest"), "1");
    await assert.rejects(
      readDataDirectory(dir),
      /latest is 1, not the highest version 2/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("repo files: metadata swamp would not read (no type tag) is refused", async () => {
  const dir = await Deno.makeTempDir({ prefix: "harness-data-" });
  try {
    const at = join(dir, "vm-1", "1");
    await writeVersion(dir, "vm-1", 1, "{}");
    const meta = await Deno.readTextFile(join(at, "metadata.yaml"));
    await Deno.writeTextFile(
      join(at, "metadata.yaml"),
      meta.replace("  type: resource\n", ""),
    );
    await assert.rejects(
      readDataDirectory(dir),
      /tags must include 'type' key/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
