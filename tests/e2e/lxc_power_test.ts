/**
 * start, stop and shutdown of containers end to end: the same verified transitions as the qemu
 * model's (status/current decides, not the task), on the node the container lives on; waitForIp
 * reads the static address of the container's config.
 */
import assert from "node:assert/strict";
import { written } from "./env.ts";
import { container, sent, withCt } from "./lxc_fixture.ts";

// ── start ────────────────────────────────────────────────────────────────────

Deno.test("lxc start: a stopped container is started and recorded running", async () => {
  await withCt({}, async (env) => {
    const r = await env.run("start", { vmid: 301 });
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "ct-301");
    assert.equal(rec.status, "running");
    assert.equal(rec.qmpStatus, undefined);
    assert.equal(rec.lastOperation, "start");
    assert.match(String(rec.lastTask), /^UPID:pve1:.*:vzstart:301:/);
    assert.equal(env.sim.guest(301)?.status, "running");
  });
});

Deno.test("lxc start: a container on another node is started there", async () => {
  await withCt({}, async (env) => {
    const r = await env.run("start", { vmid: 302 });
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "ct-302");
    assert.equal(rec.node, "pve2");
    assert.equal(rec.status, "running");
    assert.equal(
      sent(env, "POST", "/nodes/pve2/lxc/302/status/start").length,
      1,
    );
    assert.equal(
      sent(env, "POST", "/nodes/pve1/lxc/302/status/start").length,
      0,
    );
  });
});

Deno.test("lxc start: an already running container succeeds without sending a start", async () => {
  await withCt({}, async (env) => {
    const r = await env.run("start", { vmid: 300 });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(sent(env, "POST", "/status/start").length, 0);
  });
});

Deno.test("lxc start: a start task that fails (a bridge gone since create) fails with PVE's words", async () => {
  await withCt({}, async (env) => {
    env.sim.bridges("pve1").splice(0);
    const r = await env.run("start", { vmid: 301 });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /startup for container '301' failed/);
    assert.equal(written(r, "ct-301").status, "stopped");
  });
});

Deno.test("lxc start: an HA start that never applies fails naming the HA state", async () => {
  const ha = { managed: true, state: "stopped", neverApplies: true };
  await withCt(
    {
      extra: [container(310, { ha })],
      globalArgs: { taskTimeoutSec: 2 },
    },
    async (env) => {
      const r = await env.run("start", { vmid: 310 });
      assert.equal(r.status, "failed");
      assert.match(r.error ?? "", /did not reach status running/);
      assert.match(r.error ?? "", /HA state started/);
      assert.equal(written(r, "ct-310").status, "stopped");
    },
  );
});

Deno.test("lxc start: an absent container fails and is recorded absent", async () => {
  await withCt({}, async (env) => {
    const r = await env.run("start", { vmid: 399 });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /container 399 does not exist on any node/);
    assert.equal(written(r, "ct-399").present, false);
    assert.equal(sent(env, "POST", "/status/start").length, 0);
  });
});

// ── start waitForIp ──────────────────────────────────────────────────────────

Deno.test("lxc start waitForIp: the static address of net0 is recorded", async () => {
  await withCt({}, async (env) => {
    const r = await env.run("start", { vmid: 302, waitForIp: true });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(written(r, "ct-302").ipv4, "10.0.0.52");
    assert.ok(
      !env.sim.requests.some((q) => q.path.includes("/agent/")),
      "containers have no agent to ask",
    );
  });
});

Deno.test("lxc start waitForIp: ip=dhcp fails, after the container was started", async () => {
  await withCt({}, async (env) => {
    const r = await env.run("start", { vmid: 301, waitForIp: true });
    assert.equal(r.status, "failed");
    assert.match(
      r.error ?? "",
      /is running, but waitForIp found no IPv4 address/,
    );
    assert.match(r.error ?? "", /net0 has ip=dhcp/);
    assert.match(r.error ?? "", /allowNoIp: true/);
    const rec = written(r, "ct-301");
    assert.equal(rec.status, "running");
    assert.equal(rec.ipv4, undefined);
  });
});

Deno.test("lxc start waitForIp: no network interface at all fails", async () => {
  await withCt(
    { extra: [container(311, { config: { net0: "" } })] },
    async (env) => {
      delete env.sim.guest(311)!.config.net0;
      const r = await env.run("start", { vmid: 311, waitForIp: true });
      assert.equal(r.status, "failed");
      assert.match(r.error ?? "", /no network interface/);
    },
  );
});

Deno.test("lxc start waitForIp: allowNoIp turns a missing address into a recorded warning", async () => {
  await withCt({}, async (env) => {
    const r = await env.run("start", {
      vmid: 301,
      waitForIp: true,
      allowNoIp: true,
    });
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "ct-301");
    assert.equal(rec.status, "running");
    assert.match(String((rec.warnings as string[])[0]), /allowNoIp/);
    assert.ok(
      r.logs.some((l) => l.level === "warning" && /allowNoIp/.test(l.message)),
    );
  });
});

// ── stop / shutdown ──────────────────────────────────────────────────────────

Deno.test("lxc stop: a running managed container is stopped and recorded stopped", async () => {
  await withCt({}, async (env) => {
    const r = await env.run("stop", { vmid: 300 });
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "ct-300");
    assert.equal(rec.status, "stopped");
    assert.match(String(rec.lastTask), /:vzstop:300:/);
  });
});

Deno.test("lxc stop: a container without the swamp tag is refused before any change", async () => {
  await withCt({}, async (env) => {
    env.sim.setGuest(303, { status: "running" });
    const r = await env.run("stop", { vmid: 303 });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /^refusing to stop container 303/);
    assert.equal(sent(env, "POST", "/status/stop").length, 0);
    assert.equal(written(r, "ct-303").status, "running");
    const forced = await env.run("stop", { vmid: 303, force: true });
    assert.equal(forced.status, "succeeded", forced.error);
  });
});

Deno.test("lxc stop: an already stopped container succeeds without sending a stop", async () => {
  await withCt({}, async (env) => {
    const r = await env.run("stop", { vmid: 301 });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(sent(env, "POST", "/status/stop").length, 0);
  });
});

Deno.test("lxc shutdown: a running container shuts down cleanly", async () => {
  await withCt({}, async (env) => {
    const r = await env.run("shutdown", { vmid: 300 });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(written(r, "ct-300").status, "stopped");
    assert.match(String(written(r, "ct-300").lastTask), /:vzshutdown:300:/);
  });
});

Deno.test("lxc shutdown: a container that ignores it fails, or is hard-stopped with forceStopAfter", async () => {
  const stubborn = container(312, { status: "running", ignoresShutdown: true });
  await withCt({ extra: [stubborn] }, async (env) => {
    const r = await env.run("shutdown", { vmid: 312, timeoutSec: 1 });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /did not shut down within timeoutSec=1s/);
    const forced = await env.run("shutdown", {
      vmid: 312,
      timeoutSec: 1,
      forceStopAfter: true,
    });
    assert.equal(forced.status, "succeeded", forced.error);
    assert.equal(written(forced, "ct-312").status, "stopped");
  });
});
