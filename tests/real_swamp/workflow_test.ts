/**
 * Workflows through the real swamp CLI: a failing step fails the run and holds back what depends on
 * it, and the workflow recipes of docs/recipes.md run as written.
 *
 * @module
 */
import assert from "node:assert/strict";
import { withRealSwamp } from "./fixture.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

/** A workflow file: one job `fleet` whose steps are `steps` (YAML, indented for a step list). */
function workflow(name: string, id: string, steps: string): string {
  return `id: ${id}
name: ${name}
version: 1
reports:
  require:
    - "@stateless/proxmox/workflow-observed"
jobs:
  - name: fleet
    steps:
${steps}`;
}

const THREE_STEPS = workflow(
  "three-steps",
  "6f1c2a9e-0d4b-4c1e-9a57-3b8e2f4d6a10",
  `      - name: look
        task:
          type: model_method
          modelIdOrName: fleet
          methodName: lookup
          inputs:
            vmid: 100
      - name: exec42
        dependsOn:
          - step: look
            condition:
              type: succeeded
        task:
          type: model_method
          modelIdOrName: fleet
          methodName: guestExec
          inputs:
            vmid: 100
            command: ["sh", "-c", "exit 42"]
      - name: after
        dependsOn:
          - step: exec42
            condition:
              type: succeeded
        task:
          type: model_method
          modelIdOrName: fleet
          methodName: stop
          inputs:
            vmid: 100
`,
);

Deno.test(
  "real swamp: a workflow step that exits 42 fails the run and holds back its dependent step",
  opts,
  async () => {
    await withRealSwamp({}, async ({ cli, sim }) => {
      await cli.write("workflows/workflow-three-steps.yaml", THREE_STEPS);
      const r = await cli.json(["workflow", "run", "three-steps"], 1);
      assert.equal(r.json.status, "failed");
      const steps = Object.fromEntries(
        r.json.jobs[0].steps.map((s: { name: string; status: string }) => [
          s.name,
          s.status,
        ]),
      );
      assert.deepEqual(steps, {
        look: "succeeded",
        exec42: "failed",
        after: "pending",
      });
      // The held-back step never reached PVE: the guest still runs.
      assert.equal(sim.guest(100)?.status, "running");
    });
  },
);

Deno.test(
  "real swamp: the workflow-observed report shows per guest what each step observed, the failed exit code included",
  opts,
  async () => {
    await withRealSwamp({}, async ({ cli }) => {
      await cli.write("workflows/workflow-three-steps.yaml", THREE_STEPS);
      await cli.json(["workflow", "run", "three-steps"], 1);
      const r = await cli.json([
        "report",
        "get",
        "@stateless/proxmox/workflow-observed",
        "--workflow",
        "three-steps",
      ]);
      assert.equal(r.json.json.status, "failed");
      const rows = r.json.json.rows.map((
        row: {
          step: string;
          verdict: string;
          observed: string;
          subject: string;
        },
      ) => [row.subject, row.step, row.verdict, row.observed]);
      assert.deepEqual(rows, [
        ["vm-100", "look", "succeeded", "running"],
        ["vm-100", "exec42", "failed", "exit 42"],
      ]);
      assert.match(r.json.markdown, /## vm-100/);
      assert.match(
        r.json.markdown,
        /\| exec42 \| guestExec \| failed \| exit 42 \|/,
      );
      const md = await cli.run(
        "report",
        "get",
        "@stateless/proxmox/workflow-observed",
        "--workflow",
        "three-steps",
        "--markdown",
      );
      assert.equal(md.code, 0, md.stderr);
      assert.match(md.stdout, /exit 42/);
    });
  },
);

Deno.test(
  "real swamp: a value made of two expressions that starts and ends with one stays as written (the harness's rule)",
  opts,
  async () => {
    await withRealSwamp({}, async ({ cli }) => {
      await cli.write(
        "workflows/workflow-two-expressions.yaml",
        `id: 6f1c2a9e-0d4b-4c1e-9a57-3b8e2f4d6a99
name: two-expressions
inputs:
  properties:
    a: { type: string }
jobs:
  - name: j
    steps:
      - name: echo
        task:
          type: model_method
          modelIdOrName: fleet
          methodName: guestExec
          inputs:
            vmid: 100
            command: ["echo", "\${{ inputs.a }}-\${{ inputs.a }}", "x-\${{ inputs.a }}"]
`,
      );
      await cli.json(["workflow", "run", "two-expressions", "--input", "a=y"]);
      const exec = (await cli.latest('modelName == "fleet"')).get(
        "vm-100-exec",
      );
      assert.deepEqual(exec?.command, [
        "echo",
        "${{ inputs.a }}-${{ inputs.a }}",
        "x-y",
      ]);
    });
  },
);
