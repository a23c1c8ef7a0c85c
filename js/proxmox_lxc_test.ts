/**
 * The lxc model's methods run through `execute` exactly as swamp calls them, against a scripted PVE
 * on loopback: success and failure paths, and what each writes.
 *
 * @module
 */
import assert from "node:assert/strict";
import { model } from "./proxmox_lxc.ts";
import {
  parseArgs,
  type Script,
  scriptedContext,
  scriptedPve,
} from "./_lib/scripted_pve.ts";

/** A node pve1 holding container 200 (running) with `tags`. */
function cluster(tags?: string): Script {
  return {
    "GET /cluster/resources": {
      data: [
        { id: "node/pve1", type: "node", node: "pve1", status: "online" },
        {
          id: "lxc/200",
          type: "lxc",
          vmid: 200,
          node: "pve1",
          name: "ct",
          status: "running",
          template: 0,
          ...(tags ? { tags } : {}),
        },
      ],
    },
    "GET /nodes/pve1/lxc/200/status/current": {
      data: {
        vmid: 200,
        type: "lxc",
        name: "ct",
        status: "running",
        cpus: 2,
        maxmem: 536870912,
        uptime: 60,
        ha: { managed: 0 },
        ...(tags ? { tags } : {}),
      },
    },
    "GET /nodes/pve1/lxc/200/config": {
      data: { hostname: "ct", ...(tags ? { tags } : {}) },
    },
  };
}

async function run(
  method: keyof typeof model.methods,
  args: Record<string, unknown>,
  script: Script,
) {
  const pve = scriptedPve(script);
  const ctx = scriptedContext(pve);
  try {
    const m = model.methods[method];
    // deno-lint-ignore no-explicit-any
    const parsed = parseArgs(m.arguments as any, ctx, args) as any;
    const outcome = await m.execute(parsed, ctx).then(
      (result) => ({ result, error: undefined }),
      (error: Error) => ({ result: undefined, error }),
    );
    return { ...outcome, ctx, requests: pve.requests };
  } finally {
    await pve.close();
  }
}

Deno.test("lxc lookup records the container's live state as ct-<vmid>", async () => {
  const r = await run("lookup", { vmid: 200 }, cluster());
  assert.equal(r.error, undefined);
  const [w] = r.ctx.written;
  assert.equal(w.instance, "ct-200");
  assert.equal(w.data.status, "running");
  assert.equal(w.data.present, true);
  assert.equal(r.result?.dataHandles.length, 1);
});

Deno.test("lxc lookup by a hostname no container has fails naming it", async () => {
  const r = await run("lookup", { vmName: "nope" }, cluster());
  assert.ok(r.error, "lookup must fail");
  assert.match(r.error.message, /nope/);
});

Deno.test("lxc start of a running container succeeds without sending a start", async () => {
  const r = await run("start", { vmid: 200 }, cluster("swamp"));
  assert.equal(r.error, undefined);
  assert.ok(!r.requests.some((q) => q.startsWith("POST")), r.requests.join());
  assert.equal(r.ctx.written.at(-1)?.data.status, "running");
});

Deno.test("lxc stop refuses a container without the swamp tag and sends no stop", async () => {
  const r = await run("stop", { vmid: 200 }, cluster());
  assert.ok(r.error, "stop must be refused");
  assert.match(r.error.message, /swamp/);
  assert.ok(!r.requests.some((q) => q.startsWith("POST")), r.requests.join());
});

Deno.test("lxc create refuses a hostname that is not a DNS name before any request", () => {
  const parsed = model.methods.create.arguments.safeParse({
    vmid: 300,
    ostemplate: "local:vztmpl/debian-12.tar.zst",
    hostname: "not a hostname",
    storage: "local-lvm",
  });
  assert.equal(parsed.success, false);
});
