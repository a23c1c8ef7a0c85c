/**
 * README's workflow recipes, run as written through the real swamp CLI against the simulator.
 *
 * @module
 */
import assert from "node:assert/strict";
import { withRealSwamp } from "./fixture.ts";
import { definitionPerGuest, writeRecipe } from "./recipes.ts";

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
