/**
 * sync's `where` through the real swamp CLI: the expression is compiled and evaluated in the CEL
 * environment swamp itself hands the package (`ctx.createCelEnvironment()`), not in one the
 * package brings — `vmid % 2` needs the double/int operators only swamp's environment registers.
 *
 * @module
 */
import assert from "node:assert/strict";
import { demoGuests } from "../../simulator/demo_cluster.ts";
import { runMethod, withRealSwamp } from "./fixture.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

Deno.test(
  "real swamp: sync with where records only the guests swamp's CEL environment selects, saying so",
  opts,
  async () => {
    await withRealSwamp({}, async (env) => {
      const where = 'vmid % 2 == 0 && status == "running"';
      const r = await runMethod(env, "sync", { where });
      assert.equal(r.json.status, "succeeded");
      const expected = demoGuests().filter((g) =>
        g.node === "pve1" && g.type === "qemu" && g.vmid % 2 === 0 &&
        g.status === "running"
      ).map((g) => `vm-${g.vmid}`).sort();
      assert.ok(expected.length > 0);
      const names = r.json.dataArtifacts.map((a: { name: string }) => a.name)
        .sort();
      assert.deepEqual(names, expected);
      const record = r.json.dataArtifacts[0].attributes;
      assert.deepEqual(record.selection, {
        scope: "node",
        nodes: ["pve1"],
        tags: [],
        where,
      });
    });
  },
);

Deno.test(
  "real swamp: sync with a where that does not compile fails naming where, before anything is sent",
  opts,
  async () => {
    await withRealSwamp({}, async (env) => {
      const r = await runMethod(env, "sync", { where: "status ==" }, 1);
      assert.equal(r.json.code, "method_execution_failed");
      assert.match(
        r.json.error,
        /^invalid argument `where`: must be a CEL expression over the guest's fields \(vmid, .*\) that yields a bool: Unexpected token/,
      );
      assert.deepEqual(env.sim.requests.map((q) => q.path), []);
    });
  },
);
