/**
 * Proves each swamp behaviour the harness reproduces, one per test, with a
 * tiny inline stand-in model.
 */

import assert from "node:assert/strict";
import { z } from "npm:zod@4";
import {
  type CheckContext,
  type DataHandle,
  type Definition,
  formatRun,
  inferMethodKind,
  isMutatingKind,
  type MethodContext,
  type ModelLike,
  SwampRepo,
} from "../../harness/swamp.ts";

/** Calls made to method bodies, so tests can tell whether one ran. */
let calls: string[] = [];

const guestSchema = z.object({ vmid: z.number(), status: z.string() });
const configSchema = z.object({
  vmid: z.number(),
  cores: z.number().default(1),
});
const vmArgs = z.object({ vmid: z.number() });

function standInModel(): ModelLike {
  return {
    type: "@test/harness/StandIn",
    version: "2026.01.01.1",
    globalArguments: z.object({
      host: z.string(),
      port: z.number().default(8006),
    }),
    resources: {
      guest: {
        description: "a guest",
        schema: guestSchema,
        lifetime: "infinite",
        garbageCollection: 20,
      },
      config: {
        description: "a guest's config",
        schema: configSchema,
        lifetime: "infinite",
        garbageCollection: 20,
      },
    },
    methods: {
      create: {
        description: "writes a running guest",
        arguments: vmArgs,
        execute: async (args: { vmid: number }, ctx: MethodContext) => {
          calls.push("create");
          const h = await ctx.writeResource("guest", `vm-${args.vmid}`, {
            vmid: args.vmid,
            status: "running",
          });
          return { dataHandles: [h] };
        },
      },
      get: {
        description: "reads a guest (read kind by name)",
        arguments: vmArgs,
        execute: async (args: { vmid: number }, ctx: MethodContext) => {
          calls.push("get");
          await ctx.readResource(`vm-${args.vmid}`);
          return { dataHandles: [] };
        },
      },
      update: {
        description: "update kind by name",
        arguments: vmArgs,
        execute: (_args: unknown, _ctx: MethodContext) => {
          calls.push("update");
          return Promise.resolve({ dataHandles: [] });
        },
      },
      delete: {
        description: "delete kind by name; writes nothing itself",
        arguments: vmArgs,
        execute: (_args: unknown, _ctx: MethodContext) => {
          calls.push("delete");
          return Promise.resolve({ dataHandles: [] });
        },
      },
      destroy: {
        description: "named like a delete, but explicitly an action",
        kind: "action",
        arguments: vmArgs,
        execute: async (args: { vmid: number }, ctx: MethodContext) => {
          calls.push("destroy");
          await ctx.writeResource("guest", `vm-${args.vmid}`, {
            vmid: args.vmid,
            status: "destroyed",
          });
          return { dataHandles: [] };
        },
      },
      remove: {
        description: "delete kind by name; fails after writing",
        arguments: vmArgs,
        execute: async (args: { vmid: number }, ctx: MethodContext) => {
          await ctx.writeResource("guest", `vm-${args.vmid}`, {
            vmid: args.vmid,
            status: "removing",
          });
          throw new Error("remove failed");
        },
      },
      recordThenFail: {
        description: "writes evidence, then throws",
        arguments: vmArgs,
        execute: async (args: { vmid: number }, ctx: MethodContext) => {
          await ctx.writeResource("guest", `vm-${args.vmid}`, {
            vmid: args.vmid,
            status: "broken",
          });
          throw new Error(`guest vm-${args.vmid} exited 1`);
        },
      },
      write: {
        description: "writes whatever it is told to",
        arguments: z.object({
          spec: z.string(),
          name: z.string(),
          data: z.record(z.string(), z.unknown()),
          times: z.number().default(1),
        }),
        execute: async (
          args: {
            spec: string;
            name: string;
            data: Record<string, unknown>;
            times: number;
          },
          ctx: MethodContext,
        ) => {
          for (let i = 0; i < args.times; i++) {
            await ctx.writeResource(args.spec, args.name, args.data);
          }
          return { dataHandles: [] };
        },
      },
      duplicate: {
        description: "returns two handles of one instance",
        arguments: vmArgs,
        execute: async (args: { vmid: number }, ctx: MethodContext) => {
          const a = await ctx.writeResource("guest", `vm-${args.vmid}`, {
            vmid: args.vmid,
            status: "a",
          });
          const b = await ctx.writeResource("config", `vm-${args.vmid}`, {
            vmid: args.vmid,
            cores: 2,
          });
          return { dataHandles: [a, b] };
        },
      },
      silent: {
        description: "writes and resolves to nothing",
        arguments: vmArgs,
        execute: async (args: { vmid: number }, ctx: MethodContext) => {
          await ctx.writeResource("guest", `vm-${args.vmid}`, {
            vmid: args.vmid,
            status: "running",
          });
        },
      },
      probe: {
        description: "reports what it received",
        arguments: z.object({
          host: z.string().optional(),
          count: z.number().optional(),
          flag: z.boolean().optional(),
        }),
        execute: (args: unknown, ctx: MethodContext) => {
          probed = { args, ctx };
          return Promise.resolve({ dataHandles: [] });
        },
      },
    },
  };
}

let probed: { args: unknown; ctx: MethodContext } | undefined;

const definition: Definition = {
  name: "pve-lab",
  globalArgs: { host: "pve.example" },
};

function repo(
  model: ModelLike = standInModel(),
  def: Definition = definition,
): SwampRepo {
  calls = [];
  probed = undefined;
  return new SwampRepo(model, def);
}

function withChecks(checks: ModelLike["checks"]): ModelLike {
  return { ...standInModel(), checks };
}

const passing = (ran: string[], name: string) => ({
  description: name,
  execute: (_ctx: CheckContext) => {
    ran.push(name);
    return Promise.resolve({ pass: true });
  },
});

// ---------------------------------------------------------------- arguments

Deno.test("global args failing globalArguments fail the run, naming the field path", async () => {
  const r = repo(standInModel(), {
    name: "pve-lab",
    globalArgs: { host: "h", port: "many" },
  });
  const result = await r.run("create", { vmid: 1 });
  assert.equal(result.status, "failed");
  assert.equal(result.errorCode, "method_execution_failed");
  assert.equal(
    result.error,
    'Global arguments validation failed: Invalid input: expected number, received string at "port"',
  );
  assert.deepEqual(result.written, []);
  assert.deepEqual(r.instances(), []);
  assert.deepEqual(calls, []);
});

Deno.test("unknown global args are rejected", async () => {
  const r = repo(standInModel(), { name: "x", globalArgs: { hots: "h" } });
  const result = await r.run("create", { vmid: 1 });
  assert.equal(
    result.error,
    "Global arguments validation failed: Unknown argument(s): hots. Valid arguments are: host, port",
  );
});

Deno.test("global args are parsed leniently: missing fields allowed, defaults applied", async () => {
  const r = repo(standInModel(), { name: "x", globalArgs: {} });
  const result = await r.run("probe");
  assert.equal(result.status, "succeeded");
  assert.deepEqual(probed?.ctx.globalArgs, { port: 8006 });
});

Deno.test("method args failing their schema fail before execute, listing path and message", async () => {
  const r = repo();
  const result = await r.run("create", { vmid: "x" });
  assert.equal(result.status, "failed");
  assert.equal(
    result.error,
    'Method arguments validation failed: Invalid input: expected number, received string at "vmid"',
  );
  assert.deepEqual(calls, []);
  assert.deepEqual(result.written, []);
});

Deno.test("method args are the arguments schema parsed over {...globalArgs, ...methodArgs}", async () => {
  const r = repo();
  await r.run("probe");
  assert.deepEqual(probed?.args, { host: "pve.example" });
  await r.run("probe", { host: "override" });
  assert.deepEqual(probed?.args, { host: "override" });
});

Deno.test("string inputs are coerced to the schema's number and boolean types", async () => {
  const r = repo();
  await r.run("probe", { count: "5", flag: "true" });
  assert.deepEqual(probed?.args, { host: "pve.example", count: 5, flag: true });
});

Deno.test("an input that is not a method argument fails with validation_failed", async () => {
  const result = await repo().run("create", { vmid: 1, vmdi: 2 });
  assert.equal(result.errorCode, "validation_failed");
  assert.equal(
    result.error,
    "Unknown method input(s): vmdi. Valid inputs are: vmid",
  );
});

Deno.test("an unknown method fails with unknown_method", async () => {
  const result = await repo().run("start");
  assert.equal(result.errorCode, "unknown_method");
  assert.match(
    result.error!,
    /^Unknown method 'start' for type '@test\/harness\/standin'\. Available methods: create, get,/,
  );
});

// ------------------------------------------------------------ writeResource

Deno.test("writeResource creates a new version on every call, even for equal data", async () => {
  const r = repo();
  await r.run("create", { vmid: 1 });
  const second = await r.run("create", { vmid: 1 });
  assert.deepEqual(second.written.map((w) => w.version), [2]);
  assert.deepEqual(r.versions("vm-1").map((v) => v.data), [
    { vmid: 1, status: "running" },
    { vmid: 1, status: "running" },
  ]);
});

Deno.test("writeResource to an undeclared spec throws, failing the method", async () => {
  const result = await repo().run("write", {
    spec: "disk",
    name: "d1",
    data: {},
  });
  assert.equal(result.status, "failed");
  assert.equal(
    result.error,
    "Undeclared resource spec 'disk' in model '@test/harness/standin'. Declared resource specs: guest, config",
  );
});

Deno.test("writeResource refuses the reserved instance name latest, in any case", async () => {
  const r = repo();
  for (const name of ["latest", "LaTeSt"]) {
    const result = await r.run("write", {
      spec: "guest",
      name,
      data: { vmid: 1, status: "x" },
    });
    assert.equal(
      result.error,
      `Data name '${name}' is reserved for internal use in model '@test/harness/standin'. Use a different name.`,
    );
  }
  assert.deepEqual(r.instances(), []);
});

Deno.test("writeResource schema mismatch only warns and stores the original object", async () => {
  const r = repo();
  const result = await r.run("write", {
    spec: "config",
    name: "cfg",
    data: { vmid: "seven" },
  });
  assert.equal(result.status, "succeeded");
  assert.deepEqual(r.latest("cfg"), { vmid: "seven" }); // no `cores` default
  assert.deepEqual(result.logs, [{
    level: "warning",
    message:
      `Resource 'config' (instance 'cfg') data does not match schema: Invalid input: expected number, received string at "vmid"`,
    props: {
      specName: "config",
      instanceName: "cfg",
      error: 'Invalid input: expected number, received string at "vmid"',
    },
  }]);
});

Deno.test("two specs sharing an instance name share one version stream", async () => {
  const r = repo();
  await r.run("write", {
    spec: "guest",
    name: "vm-1",
    data: { vmid: 1, status: "up" },
  });
  await r.run("write", { spec: "config", name: "vm-1", data: { vmid: 1 } });
  assert.deepEqual(
    r.versions("vm-1").map((v) => `${v.spec} v${v.version}`),
    ["guest v1", "config v2"],
  );
});

Deno.test("writeResource returns a swamp DataHandle", async () => {
  const r = repo();
  const result = await r.run("create", { vmid: 7 });
  const handle: DataHandle = result.dataHandles[0];
  assert.equal(typeof handle.dataId, "string");
  assert.deepEqual({ ...handle, dataId: "<uuid>" }, {
    name: "vm-7",
    specName: "guest",
    kind: "resource",
    dataId: "<uuid>",
    version: 1,
    size: JSON.stringify({ vmid: 7, status: "running" }).length,
    tags: { type: "resource", specName: "guest", modelName: "pve-lab" },
    metadata: {
      contentType: "application/json",
      lifetime: "infinite",
      garbageCollection: 20,
      streaming: false,
      tags: { type: "resource", specName: "guest", modelName: "pve-lab" },
      ownerDefinition: { ownerType: "model-method", ownerRef: r.modelId },
    },
  });
});

Deno.test("without returned handles, every write of the run is an output", async () => {
  const result = await repo().run("write", {
    spec: "guest",
    name: "vm-1",
    data: { vmid: 1, status: "up" },
    times: 2,
  });
  assert.deepEqual(result.dataHandles.map((h) => h.version), [1, 2]);
});

// ------------------------------------------------------- context of a method

Deno.test("readResource returns the latest or a given version, or null", async () => {
  const seen: unknown[] = [];
  const model = standInModel();
  model.methods.probe.execute = async (_args, ctx) => {
    seen.push(await ctx.readResource("vm-1"));
    seen.push(await ctx.readResource("vm-1", 1));
    seen.push(await ctx.readResource("vm-1", 9));
    seen.push(await ctx.readResource("vm-404"));
    return { dataHandles: [] };
  };
  const shared = new SwampRepo(model, definition);
  await shared.run("create", { vmid: 1 });
  await shared.run("destroy", { vmid: 1 });
  await shared.run("probe");
  assert.deepEqual(seen, [
    { vmid: 1, status: "destroyed" },
    { vmid: 1, status: "running" },
    null,
    null,
  ]);
});

Deno.test("ctx.logger lines are collected with their level, rendered props and props", async () => {
  const model = standInModel();
  model.methods.probe.execute = (_args, ctx) => {
    ctx.logger.debug("d");
    ctx.logger.info("guest {vmid} is {state}", { vmid: 7, state: "up" });
    ctx.logger.warn("w");
    ctx.logger.warning("literal {{braces}}");
    ctx.logger.error("e {missing}", {});
    return Promise.resolve({ dataHandles: [] });
  };
  const result = await new SwampRepo(model, definition).run("probe");
  assert.deepEqual(result.logs, [
    { level: "debug", message: "d" },
    {
      level: "info",
      message: "guest 7 is up",
      props: { vmid: 7, state: "up" },
    },
    { level: "warning", message: "w" },
    { level: "warning", message: "literal {braces}" },
    { level: "error", message: "e " },
  ]);
});

Deno.test("ctx carries signal, globalArgs, definition, methodName and modelId", async () => {
  const controller = new AbortController();
  const r = repo(standInModel(), {
    name: "pve-lab",
    id: "11111111-2222-4333-8444-555555555555",
    globalArgs: { host: "h" },
    tags: { env: "lab" },
  });
  await r.run("probe", {}, { signal: controller.signal });
  const ctx = probed!.ctx;
  assert.equal(ctx.signal, controller.signal);
  assert.deepEqual(ctx.globalArgs, { host: "h", port: 8006 });
  assert.deepEqual(ctx.definition, {
    id: "11111111-2222-4333-8444-555555555555",
    name: "pve-lab",
    version: 1,
    tags: { env: "lab" },
  });
  assert.equal(ctx.methodName, "probe");
  assert.equal(ctx.modelId, "11111111-2222-4333-8444-555555555555");
  await r.run("probe");
  assert.equal(probed!.ctx.signal.aborted, false);
});

Deno.test("ctx.extensionFile resolves shipped files and throws otherwise", async () => {
  const r = repo();
  await r.run("probe", {}, {
    extensionFiles: { "_lib/glue.wasm": "/abs/_lib/glue.wasm" },
  });
  const ctx = probed!.ctx;
  assert.equal(ctx.extensionFile("_lib/glue.wasm"), "/abs/_lib/glue.wasm");
  assert.throws(
    () => ctx.extensionFile("other.wasm"),
    /Extension file not found/,
  );
  assert.throws(() => ctx.extensionFile("../x"), /Unsafe relative path/);
  await r.run("probe");
  assert.throws(
    () => probed!.ctx.extensionFile("_lib/glue.wasm"),
    /only available for models and reports shipped via an extension manifest/,
  );
});

Deno.test("console output of a method is captured, not printed", async () => {
  const model = standInModel();
  model.methods.probe.execute = () => {
    console.log("hello", 42, { a: 1 });
    return Promise.resolve({ dataHandles: [] });
  };
  const result = await new SwampRepo(model, definition).run("probe");
  assert.deepEqual(result.console, ['hello 42 {"a":1}']);
});

// ---------------------------------------------------------------- kinds

Deno.test("method kind: explicit kind wins, else the whole lower-cased name", () => {
  assert.equal(inferMethodKind("delete", { kind: "action" }), "action");
  assert.equal(inferMethodKind("Delete"), "delete");
  assert.equal(inferMethodKind("deleteGuest"), undefined);
  assert.equal(inferMethodKind("describe"), "read");
  assert.equal(inferMethodKind("patch"), "update");
  assert.equal(inferMethodKind("find"), "list");
  assert.equal(isMutatingKind(undefined), true);
  assert.equal(isMutatingKind("action"), true);
  assert.equal(isMutatingKind("read"), false);
});

Deno.test("a successful delete-kind method tombstones every declared instance of the definition", async () => {
  const r = repo();
  await r.run("create", { vmid: 1 });
  await r.run("create", { vmid: 2 });
  await r.run("write", { spec: "config", name: "cfg-1", data: { vmid: 1 } });
  const result = await r.run("delete", { vmid: 1 });
  assert.equal(result.status, "succeeded");
  assert.deepEqual(
    result.written.map((w) => [w.instance, w.version, w.tombstone]),
    [["cfg-1", 2, true], ["vm-1", 2, true], ["vm-2", 2, true]],
  );
  const marker = r.latest("vm-2") as Record<string, unknown>;
  assert.equal(marker.vmid, 2);
  assert.equal(marker.status, "running");
  assert.equal(marker.deletedByMethod, "delete");
  assert.ok(!Number.isNaN(Date.parse(String(marker.deletedAt))));
  assert.equal(result.dataHandles[0].metadata.lifecycle, "deleted");
});

Deno.test("a method with an explicit non-delete kind writes no tombstones", async () => {
  const r = repo();
  await r.run("create", { vmid: 1 });
  const result = await r.run("destroy", { vmid: 1 }); // kind: "action"
  assert.equal(result.kind, "action");
  assert.deepEqual(result.written.map((w) => w.tombstone), [false]);
  assert.deepEqual(r.latest("vm-1"), { vmid: 1, status: "destroyed" });
});

Deno.test("a failed delete-kind method writes no tombstones", async () => {
  const r = repo();
  await r.run("create", { vmid: 2 });
  const result = await r.run("remove", { vmid: 1 });
  assert.equal(result.status, "failed");
  assert.deepEqual(r.versions("vm-2").map((v) => v.tombstone), [false]);
});

Deno.test("a read-kind method fails fast when all declared instances are tombstoned", async () => {
  const r = repo();
  await r.run("create", { vmid: 1 });
  await r.run("delete", { vmid: 1 });
  calls = [];
  const result = await r.run("get", { vmid: 1 });
  assert.equal(result.status, "failed");
  const deletedAt = (r.latest("vm-1") as { deletedAt: string }).deletedAt;
  assert.equal(
    result.error,
    `Resource 'vm-1' was deleted at ${deletedAt} — run a 'create' method to re-create it first`,
  );
  assert.deepEqual(calls, []);
});

Deno.test("an update-kind method fails fast too when all declared instances are tombstoned", async () => {
  const r = repo();
  await r.run("create", { vmid: 1 });
  await r.run("delete", { vmid: 1 });
  const result = await r.run("update", { vmid: 1 });
  assert.match(result.error!, /^Resource 'vm-1' was deleted at /);
});

Deno.test("a read-kind method runs while any declared instance is live", async () => {
  const r = repo();
  await r.run("create", { vmid: 1 });
  await r.run("delete", { vmid: 1 });
  await r.run("create", { vmid: 2 });
  const result = await r.run("get", { vmid: 1 });
  assert.equal(result.status, "succeeded");
});

Deno.test("writing to a tombstoned instance makes the new version the live one", async () => {
  const r = repo();
  await r.run("create", { vmid: 1 });
  await r.run("delete", { vmid: 1 });
  await r.run("create", { vmid: 1 });
  assert.deepEqual(r.versions("vm-1").map((v) => v.tombstone), [
    false,
    true,
    false,
  ]);
  assert.equal((await r.run("get", { vmid: 1 })).status, "succeeded");
});

// ---------------------------------------------------------- pre-flight checks

Deno.test("a failing pre-flight check fails a mutating method before it runs", async () => {
  const model = withChecks({
    reachable: {
      description: "host answers",
      execute: (ctx) =>
        Promise.resolve({
          pass: false,
          errors: [`${ctx.globalArgs.host} did not answer`],
        }),
    },
    quota: {
      description: "room left",
      execute: () => Promise.resolve({ pass: false }),
    },
  });
  const r = repo(model);
  const result = await r.run("create", { vmid: 1 });
  assert.equal(result.errorCode, "method_execution_failed");
  assert.equal(
    result.error,
    [
      'Pre-flight checks failed for "pve-lab" → create:',
      "  reachable:",
      "    - pve.example did not answer",
      "  quota:",
      "    - Check failed",
    ].join("\n"),
  );
  assert.deepEqual(calls, []);
  assert.deepEqual(r.instances(), []);
  assert.deepEqual(result.logs, [{
    level: "info",
    message: "Running 2 pre-flight check(s)",
  }]);
});

Deno.test("pre-flight checks run for mutating kinds only, not read or list", async () => {
  const ran: string[] = [];
  const r = repo(withChecks({ c: passing(ran, "c") }));
  await r.run("create", { vmid: 1 });
  await r.run("destroy", { vmid: 1 }); // action
  await r.run("probe"); // unrecognised name: mutating
  await r.run("get", { vmid: 1 }); // read
  assert.deepEqual(ran, ["c", "c", "c"]);
});

Deno.test("pre-flight checks honour appliesTo", async () => {
  const ran: string[] = [];
  const r = repo(withChecks({
    onlyDelete: { ...passing(ran, "onlyDelete"), appliesTo: ["delete"] },
  }));
  await r.run("create", { vmid: 1 });
  await r.run("delete", { vmid: 1 });
  assert.deepEqual(ran, ["onlyDelete"]);
});

Deno.test("skip flags drop checks, except those the definition requires", async () => {
  const ran: string[] = [];
  const model = withChecks({
    a: passing(ran, "a"),
    b: { ...passing(ran, "b"), labels: ["live"] },
    c: passing(ran, "c"),
  });
  const r = repo(model, { ...definition, checks: { require: ["c"] } });
  await r.run("create", { vmid: 1 }, { skipChecks: true });
  assert.deepEqual(ran, ["c"]);
  ran.length = 0;
  await r.run("create", { vmid: 1 }, {
    skipCheckNames: ["a"],
    skipCheckLabels: ["live"],
  });
  assert.deepEqual(ran, ["c"]);
  const skipping = repo(model, { ...definition, checks: { skip: ["a", "b"] } });
  ran.length = 0;
  await skipping.run("create", { vmid: 1 });
  assert.deepEqual(ran, ["c"]);
});

Deno.test("a throwing or malformed check counts as a failure with its message", async () => {
  const model = withChecks({
    boom: {
      description: "throws",
      execute: () => Promise.reject(new Error("no route to host")),
    },
    odd: {
      description: "malformed",
      execute: () =>
        Promise.resolve({ ok: true } as unknown as { pass: boolean }),
    },
  });
  const result = await repo(model).run("create", { vmid: 1 });
  assert.equal(
    result.error,
    [
      'Pre-flight checks failed for "pve-lab" → create:',
      "  boom:",
      "    - no route to host",
      "  odd:",
      "    - Check returned invalid result (expected { pass: boolean })",
    ].join("\n"),
  );
});

Deno.test("a check gets globalArgs and definition but no data writers", async () => {
  let seen: CheckContext | undefined;
  const r = repo(withChecks({
    look: {
      description: "looks",
      execute: (ctx) => {
        seen = ctx;
        return Promise.resolve({ pass: true });
      },
    },
  }));
  await r.run("create", { vmid: 3 });
  assert.deepEqual(seen?.globalArgs, { host: "pve.example", port: 8006 });
  assert.equal(seen?.methodName, "create");
  assert.equal("writeResource" in seen!, false);
  assert.deepEqual(seen?.unresolvedMethodArgs, {
    host: "pve.example",
    port: 8006,
    vmid: 3,
  });
});

// ------------------------------------------------------------------ failure

Deno.test("a throw from execute fails the run with its message and keeps earlier writes", async () => {
  const r = repo();
  const result = await r.run("recordThenFail", { vmid: 9 });
  assert.equal(result.status, "failed");
  assert.equal(result.errorCode, "method_execution_failed");
  assert.equal(result.error, "guest vm-9 exited 1");
  assert.deepEqual(result.written.map((w) => w.data), [
    { vmid: 9, status: "broken" },
  ]);
  assert.deepEqual(r.latest("vm-9"), { vmid: 9, status: "broken" });
  assert.deepEqual(result.dataHandles.map((h) => h.name), ["vm-9"]);
});

Deno.test("returned handles sharing an instance name fail the method", async () => {
  const r = repo();
  const result = await r.run("duplicate", { vmid: 4 });
  assert.equal(result.status, "failed");
  assert.equal(
    result.error,
    "Data output validation failed: Duplicate data instance name 'vm-4'",
  );
  assert.equal(r.versions("vm-4").length, 2); // the writes themselves stay
});

Deno.test("a method resolving to nothing fails, as swamp reads result.dataHandles", async () => {
  const result = await repo().run("silent", { vmid: 1 });
  assert.equal(result.status, "failed");
  assert.equal(
    result.error,
    "Cannot read properties of undefined (reading 'dataHandles')",
  );
  assert.equal(result.written.length, 1);
});

Deno.test("rollbackOnFailure removes a failed method's writes, and defers latest meanwhile", async () => {
  const model = standInModel();
  const seenDuring: unknown[] = [];
  model.methods.recordThenFail = {
    ...model.methods.recordThenFail,
    rollbackOnFailure: true,
    execute: async (args, ctx) => {
      const { vmid } = args as { vmid: number };
      await ctx.writeResource("guest", `vm-${vmid}`, { vmid, status: "new" });
      seenDuring.push(await ctx.readResource(`vm-${vmid}`));
      throw new Error("half done");
    },
  };
  const r = repo(model);
  await r.run("create", { vmid: 1 });
  const result = await r.run("recordThenFail", { vmid: 1 });
  assert.equal(result.error, "half done");
  assert.deepEqual(seenDuring, [{ vmid: 1, status: "running" }]);
  assert.deepEqual(result.written, []);
  assert.deepEqual(result.dataHandles, []);
  assert.deepEqual(r.versions("vm-1").map((v) => v.data), [
    { vmid: 1, status: "running" },
  ]);
});

// ---------------------------------------------------------- vault, loading

const secretModel = (): ModelLike => ({
  ...standInModel(),
  resources: {
    token: {
      schema: z.object({
        id: z.string(),
        secret: z.string().meta({ sensitive: true }),
      }),
      lifetime: "infinite",
      garbageCollection: 5,
    },
  },
});

Deno.test("sensitive resource fields make mutating methods fail without a vault", async () => {
  const result = await repo(secretModel()).run("write", {
    spec: "token",
    name: "t",
    data: { id: "a", secret: "s3cr3t" },
  });
  assert.equal(
    result.error,
    'Model "pve-lab" has sensitive resource output fields but no vault is configured. ' +
      "Create a vault before running this method: swamp vault create <type> <name>",
  );
});

Deno.test("with a vault, sensitive fields are stored as vault references and read back resolved", async () => {
  const r = new SwampRepo(secretModel(), definition, { vault: true });
  const result = await r.run("write", {
    spec: "token",
    name: "t",
    data: { id: "a", secret: "s3cr3t" },
  });
  assert.equal(result.status, "succeeded");
  const stored = r.versions("t")[0].data as { secret: string };
  assert.match(
    stored.secret,
    /^\$\{\{ vault\.get\('default', '.+-write-token-t-secret'\) \}\}$/,
  );
  assert.deepEqual(r.latest("t"), { id: "a", secret: "s3cr3t" });
});

Deno.test("a model swamp would not load is refused", () => {
  const model = standInModel();
  model.resources["guest-info"] = {
    schema: z.object({}),
    lifetime: "forever",
    garbageCollection: 0,
  };
  assert.throws(
    () => new SwampRepo(model, definition),
    /resource spec 'guest-info' contains '-'[\s\S]*lifetime must be[\s\S]*garbageCollection must be/,
  );
});

Deno.test("formatRun prints the outcome and the records written", async () => {
  const r = repo();
  await r.run("create", { vmid: 1 });
  const ok = await r.run("delete", { vmid: 1 });
  assert.match(
    formatRun(ok),
    /^Completed {2}delete on pve-lab succeeded in \d+ms\n {2}vm-1 v2 guest \(deleted\)$/,
  );
  const bad = await r.run("recordThenFail", { vmid: 2 });
  assert.match(
    formatRun(bad),
    /^Completed {2}recordThenFail on pve-lab failed in \d+ms\n {2}error \[method_execution_failed\]: guest vm-2 exited 1\n {2}vm-2 v1 guest$/,
  );
});

/** A model declaring a text file output `log`, whose `note` method writes one. */
function fileModel(): ModelLike {
  return {
    ...standInModel(),
    files: {
      log: {
        contentType: "text/plain",
        lifetime: "infinite",
        garbageCollection: 10,
      },
    },
    methods: {
      note: {
        description: "writes a text file, or says there is no file writer",
        arguments: z.object({ spec: z.string().default("log") }),
        execute: async (args: { spec: string }, ctx: MethodContext) => {
          if (!ctx.createFileWriter) throw new Error("no createFileWriter");
          const h = await ctx.createFileWriter(args.spec, "note-1")
            .writeText("one\ntwo\n");
          return { dataHandles: [h] };
        },
      },
    },
  };
}

Deno.test("createFileWriter stores a text as a version of a file output and returns its file handle", async () => {
  const r = repo(fileModel());
  const run = await r.run("note");
  assert.equal(run.status, "succeeded", run.error);
  const handle = run.dataHandles[0];
  assert.equal(handle.name, "note-1");
  assert.equal(handle.kind, "file");
  assert.equal(handle.specName, "log");
  assert.equal(handle.size, 8);
  assert.equal(handle.metadata.contentType, "text/plain");
  assert.equal(handle.tags.type, "file");
  assert.equal(r.latest("note-1"), "one\ntwo\n");
  assert.deepEqual(
    run.written.map((w) => [w.spec, w.instance, w.data]),
    [["log", "note-1", "one\ntwo\n"]],
  );
});

Deno.test("createFileWriter refuses a file spec the model does not declare, naming the declared ones", async () => {
  const run = await repo(fileModel()).run("note", { spec: "other" });
  assert.equal(run.status, "failed");
  assert.match(
    run.error ?? "",
    /Undeclared file spec 'other' .* Declared file specs: log/,
  );
});

Deno.test("with fileWriters: false a method's context has no createFileWriter", async () => {
  const r = new SwampRepo(fileModel(), definition, { fileWriters: false });
  const run = await r.run("note");
  assert.equal(run.status, "failed");
  assert.equal(run.error, "no createFileWriter");
});

Deno.test("a file spec without a content type is refused at load", () => {
  const model = fileModel();
  const bad = { ...model, files: { log: { lifetime: "infinite" } } };
  assert.throws(
    () => new SwampRepo(bad as unknown as ModelLike, definition),
    /files\.log\.contentType must be a string/,
  );
});
