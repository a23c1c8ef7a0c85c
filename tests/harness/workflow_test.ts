/**
 * Proves each rule of `swamp workflow run` the harness's runner reproduces (harness/workflow.ts),
 * one per test, with a tiny inline model: `note` records a value, `fail` throws, `slow` records
 * when it started and ended.
 */

import assert from "node:assert/strict";
import { z } from "npm:zod@4";
import {
  type MethodContext,
  type ModelLike,
  SwampRepo,
} from "../../harness/swamp.ts";
import { runWorkflow, stepStatuses } from "../../harness/workflow.ts";
import { parseWorkflow } from "../../harness/workflow_def.ts";

const spans: { start: number; end: number }[] = [];

function model(): ModelLike {
  const note = z.object({ value: z.unknown() });
  return {
    type: "@test/harness/workflows",
    version: "2026.01.01.1",
    globalArguments: z.object({}),
    resources: {
      note: {
        description: "a value",
        schema: z.object({ value: z.unknown() }),
        lifetime: "infinite",
        garbageCollection: 5,
      },
    },
    methods: {
      note: {
        description: "records `value` as `name`",
        kind: "action",
        arguments: z.object({ name: z.string(), value: z.unknown() }),
        execute: async (
          args: { name: string; value: unknown },
          ctx: MethodContext,
        ) => {
          note.parse({ value: args.value });
          const h = await ctx.writeResource("note", args.name, {
            value: args.value,
          });
          return { dataHandles: [h] };
        },
      },
      fail: {
        description: "fails",
        kind: "action",
        arguments: z.object({}),
        execute: () => Promise.reject(new Error("it failed")),
      },
      slow: {
        description: "takes 30 ms",
        kind: "action",
        arguments: z.object({}),
        execute: async () => {
          const start = performance.now();
          await new Promise((r) => setTimeout(r, 30));
          spans.push({ start, end: performance.now() });
          return { dataHandles: [] };
        },
      },
    },
  };
}

function repos(...names: string[]): Map<string, SwampRepo> {
  return new Map(
    names.map((n) => [n, new SwampRepo(model(), { name: n, globalArgs: {} })]),
  );
}

/** A workflow's YAML from its jobs (and optional inputs), with a fixed id and name. */
function wf(jobs: string, head = ""): string {
  return `id: 00000000-0000-4000-8000-000000000001\nname: test\n${head}jobs:\n${jobs}`;
}

const note = (step: string, name: string, value: string, extra = "") =>
  `      - name: ${step}\n${extra}        task:\n          type: model_method\n          modelIdOrName: m\n          methodName: note\n          inputs: { name: ${name}, value: ${value} }\n`;
const fail = (step: string, extra = "") =>
  `      - name: ${step}\n${extra}        task: { type: model_method, modelIdOrName: m, methodName: fail }\n`;

Deno.test("workflow: a job that depends on another's failure runs only when it failed", async () => {
  const text = wf(
    `  - name: change\n    steps:\n${fail("break")}` +
      `  - name: rollback\n    dependsOn: [{ job: change, condition: { type: failed } }]\n    steps:\n${
        note("undo", "u", "1")
      }` +
      `  - name: after\n    dependsOn: [{ job: change, condition: { type: succeeded } }]\n    steps:\n${
        note("next", "n", "1")
      }`,
  );
  const run = await runWorkflow(repos("m"), text);
  assert.equal(run.status, "failed");
  assert.deepEqual(stepStatuses(run), {
    break: "failed",
    undo: "succeeded",
    next: "skipped",
  });
  assert.deepEqual(run.jobs.map((j) => j.status), [
    "failed",
    "succeeded",
    "skipped",
  ]);
});

Deno.test("workflow: in a job no step starts after a failed level; they stay pending and the job fails", async () => {
  const text = wf(
    `  - name: j\n    steps:\n${fail("a")}${
      note(
        "b",
        "b",
        "1",
        "        dependsOn: [{ step: a, condition: { type: failed } }]\n",
      )
    }`,
  );
  const run = await runWorkflow(repos("m"), text);
  assert.deepEqual(stepStatuses(run), { a: "failed", b: "pending" });
  assert.equal(run.jobs[0].status, "failed");
});

Deno.test("workflow: a step whose dependency condition does not hold is skipped", async () => {
  const text = wf(
    `  - name: j\n    steps:\n${note("a", "a", "1")}${
      note(
        "b",
        "b",
        "1",
        "        dependsOn: [{ step: a, condition: { type: failed } }]\n",
      )
    }`,
  );
  const run = await runWorkflow(repos("m"), text);
  assert.equal(run.status, "succeeded");
  assert.deepEqual(stepStatuses(run), { a: "succeeded", b: "skipped" });
});

Deno.test("workflow: a truthy guard skips its step", async () => {
  const text = wf(
    `  - name: j\n    steps:\n${
      note("a", "a", "1", "        guard: ${{ inputs.skip }}\n")
    }`,
    "inputs:\n  properties:\n    skip: { type: boolean }\n",
  );
  const m = repos("m");
  assert.equal(
    stepStatuses(await runWorkflow(m, text, { inputs: { skip: "true" } })).a,
    "skipped",
  );
  assert.equal(
    stepStatuses(await runWorkflow(m, text, { inputs: { skip: false } })).a,
    "succeeded",
  );
});

Deno.test("workflow: allowFailure keeps a failed step from failing its job", async () => {
  const text = wf(
    `  - name: j\n    steps:\n${fail("a", "        allowFailure: true\n")}`,
  );
  const run = await runWorkflow(repos("m"), text);
  assert.equal(run.status, "succeeded");
  assert.equal(run.jobs[0].steps[0].allowedFailure, true);
});

Deno.test("workflow: forEach makes one step per item, named from self", async () => {
  const text = wf(
    `  - name: j\n    steps:\n      - name: n-\${{ self.v }}\n        forEach: { item: v, in: "\${{ inputs.values }}" }\n        task:\n          type: model_method\n          modelIdOrName: m\n          methodName: note\n          inputs: { name: "n-\${{ self.v }}", value: "\${{ self.v }}" }\n`,
    "inputs:\n  properties:\n    values: { type: array }\n",
  );
  const m = repos("m");
  const run = await runWorkflow(m, text, { inputs: { values: "[1,2]" } });
  assert.deepEqual(stepStatuses(run), {
    "n-1": "succeeded",
    "n-2": "succeeded",
  });
  assert.equal(
    m.get("m")!.latest("n-2") &&
      (m.get("m")!.latest("n-2") as { value: unknown }).value,
    2,
  );
});

Deno.test("workflow: a whole-string expression keeps its value's type; one inside text is text", async () => {
  const text = wf(
    `  - name: j\n    steps:\n${note("a", "a", '"${{ inputs.list }}"')}${
      note("b", "b", '"at ${{ inputs.list }}"')
    }`,
    "inputs:\n  properties:\n    list: { type: array }\n",
  );
  const m = repos("m");
  await runWorkflow(m, text, { inputs: { list: [1, 2] } });
  assert.deepEqual(m.get("m")!.latest("a"), { value: [1, 2] });
  assert.deepEqual(m.get("m")!.latest("b"), {
    value: "at [\n  1,\n  2\n]",
  });
});

Deno.test("workflow: a value made of two expressions that starts and ends with one stays as written", async () => {
  const text = wf(
    `  - name: j\n    steps:\n${
      note("a", "a", '"${{ inputs.x }}-${{ inputs.x }}"')
    }`,
    "inputs:\n  properties:\n    x: { type: string }\n",
  );
  const m = repos("m");
  await runWorkflow(m, text, { inputs: { x: "y" } });
  assert.deepEqual(m.get("m")!.latest("a"), {
    value: "${{ inputs.x }}-${{ inputs.x }}",
  });
});

Deno.test("workflow: data.latest in a later step reads what an earlier step wrote", async () => {
  const text = wf(
    `  - name: j\n    steps:\n${note("a", "a", "41")}${
      note(
        "b",
        "b",
        '"${{ data.latest(\\"m\\", \\"a\\").attributes.value + 1 }}"',
        "        dependsOn: [{ step: a, condition: { type: succeeded } }]\n",
      )
    }`,
  );
  const m = repos("m");
  await runWorkflow(m, text);
  assert.deepEqual(m.get("m")!.latest("b"), { value: 42 });
});

Deno.test("workflow: an assert fails its step with the interpolated message", async () => {
  const text = wf(
    "  - name: j\n    steps:\n      - name: check\n        task:\n          type: assert\n          expr: inputs.n == 1\n          message: n is ${{ inputs.n }}\n",
    "inputs:\n  properties:\n    n: { type: integer }\n",
  );
  const run = await runWorkflow(repos("m"), text, { inputs: { n: "2" } });
  assert.equal(run.status, "failed");
  assert.deepEqual(run.jobs[0].steps[0].assertResult, {
    passed: false,
    message: "n is 2",
    expr: "inputs.n == 1",
  });
});

Deno.test("workflow: steps on one definition run one at a time, on two side by side", async () => {
  const text = (defs: string[]) =>
    wf(
      `  - name: j\n    steps:\n${
        defs.map((d, i) =>
          `      - name: s${i}\n        task: { type: model_method, modelIdOrName: ${d}, methodName: slow }\n`
        ).join("")
      }`,
    );
  const overlaps = () =>
    spans.some((a, i) =>
      spans.some((b, j) => i < j && a.start < b.end && b.start < a.end)
    );
  spans.length = 0;
  await runWorkflow(repos("m"), text(["m", "m", "m"]));
  assert.equal(overlaps(), false, "one definition: one at a time");
  spans.length = 0;
  await runWorkflow(repos("m", "n"), text(["m", "n"]));
  assert.equal(overlaps(), true, "two definitions: side by side");
});

Deno.test("workflow: a step naming no definition fails with Model not found", async () => {
  const text = wf(
    "  - name: j\n    steps:\n      - name: a\n        task: { type: model_method, modelIdOrName: nope, methodName: note }\n",
  );
  const run = await runWorkflow(repos("m"), text);
  assert.equal(run.jobs[0].steps[0].error, "Model not found: nope");
});

Deno.test("workflow: inputs are coerced, defaulted and validated before anything runs", async () => {
  const head =
    "inputs:\n  properties:\n    n: { type: integer, default: 3 }\n    mode: { type: string, enum: [a, b] }\n  required: [mode]\n";
  const text = wf(
    `  - name: j\n    steps:\n${note("a", "a", '"${{ inputs.n }}"')}`,
    head,
  );
  const m = repos("m");
  const run = await runWorkflow(m, text, { inputs: { mode: "a" } });
  assert.deepEqual(run.inputs, { mode: "a", n: 3 });
  await assert.rejects(
    runWorkflow(m, text, { inputs: { mode: "c", n: "x" } }),
    /Input validation failed:\n {2}mode must be one of: "a", "b"\n {2}n must be an integer/,
  );
  await assert.rejects(runWorkflow(m, text), /mode is required/);
});

Deno.test("workflow: what swamp refuses to load is refused (unknown keys, a wrapped assert expr, a bad cron, a bad name)", () => {
  const jobs = `  - name: j\n    steps:\n${note("a", "a", "1")}`;
  assert.throws(
    () => parseWorkflow(wf(jobs, "trigers: {}\n")),
    /unknown workflow key 'trigers'/,
  );
  assert.throws(
    () =>
      parseWorkflow(
        wf(
          `  - name: j\n    steps:\n${
            note("a", "a", "1", "        lables: {}\n")
          }`,
        ),
      ),
    /step 'a': unknown key 'lables'/,
  );
  assert.throws(
    () =>
      parseWorkflow(
        wf(
          "  - name: j\n    steps:\n      - name: c\n        task: { type: assert, expr: '${{ true }}', message: m }\n",
        ),
      ),
    /remove the \$\{\{ \}\} wrapper/,
  );
  assert.throws(
    () => parseWorkflow(wf(jobs, 'trigger: { schedule: "every hour" }\n')),
    /Invalid cron expression/,
  );
  assert.throws(
    () => parseWorkflow(wf(jobs).replace("name: test", "name: Test_Flow")),
    /Workflow name must be/,
  );
});
