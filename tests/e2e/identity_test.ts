/**
 * What PVE lets only root@pam do is refused up front on the api transport (an API token), saying
 * why and what works; over ssh (pvesh as root@pam) the same request goes through. The simulator
 * enforces PVE's Perl rules for each identity, so a request the client let through would fail there.
 */
import assert from "node:assert/strict";
import { withEnv, written } from "./env.ts";
import { sent, TEMPLATE, withCt } from "./lxc_fixture.ts";
import { model as lxcModel } from "../../js/proxmox_lxc.ts";

const createArgs = (features: string, extra: Record<string, unknown> = {}) => ({
  vmid: 400,
  ostemplate: TEMPLATE,
  hostname: "new-ct",
  storage: "local-lvm",
  features,
  ...extra,
});

Deno.test("lxc create over api: features beyond nesting are refused up front, naming the rule and what works", async () => {
  await withCt({}, async (env) => {
    const r = await env.run("create", createArgs("nesting=1,keyctl=1"));
    assert.equal(r.status, "failed");
    assert.match(
      r.error ?? "",
      /changing feature flags \(except nesting\) is only allowed for root@pam/,
    );
    assert.match(r.error ?? "", /nesting=1/);
    assert.match(r.error ?? "", /ssh transport/);
    assert.equal(
      sent(env, "POST", "/lxc").length,
      0,
      "nothing was sent to PVE",
    );
  });
});

Deno.test("lxc create over api: nesting alone on an unprivileged container goes through", async () => {
  await withCt({}, async (env) => {
    const r = await env.run("create", createArgs("nesting=1"));
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(env.sim.guest(400)?.config.features, "nesting=1");
  });
});

Deno.test("lxc create over api: any feature on a privileged container is refused up front", async () => {
  await withCt({}, async (env) => {
    const r = await env.run(
      "create",
      createArgs("nesting=1", { unprivileged: false }),
    );
    assert.equal(r.status, "failed");
    assert.match(
      r.error ?? "",
      /privileged container is only allowed for root@pam/,
    );
    assert.equal(sent(env, "POST", "/lxc").length, 0);
  });
});

Deno.test("lxc create over ssh (root@pam): features beyond nesting go through", async () => {
  await withEnv({ via: "ssh", model: lxcModel }, async (env) => {
    const r = await env.run("create", createArgs("nesting=1,keyctl=1"));
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(env.sim.guest(400)?.config.features, "nesting=1,keyctl=1");
  });
});

Deno.test("lxc setConfig over api: a feature other than nesting is refused up front", async () => {
  await withCt({}, async (env) => {
    env.sim.setGuest(301, {
      config: { ...env.sim.guest(301)!.config, unprivileged: 1 },
    });
    const r = await env.run("setConfig", {
      vmid: 301,
      config: { features: "fuse=1" },
    });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /except nesting/);
    assert.equal(sent(env, "PUT", "/lxc/301/config").length, 0);
    assert.equal(written(r, "ct-301").present, true);
  });
});

Deno.test("qemu setConfig over api: a root-only key is refused up front; over ssh it is set", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("setConfig", {
      vmid: 100,
      config: { args: "-no-reboot" },
    });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /only root can set 'args' config/);
    assert.match(r.error ?? "", /ssh transport/);
    assert.equal(
      env.sim.requests.filter((q) =>
        q.method === "PUT" && q.path.endsWith("/config")
      ).length,
      0,
    );
  });
  await withEnv({ via: "ssh" }, async (env) => {
    const r = await env.run("setConfig", {
      vmid: 100,
      config: { args: "-no-reboot" },
    });
    assert.equal(r.status, "succeeded", r.error);
    // VM 100 runs: args waits for the next start, as PVE keeps it pending.
    const g = env.sim.guest(100)!;
    assert.equal(g.pending.args ?? g.config.args, "-no-reboot");
  });
});
