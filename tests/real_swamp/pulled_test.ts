/**
 * The package as a user gets it: `swamp extension push` (for real, not `--dry-run`) to a fake
 * registry (registry.ts), `swamp extension pull @stateless/proxmox` into a fresh repository, and
 * its methods run from there against the simulator. A pulled extension lives in
 * `.swamp/pulled-extensions/<name>/` and runs from bundles, with the manifest's `additionalFiles`
 * and `binaries` under `files/`; these tests fail when what the methods need did not travel.
 * The last tests run a pulled method remotely: through `swamp serve` (`--server`), and on a
 * remote worker (`swamp worker connect`) that receives it as a bundle (serve.ts).
 * Sizes are printed on lines starting `real-swamp:` (./test.sh shows them).
 *
 * @module
 */
import assert from "node:assert/strict";
import { join, relative } from "node:path";
import {
  assertLookupStoresVm100,
  inputs,
  OUR_PACKAGE,
  runMethod,
  withRealSwamp,
} from "./fixture.ts";
import { PublishedPackage, tarGzEntries } from "./registry.ts";
import { SwampServe } from "./serve.ts";
import { SwampCli } from "./swamp_cli.ts";
import { manifestFiles, manifestList } from "../../harness/manifest_files.ts";
import { parse } from "npm:yaml@2";

const opts = { sanitizeOps: false, sanitizeResources: false };

const MANIFEST = join(OUR_PACKAGE, "manifest.yaml");

/** What the manifest ships beside the code: swamp puts both lists under `files/`. */
const SHIPPED = Object.keys(manifestFiles(MANIFEST));
const BINARIES = Object.keys(manifestFiles(MANIFEST, ["binaries"]));

/** Every file under `dir`, relative to it, with its size. */
async function filesUnder(dir: string): Promise<Map<string, number>> {
  const found = new Map<string, number>();
  const walk = async (at: string) => {
    for await (const e of Deno.readDir(at)) {
      const path = join(at, e.name);
      if (e.isDirectory) await walk(path);
      else found.set(relative(dir, path), (await Deno.stat(path)).size);
    }
  };
  await walk(dir);
  return found;
}

async function withPublished(body: (p: PublishedPackage) => Promise<void>) {
  const published = await PublishedPackage.push(OUR_PACKAGE);
  try {
    await body(published);
  } finally {
    await published.close();
  }
}

Deno.test(
  "real swamp: extension push uploads one tar.gz with the manifest, the models, their bundles and every shipped file",
  opts,
  async () => {
    await withPublished(async (published) => {
      const { pushed } = published;
      const stored = published.version;
      const entries = await tarGzEntries(stored.archive);
      console.log(
        `real-swamp: extension push: ${stored.name}@${stored.version} uploaded as a tar.gz of ${stored.archive.length} bytes (${entries.length} entries)`,
      );
      assert.equal(pushed.name, "@stateless/proxmox");
      assert.equal(pushed.archiveSize, stored.archive.length);
      const files = new Set(entries.map((e) => e.replace(/\/$/, "")));
      for (
        const want of [
          "extension/manifest.yaml",
          "extension/models/proxmox_qemu.ts",
          "extension/models/proxmox_lxc.ts",
          "extension/reports/observed_method_report.ts",
          ...SHIPPED.map((f) => `extension/files/${f}`),
        ]
      ) {
        assert.ok(files.has(want), `${want} in the archive`);
      }
      const bundles = entries.filter((e) =>
        /^extension\/bundles\/.+\.js$/.test(e)
      );
      assert.deepEqual(
        bundles.map((b) => b.replace(/.*\//, "")).sort(),
        ["proxmox_lxc.js", "proxmox_qemu.js"],
      );
    });
  },
);

Deno.test(
  "real swamp: extension pull into a fresh repository verifies the checksum and lands every shipped file under files/",
  opts,
  async () => {
    await withPublished(async (published) => {
      const cli = await SwampCli.init();
      try {
        const r = await published.pullInto(cli);
        assert.match(r.stdout, /"integrity": "verified"/);
        assert.ok(
          published.registry.requests.some((q) => /\/checksum 200$/.test(q)),
          "the checksum was asked for",
        );
        const root = join(
          cli.dir,
          ".swamp/pulled-extensions/@stateless/proxmox",
        );
        const landed = await filesUnder(root);
        const byDir = new Map<string, { count: number; bytes: number }>();
        for (const [path, size] of landed) {
          const top = path.includes("/") ? path.split("/")[0] + "/" : path;
          const sum = byDir.get(top) ?? { count: 0, bytes: 0 };
          byDir.set(top, { count: sum.count + 1, bytes: sum.bytes + size });
        }
        console.log(
          `real-swamp: extension pull: .swamp/pulled-extensions/@stateless/proxmox/ holds ${
            [...byDir].map(([d, s]) => `${d} ${s.count} files ${s.bytes} bytes`)
              .join(", ")
          }`,
        );
        for (const f of SHIPPED) {
          console.log(
            `real-swamp: extension pull: files/${f}: ${
              landed.get(`files/${f}`)
            } bytes`,
          );
          const source = await Deno.stat(join(OUR_PACKAGE, f));
          assert.equal(landed.get(`files/${f}`), source.size, `files/${f}`);
        }
        assert.ok(landed.has("models/proxmox_qemu.ts"));
        // The lockfile records the archive the registry served.
        const lock = JSON.parse(
          await cli.read("extensions/models/upstream_extensions.json"),
        );
        assert.equal(
          lock["@stateless/proxmox"].checksum,
          published.version.checksum,
        );
        // Nothing of the package sits in the repository's own extensions/: only the pull.
        const local = await filesUnder(join(cli.dir, "extensions"));
        assert.deepEqual([...local.keys()], [
          "models/upstream_extensions.json",
        ]);
      } finally {
        await cli.close();
      }
    });
  },
);

Deno.test(
  "real swamp: lookup of a pulled package succeeds and stores the live state as vm-<vmid>",
  opts,
  async () => {
    await withRealSwamp({ install: "pull" }, async (env) => {
      await assertLookupStoresVm100(env);
    });
  },
);

Deno.test(
  "real swamp: a pulled package brings its workflows and its skill, and a pulled workflow runs",
  opts,
  async () => {
    await withRealSwamp({ install: "pull" }, async (env) => {
      const shipped = manifestList(MANIFEST, "workflows").map((file) =>
        String(
          (parse(
            Deno.readTextFileSync(join(OUR_PACKAGE, "workflows", file)),
          ) as {
            name: string;
          }).name,
        )
      );
      const listed = await env.cli.json(["workflow", "list"]);
      assert.deepEqual(
        listed.json.results.map((w: { name: string }) => w.name).sort(),
        shipped.sort(),
      );
      // No tool named (`swamp init --tool none`): pull, like push, takes Claude's skills folder.
      for (const skill of manifestList(MANIFEST, "skills")) {
        const at = join(
          env.cli.dir,
          ".claude/skills",
          skill,
          "SKILL.md",
        );
        assert.match(await Deno.readTextFile(at), new RegExp(`name: ${skill}`));
      }
      const run = await env.cli.json([
        "workflow",
        "run",
        "@stateless/proxmox/drift-check",
        ...inputs({ model: "fleet" }),
        "--input",
        'declared:json=[{"vmid":100,"status":"running"}]',
      ]);
      assert.equal(run.json.status, "succeeded");
    });
  },
);

Deno.test(
  "real swamp: guestExec of `true` through a pulled package succeeds with exitCode 0 in its exec record",
  opts,
  async () => {
    await withRealSwamp({ install: "pull" }, async (env) => {
      const r = await runMethod(env, "guestExec", {
        vmid: 100,
        command: ["true"],
      });
      assert.equal(r.json.status, "succeeded");
      const exec = r.json.dataArtifacts.find((a: { name: string }) =>
        a.name === "vm-100-exec"
      );
      assert.equal(exec.attributes.exitCode, 0);
      assert.equal(exec.attributes.stdoutBytes, 0);
    });
  },
);

Deno.test({
  name:
    "real swamp: a pulled package missing a shipped binary fails its method run",
  ...opts,
  fn: async () => {
    await withRealSwamp({ install: "pull" }, async (env) => {
      assert.ok(BINARIES.length > 0, "the manifest ships the core as a binary");
      for (const bin of BINARIES) {
        await Deno.remove(
          join(
            env.cli.dir,
            ".swamp/pulled-extensions/@stateless/proxmox/files",
            bin,
          ),
        );
      }
      const r = await runMethod(env, "lookup", { vmid: 100 }, 1);
      assert.equal(r.json.code, "method_execution_failed");
      assert.ok(
        BINARIES.some((bin) => r.json.error.includes(bin)),
        `the error names a missing binary: ${r.json.error}`,
      );
    });
  },
});

Deno.test(
  "real swamp: lookup of a pulled package run through swamp serve (--server) stores vm-100 in the served repository",
  opts,
  async () => {
    await withRealSwamp({ install: "pull" }, async (env) => {
      const serve = await SwampServe.start(env.cli);
      // The client is a repository without the package or the definition: only the server has them.
      const client = await SwampCli.init();
      try {
        const r = await client.json([
          "model",
          "method",
          "run",
          "fleet",
          "lookup",
          ...inputs({ vmid: 100 }),
          "--server",
          serve.url,
        ]);
        assert.equal(r.json.status, "succeeded");
        const stored = await env.cli.latest(
          'modelName == "fleet" && name == "vm-100"',
        );
        assert.equal(stored.get("vm-100")?.status, "running");
        assert.equal(stored.get("vm-100")?.name, "web");
      } finally {
        await client.close();
        await serve.close();
      }
    });
  },
);

/** A workflow whose one step runs lookup on a worker labelled `role=pve` (queueing ≤ 60 s). */
const REMOTE_LOOKUP = `id: 0b7f3c1e-5d2a-4e8b-9c61-7a4d2e9f1b30
name: remote-lookup
version: 1
jobs:
  - name: fleet
    steps:
      - name: look
        labels:
          role: pve
        queueTimeout: 60
        task:
          type: model_method
          modelIdOrName: fleet
          methodName: lookup
          inputs:
            vmid: 100
`;

Deno.test(
  "real swamp: lookup of a pulled package placed on a remote worker succeeds there and stores vm-100",
  opts,
  async () => {
    await withRealSwamp({ install: "pull" }, async (env) => {
      await env.cli.write(
        "workflows/workflow-remote-lookup.yaml",
        REMOTE_LOOKUP,
      );
      const serve = await SwampServe.start(env.cli);
      try {
        const workerLog = await serve.connectWorker("pool", { role: "pve" });
        const r = await env.cli.json([
          "workflow",
          "run",
          "remote-lookup",
          "--server",
          serve.url,
        ]);
        assert.equal(r.json.status, "succeeded");
        assert.equal(r.json.jobs[0].steps[0].status, "succeeded");
        // The worker, not the server, ran the method.
        assert.match(
          workerLog(),
          /Dispatch \S+: @stateless\/proxmox\/qemu\.lookup succeeded/,
        );
        const stored = await env.cli.latest(
          'modelName == "fleet" && name == "vm-100"',
        );
        assert.equal(stored.get("vm-100")?.status, "running");
      } finally {
        await serve.close();
      }
    });
  },
);
