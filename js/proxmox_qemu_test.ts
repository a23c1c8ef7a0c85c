/**
 * The qemu model's methods run through `execute` exactly as swamp calls them, against a scripted PVE
 * on loopback: success and failure paths, and what each writes.
 *
 * @module
 */
import assert from "node:assert/strict";
import { model } from "./proxmox_qemu.ts";
import {
  type Answer,
  parseArgs,
  type Script,
  scriptedContext,
  scriptedPve,
} from "./_lib/scripted_pve.ts";

const VM_100 = {
  vmid: 100,
  name: "web",
  status: "running",
  qmpstatus: "running",
  ha: { managed: 0 },
  cpus: 1,
  maxmem: 536870912,
  tags: "swamp",
  agent: 1,
  uptime: 60,
};

/** A node pve1 holding VM 100 (running, agent up). */
const CLUSTER: Script = {
  "GET /cluster/resources": {
    data: [
      { id: "node/pve1", type: "node", node: "pve1", status: "online" },
      {
        id: "qemu/100",
        type: "qemu",
        vmid: 100,
        node: "pve1",
        name: "web",
        status: "running",
        template: 0,
        tags: "swamp",
      },
    ],
  },
  "GET /nodes/pve1/qemu/100/status/current": { data: VM_100 },
  "GET /nodes/pve1/qemu/100/config": {
    data: {
      name: "web",
      agent: 1,
      tags: "swamp",
      smbios1: "uuid=00000000-0000-4000-8000-000000000100",
    },
  },
};

/** The agent runs a command and reports it exited with `code`, printing `out`. */
function agentExits(code: number, out = ""): Script {
  return {
    "POST /nodes/pve1/qemu/100/agent/exec": { data: { pid: 7 } },
    "GET /nodes/pve1/qemu/100/agent/exec-status": {
      data: {
        exited: 1,
        exitcode: code,
        ...(out ? { "out-data": out } : {}),
      },
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

Deno.test("qemu lookup records the VM's live state as vm-<vmid>", async () => {
  const r = await run("lookup", { vmid: 100 }, CLUSTER);
  assert.equal(r.error, undefined);
  const [w] = r.ctx.written;
  assert.equal(w.spec, "guest");
  assert.equal(w.instance, "vm-100");
  assert.equal(w.data.status, "running");
  assert.equal(w.data.present, true);
  assert.equal(w.data.name, "web");
  assert.equal(r.result?.dataHandles.length, 1);
});

Deno.test("qemu lookup fails and writes nothing when PVE's status read is refused", async () => {
  const refused: Answer = { status: 500, message: "got timeout" };
  const r = await run("lookup", { vmid: 100 }, {
    ...CLUSTER,
    "GET /nodes/pve1/qemu/100/status/current": refused,
  });
  assert.ok(r.error, "lookup must fail");
  assert.match(r.error.message, /status\/current|got timeout/);
  assert.deepEqual(r.ctx.written, []);
});

Deno.test("qemu guestExec of a command that exits 0 succeeds and records exitCode 0", async () => {
  const r = await run("guestExec", { vmid: 100, command: ["true"] }, {
    ...CLUSTER,
    ...agentExits(0, "ok\n"),
  });
  assert.equal(r.error, undefined);
  const exec = r.ctx.written.find((w) => w.instance === "vm-100-exec");
  assert.equal(exec?.data.exitCode, 0);
  assert.equal(exec?.data.stdout, "ok\n");
});

Deno.test("qemu guestExec of a command that exits 42 fails after recording exitCode 42", async () => {
  const r = await run("guestExec", { vmid: 100, command: ["false"] }, {
    ...CLUSTER,
    ...agentExits(42),
  });
  assert.ok(r.error, "guestExec must fail");
  assert.match(r.error.message, /exited with code 42/);
  const exec = r.ctx.written.find((w) => w.instance === "vm-100-exec");
  assert.equal(exec?.data.exitCode, 42);
});

Deno.test("qemu guestExec refuses an empty command before any request", () => {
  const parsed = model.methods.guestExec.arguments.safeParse({
    vmid: 100,
    command: [],
  });
  assert.equal(parsed.success, false);
  assert.match(String(parsed.error), /command must not be empty/);
});

Deno.test("qemu stop refuses a VM without the swamp tag and sends no stop", async () => {
  const untagged = {
    ...CLUSTER,
    "GET /cluster/resources": {
      data: [
        { id: "node/pve1", type: "node", node: "pve1", status: "online" },
        {
          id: "qemu/100",
          type: "qemu",
          vmid: 100,
          node: "pve1",
          name: "web",
          status: "running",
          template: 0,
        },
      ],
    },
    "GET /nodes/pve1/qemu/100/status/current": {
      data: { ...VM_100, tags: undefined },
    },
  };
  const r = await run("stop", { vmid: 100 }, untagged);
  assert.ok(r.error, "stop must be refused");
  assert.match(r.error.message, /swamp/);
  assert.ok(!r.requests.some((q) => q.startsWith("POST")), r.requests.join());
});
