/**
 * swamp may run workflow steps in parallel, and `swamp serve` keeps one process (one loaded module,
 * one instantiated wasm core) alive: concurrent runs must each get their own, correct outcome.
 */
import assert from "node:assert/strict";
import { model } from "../../js/proxmox_qemu.ts";
import { SwampRepo } from "../../harness/swamp.ts";
import { demoGuests } from "../../simulator/demo_cluster.ts";
import type { SimGuest } from "../../simulator/types.ts";
import { withEnv, written } from "./env.ts";
import { PACKAGE_FILES } from "../../harness/project_package.ts";

const FLEET = Array.from({ length: 10 }, (_, i): SimGuest => ({
  vmid: 300 + i,
  node: i % 2 === 0 ? "pve1" : "pve2",
  type: "qemu",
  name: `worker-${i}`,
  status: "running",
  agent: "running",
  config: {
    smbios1: `uuid=00000000-0000-4000-8000-0000000003${
      String(i).padStart(2, "0")
    }`,
  },
}));

Deno.test("concurrency: 20 concurrent lookups and guestExecs on one loaded module each get their own outcome", async () => {
  await withEnv({ guests: [...demoGuests(), ...FLEET] }, async (env) => {
    const runs = FLEET.flatMap((g) => {
      // One repository per run, like separate workflow steps; the model module is shared.
      const repo = () =>
        new SwampRepo(model, {
          name: `step-${g.vmid}`,
          globalArgs: env.globalArgs,
        }, { vault: true, extensionFiles: PACKAGE_FILES });
      const code = g.vmid % 7;
      return [
        repo().run("lookup", { vmid: g.vmid }).then((r) => ({
          kind: "lookup",
          g,
          r,
          code,
        })),
        repo().run("guestExec", {
          vmid: g.vmid,
          command: [
            "bash",
            "-c",
            `sleep 0.$((RANDOM % 3)); echo ${g.name}; exit ${code}`,
          ],
          allowedExitCodes: [code],
        }).then((r) => ({ kind: "exec", g, r, code })),
      ];
    });
    const results = await Promise.all(runs);
    assert.equal(results.length, 20);
    for (const { kind, g, r, code } of results) {
      assert.equal(r.status, "succeeded", `${kind} ${g.vmid}: ${r.error}`);
      if (kind === "lookup") {
        const rec = written(r, `vm-${g.vmid}`);
        assert.equal(rec.name, g.name);
        assert.equal(rec.node, g.node);
      } else {
        const rec = written(r, `vm-${g.vmid}-exec`);
        assert.equal(rec.stdout, `${g.name}\n`);
        assert.equal(rec.exitCode, code);
        assert.equal(rec.vmid, g.vmid);
      }
    }
  });
});
