/**
 * setConfig end to end: success means each requested key reads back applied (compared as PVE
 * formats it) or is pending until the next start; anything else fails naming the key, the requested
 * and the observed value — after the guest record is written.
 */
import assert from "node:assert/strict";
import { isCheckRequest, withEnv, written } from "./env.ts";

Deno.test("setConfig: a hotpluggable key on a running VM reads back applied and is recorded", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("setConfig", {
      vmid: 100,
      config: { description: "front end" },
    });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(env.sim.guest(100)?.config.description, "front end");
    const rec = written(r, "vm-100");
    assert.equal(rec.lastOperation, "setConfig");
    assert.equal(rec.status, "running");
    assert.equal(rec.pending, undefined);
  });
});

Deno.test("setConfig: numbers and strings compare as PVE formats them", async () => {
  await withEnv({}, async (env) => {
    // PVE stores cores as a number and memory as a string, whatever the request sent.
    const r = await env.run("setConfig", {
      vmid: 102,
      config: { cores: "4", memory: 1024 },
    });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(env.sim.guest(102)?.config.cores, 4);
    assert.equal(env.sim.guest(102)?.config.memory, "1024");
  });
});

Deno.test("setConfig: a change that needs a restart is recorded as pending and logged", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("setConfig", {
      vmid: 100,
      config: { memory: 4096, description: "x" },
    });
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "vm-100");
    assert.deepEqual(rec.pending, { memory: "4096" });
    assert.ok(
      r.logs.some((l) =>
        l.level === "warning" &&
        /1 pending until a restart \(not applied yet\): memory/.test(l.message)
      ),
    );
    assert.ok(
      r.logs.some((l) =>
        l.level === "info" &&
        /1 applied, 1 pending until a restart: memory/.test(l.message)
      ),
      "the summary says what is pending",
    );
    assert.ok((rec.warnings as string[]).some((w) => /memory/.test(w)));
  });
});

Deno.test("setConfig: net0 without a MAC reads back applied with the MAC PVE generated", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("setConfig", {
      vmid: 100,
      config: { net0: "virtio,bridge=vmbr0,firewall=1" },
    });
    assert.equal(r.status, "succeeded", r.error);
    assert.match(
      String(env.sim.guest(100)?.config.net0),
      /^virtio=BC:24:11:[0-9A-F:]{8},bridge=vmbr0,firewall=1$/,
    );
  });
});

Deno.test("setConfig: tags PVE sorts and de-duplicates read back applied", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("setConfig", {
      vmid: 100,
      config: { tags: "zeta;swamp;alpha;zeta" },
    });
    assert.equal(r.status, "succeeded", r.error);
    assert.deepEqual(env.sim.guest(100)?.tags, ["alpha", "swamp", "zeta"]);
  });
});

Deno.test("setConfig: cloud-init keys apply, sshkeys sent URL-encoded as PVE requires", async () => {
  await withEnv({}, async (env) => {
    const keys =
      "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB+/x= ops@host\nssh-rsa AAAAB3Nza== ci@runner";
    const r = await env.run("setConfig", {
      vmid: 102,
      config: {
        ciuser: "ops",
        ipconfig0: "ip=10.0.0.5/24,gw=10.0.0.1",
        nameserver: "10.0.0.53",
        sshkeys: keys,
      },
    });
    assert.equal(r.status, "succeeded", r.error);
    const config = env.sim.guest(102)?.config ?? {};
    assert.equal(config.sshkeys, encodeURIComponent(keys));
    assert.equal(config.ciuser, "ops");
    assert.equal(config.ipconfig0, "ip=10.0.0.5/24,gw=10.0.0.1");
    assert.equal(config.nameserver, "10.0.0.53");
  });
});

Deno.test("setConfig: deleting a key is verified as gone", async () => {
  await withEnv({}, async (env) => {
    env.sim.setGuest(102, {
      config: {
        smbios1: "uuid=00000000-0000-4000-8000-000000000102",
        description: "old",
      },
    });
    const r = await env.run("setConfig", {
      vmid: 102,
      config: { delete: "description" },
    });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(env.sim.guest(102)?.config.description, undefined);
  });
});

Deno.test("setConfig: a key neither applied nor pending fails naming key, requested and observed value, after recording", async () => {
  await withEnv({}, async (env) => {
    // PVE answers the update but changes nothing.
    env.sim.fault({
      method: "PUT",
      pathRegex: "/qemu/100/config$",
      kind: "body",
      body: '{"data":null}',
    });
    const r = await env.run("setConfig", {
      vmid: 100,
      config: { name: "renamed" },
    });
    assert.equal(r.status, "failed");
    assert.match(
      r.error ?? "",
      /`name` is neither applied nor pending: requested "renamed", PVE reports "web"/,
    );
    const rec = written(r, "vm-100");
    assert.equal(rec.name, "web");
    assert.equal(rec.lastOperation, "setConfig");
  });
});

Deno.test("setConfig: PVE's refusal of an unknown option fails with PVE's message, after recording", async () => {
  await withEnv({}, async (env) => {
    env.sim.conformance.expectRefusal("PUT", /\/qemu\/100\/config$/);
    const r = await env.run("setConfig", {
      vmid: 100,
      config: { nosuchoption: 1 },
    });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /PVE refused the config change of VM 100/);
    assert.match(r.error ?? "", /nosuchoption/);
    assert.equal(written(r, "vm-100").status, "running");
  });
});

Deno.test("setConfig: the read-back failing fails saying the outcome is unknown", async () => {
  await withEnv({}, async (env) => {
    env.sim.fault({
      pathRegex: "/qemu/100/pending$",
      kind: "status",
      status: 500,
      message: "cluster filesystem not ready",
      times: Infinity,
    });
    const r = await env.run("setConfig", {
      vmid: 100,
      config: { description: "x" },
    });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /could not be read back/);
    assert.match(r.error ?? "", /cluster filesystem not ready/);
    assert.equal(written(r, "vm-100").lastOperation, "setConfig");
  });
});

Deno.test("setConfig: the password is checked by presence and never echoed", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("setConfig", {
      vmid: 102,
      config: { cipassword: "pw-9f2c-secret" },
    });
    assert.equal(r.status, "succeeded", r.error);
    const seen = JSON.stringify([r.logs, r.written, r.error]);
    assert.ok(!seen.includes("pw-9f2c-secret"), seen);
  });
});

Deno.test("setConfig: an absent guest fails and is recorded absent", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("setConfig", {
      vmid: 999,
      config: { memory: 1024 },
    });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /does not exist on any node/);
    assert.equal(written(r, "vm-999").present, false);
  });
});

Deno.test("setConfig: an empty config is refused before any request", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("setConfig", { vmid: 100, config: {} });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /at least one key/);
    const sent = env.sim.requests.filter((q) => !isCheckRequest(q.path));
    assert.deepEqual(sent, []);
  });
});

Deno.test("setConfig: a parameter of the update itself is refused as a config key", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("setConfig", {
      vmid: 100,
      config: { skiplock: 1 },
    });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /config\.skiplock/);
    assert.equal(r.written.length, 0);
  });
});
