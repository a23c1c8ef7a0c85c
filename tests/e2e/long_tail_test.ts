/**
 * The long tail of the promise, end to end: each situation below is produced by the simulator
 * (its clone/create semantics, a guest state option or a fault) and the package must not report
 * an effect that was not observed, nor leak what a proxy echoes.
 */
import assert from "node:assert/strict";
import { demoGuests } from "../../simulator/demo_cluster.ts";
import type { EchoForm, EchoInto } from "../../simulator/types.ts";
import { model } from "../../js/proxmox_qemu.ts";
import { CREATE_400, withCt } from "./lxc_fixture.ts";
import { qemuTemplate } from "./qemu_fixture.ts";
import { type Env, TOKEN_ID, TOKEN_SECRET, withEnv, written } from "./env.ts";

const template = qemuTemplate({ tags: ["swamp"] });
const cloneArgs = { templateId: 9000, vmid: 300, name: "web2" };

async function untilUnlocked(env: Env, vmid: number): Promise<void> {
  for (let i = 0; i < 200 && env.sim.guest(vmid)?.lock; i++) {
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(env.sim.guest(vmid)?.lock, undefined, "the task ended");
}

Deno.test("long tail: a clone re-run while the first clone's task runs finds the VM under lock: clone and does not count it", async () => {
  await withEnv({
    guests: [...demoGuests(), template],
    globalArgs: { taskTimeoutSec: 1 },
  }, async (env) => {
    env.sim.nextTask({ durationMs: 4000 });
    const first = await env.run("clone", cloneArgs);
    assert.equal(first.status, "failed");
    assert.match(first.error ?? "", /still running after taskTimeoutSec=1s/);
    assert.equal(
      env.sim.guest(300)?.lock,
      "clone",
      "PVE wrote the config, locked",
    );
    assert.equal(env.sim.guest(300)?.name, "web2");
    const rerun = await env.run("clone", cloneArgs);
    assert.equal(rerun.status, "failed");
    assert.match(rerun.error ?? "", /locked \(clone\)/);
    assert.match(rerun.error ?? "", /not counted as done/);
    assert.equal(written(rerun, "vm-300").lock, "clone");
    await untilUnlocked(env, 300);
    const after = await env.run("clone", cloneArgs);
    assert.equal(after.status, "succeeded", after.error);
    assert.match(after.error ?? "", /^$/);
    assert.equal(written(after, "vm-300").lock, undefined);
  });
});

Deno.test("long tail: a create re-run while the first create's task runs finds the CT under lock: create and does not count it", async () => {
  await withCt({ globalArgs: { taskTimeoutSec: 1 } }, async (env) => {
    env.sim.nextTask({ durationMs: 4000 });
    const first = await env.run("create", CREATE_400);
    assert.equal(first.status, "failed");
    assert.equal(env.sim.guest(400)?.lock, "create");
    assert.equal(env.sim.guest(400)?.name, "web-400");
    const rerun = await env.run("create", CREATE_400);
    assert.equal(rerun.status, "failed");
    assert.match(rerun.error ?? "", /locked \(create\)/);
    await untilUnlocked(env, 400);
    const after = await env.run("create", CREATE_400);
    assert.equal(after.status, "succeeded", after.error);
  });
});

Deno.test("long tail: a property PVE kept after the request dropped it is not applied", async () => {
  const guests = demoGuests().map((g) =>
    g.vmid === 102 ? { ...g, keeps: { net0: "firewall=1" } } : g
  );
  await withEnv({ guests }, async (env) => {
    const r = await env.run("setConfig", {
      vmid: 102,
      config: { net0: "virtio,bridge=vmbr0" },
    });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /`net0` is neither applied nor pending/);
    assert.match(r.error ?? "", /firewall=1/);
  });
});

Deno.test("long tail: free text compares as text, typed keys by meaning", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("setConfig", {
      vmid: 102,
      config: { description: "007", cores: 2, onboot: 1 },
    });
    assert.equal(r.status, "succeeded", r.error);
  });
});

Deno.test("long tail: a status outside PVE's set makes lookup fail and write nothing", async () => {
  await withEnv({}, async (env) => {
    env.sim.fault({
      pathRegex: "/qemu/100/status/current$",
      kind: "body",
      body: '{"data":{"status":"unknown","name":"web"}}',
      times: Infinity,
    });
    const r = await env.run("lookup", { vmid: 100 });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /status "unknown" is not one of PVE's states/);
    assert.equal(r.written.length, 0);
  });
});

Deno.test("long tail: sync writes the guests whose state is known and fails naming the others", async () => {
  await withEnv({}, async (env) => {
    env.sim.fault({
      pathRegex: "/nodes/pve1/qemu$",
      kind: "body",
      body: JSON.stringify({
        data: [
          { vmid: 100, status: "running", qmpstatus: "running", name: "web" },
          { vmid: 102, status: "", name: "stopped" },
          { vmid: 103, status: "running", qmpstatus: "unknown", name: "x" },
        ],
      }),
    });
    const r = await env.run("sync", {});
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /"vmid":102/);
    assert.match(r.error ?? "", /"vmid":103/);
    assert.deepEqual(r.written.map((w) => w.instance), ["vm-100"]);
  });
});

Deno.test("long tail: a stop whose answer was lost records the state read again after it, outcome unknown", async () => {
  await withEnv({}, async (env) => {
    env.sim.fault({
      method: "POST",
      pathRegex: "/qemu/100/status/stop$",
      kind: "reset",
      afterHandler: true,
    });
    const r = await env.run("stop", { vmid: 100 });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /is unknown/);
    const rec = written(r, "vm-100");
    assert.equal(rec.outcome, "unknown");
    assert.equal(
      rec.observedBeforeMutation,
      false,
      "read after the lost answer",
    );
    const reads = env.sim.requests.filter((q) =>
      q.path.endsWith("/qemu/100/status/current") && q.answer !== undefined
    );
    const last = reads.at(-1)?.answer as { status?: string } | undefined;
    assert.equal(rec.status, last?.status, "the state PVE showed after it");
    assert.ok(
      Date.parse(String(rec.observedAt)) <= Date.parse(String(rec.recordedAt)),
    );
    for (let i = 0; i < 100 && env.sim.guest(100)?.status !== "stopped"; i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    const check = await env.run("lookup", { vmid: 100 });
    assert.equal(written(check, "vm-100").status, "stopped", "PVE did stop it");
    assert.equal(written(check, "vm-100").outcome, undefined);
  });
});

const encoder = new TextEncoder();
const base64 = (t: string) => btoa(String.fromCharCode(...encoder.encode(t)));
const HEADER = `PVEAPIToken=${TOKEN_ID}=${TOKEN_SECRET}`;
/** Every recognisable form of the token in what a run produced. */
function assertNoTokenForm(what: string, value: unknown) {
  const text = JSON.stringify(value);
  for (
    const form of [
      TOKEN_SECRET,
      encodeURIComponent(HEADER),
      encodeURIComponent(TOKEN_SECRET),
      base64(TOKEN_SECRET),
      base64(`${TOKEN_ID}=${TOKEN_SECRET}`),
      base64(HEADER),
    ]
  ) {
    assert.ok(!text.includes(form), `${what} holds ${form.slice(0, 12)}…`);
  }
}

const FORMS: EchoForm[] = [
  "header",
  "secret",
  "percent",
  "base64",
  "base64-secret",
  "base64-pair",
];

for (const into of ["401", "page"] as EchoInto[]) {
  Deno.test(`long tail: a proxy echoing the token in a ${into === "401" ? "401" : "200 page"} leaks it nowhere`, async () => {
    await withEnv({}, async (env) => {
      for (const form of FORMS) {
        env.sim.fault({
          pathRegex: "/qemu/100/status/current$",
          kind: "echo",
          into,
          form,
          times: 3,
        });
        const r = await env.run("lookup", { vmid: 100 });
        assert.equal(r.status, "failed", form);
        assert.match(
          r.error ?? "",
          /\*\*\*/,
          `${form}: the echo is shown redacted`,
        );
        assertNoTokenForm(`lookup (${into}, ${form})`, r);
      }
    });
  });
}

Deno.test("long tail: a task log echoing the token leaks it nowhere", async () => {
  await withEnv({}, async (env) => {
    for (const form of FORMS) {
      env.sim.nextTask({ exitstatus: "stop failed: boom" });
      env.sim.fault({
        pathRegex: "/tasks/.*/log$",
        kind: "echo",
        into: "log",
        form,
      });
      const r = await env.run("stop", { vmid: 100, force: true });
      assert.equal(r.status, "failed", form);
      assert.match(r.error ?? "", /proxy: Authorization: [^ ]*\*\*\*/, form);
      assertNoTokenForm(`stop (${form})`, r);
    }
  });
});

Deno.test("long tail: a 200 KB message is quoted bounded, keeping its reason", async () => {
  await withEnv({}, async (env) => {
    env.sim.fault({
      pathRegex: "/qemu/100/status/current$",
      kind: "status",
      status: 500,
      message: `cluster not ready - no quorum?${"!".repeat(200_000)}`,
    });
    const r = await env.run("lookup", { vmid: 100 });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /cluster not ready - no quorum\?!!!/);
    assert.match(r.error ?? "", /… \[cut: \d+ more characters\]/);
    assert.ok((r.error ?? "").length < 4000, `${r.error?.length} characters`);
    assert.ok(r.logs.every((l) => l.message.length < 4000));
  });
});

Deno.test("long tail: huge numbers leave a record that matches its schema, never null", async () => {
  const guests = demoGuests().map((g) =>
    g.vmid === 100
      ? {
        ...g,
        metrics: { cpu: 1e308, maxmem: 2 ** 64, mem: 2 ** 60, uptime: 1e300 },
      }
      : g
  );
  await withEnv({ guests }, async (env) => {
    const r = await env.run("lookup", { vmid: 100 });
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "vm-100");
    assert.ok(Object.values(rec).every((v) => v !== null), JSON.stringify(rec));
    const check = model.resources.guest.schema.safeParse(rec);
    assert.ok(check.success, JSON.stringify(check.error?.issues));
    assert.equal(rec.cpuPct, undefined);
    assert.equal(rec.memBytes, 2 ** 60);
  });
});

Deno.test("long tail: a password the method sent, echoed back in PVE's error, is scrubbed", async () => {
  await withEnv({}, async (env) => {
    const password = "pw-Zq81-never-shown";
    env.sim.fault({
      method: "PUT",
      pathRegex: "/qemu/102/config$",
      kind: "status",
      status: 500,
      message: `hook rejected cipassword '${password}' (${
        encodeURIComponent(password)
      })`,
    });
    const r = await env.run("setConfig", {
      vmid: 102,
      config: { cipassword: password },
    });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /hook rejected cipassword '\*\*\*' \(\*\*\*\)/);
    assert.ok(!JSON.stringify(r).includes(password), "nowhere in the run");
  });
});
