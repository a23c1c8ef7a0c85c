/**
 * start, stop and shutdown end to end: success means status/current showed the target state, not that
 * a task ended OK. vm-<vmid> is written with the last observed state whatever the verdict.
 */
import assert from "node:assert/strict";
import { demoGuests } from "../../simulator/demo_cluster.ts";
import type { SimGuest } from "../../simulator/types.ts";
import { type Env, withEnv, written } from "./env.ts";

/** A managed guest for power tests (VMID 120 on pve1). */
function guest(over: Partial<SimGuest> = {}): SimGuest {
  return {
    vmid: 120,
    node: "pve1",
    type: "qemu",
    name: "power",
    status: "stopped",
    tags: ["swamp"],
    agent: "running",
    config: { smbios1: "uuid=00000000-0000-4000-8000-000000000120" },
    ...over,
  };
}

const withGuest = (over: Partial<SimGuest>) => [...demoGuests(), guest(over)];
const neverApplies = (state: string) => ({
  managed: true,
  state,
  neverApplies: true,
});
/** Failure paths wait out their budget: keep it short. */
const short = { globalArgs: { taskTimeoutSec: 2 } };

function posted(env: Env, suffix: string) {
  return env.sim.requests.filter((q) =>
    q.method === "POST" && q.path.endsWith(suffix)
  );
}

// ── start ────────────────────────────────────────────────────────────────────

Deno.test("start: a stopped VM is started and recorded running with qmpStatus running, its looked-up identity carried", async () => {
  await withEnv({ guests: withGuest({}) }, async (env) => {
    await env.run("lookup", { vmid: 120 });
    const r = await env.run("start", { vmid: 120 });
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "vm-120");
    assert.equal(rec.status, "running");
    assert.equal(rec.qmpStatus, "running");
    assert.equal(rec.present, true);
    assert.equal(rec.lastOperation, "start");
    assert.match(String(rec.lastTask), /^UPID:pve1:.*:qmstart:120:/);
    assert.deepEqual(rec.identity, {
      smbiosUuid: "00000000-0000-4000-8000-000000000120",
    });
    assert.equal(env.sim.guest(120)?.status, "running");
  });
});

Deno.test("start: an already running VM succeeds without sending a start", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("start", { vmid: 100 });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(written(r, "vm-100").status, "running");
    assert.equal(posted(env, "/status/start").length, 0);
  });
});

Deno.test("start: an HA-managed VM whose request never applies fails naming expected and observed state", async () => {
  await withEnv(
    { guests: withGuest({ ha: neverApplies("stopped") }), ...short },
    async (env) => {
      const r = await env.run("start", { vmid: 120 });
      assert.equal(r.status, "failed");
      assert.match(r.error ?? "", /start task ended successfully/);
      assert.match(
        r.error ?? "",
        /did not reach status running with qmpstatus running/,
      );
      assert.match(r.error ?? "", /status stopped/);
      assert.match(r.error ?? "", /HA state started/);
      assert.match(r.error ?? "", /ha-manager status/);
      const rec = written(r, "vm-120");
      assert.equal(rec.status, "stopped");
      assert.deepEqual(rec.ha, { managed: true, state: "started" });
      assert.match(String(rec.lastTask), /:hastart:120:/);
    },
  );
});

Deno.test("start: an HA-managed VM that starts after its task ended is waited for", async () => {
  const ha = { managed: true, state: "stopped", applyDelayMs: 700 };
  await withEnv({ guests: withGuest({ ha }) }, async (env) => {
    const r = await env.run("start", { vmid: 120 });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(written(r, "vm-120").status, "running");
  });
});

Deno.test("start: a failed start task fails with PVE's text and records the observed state", async () => {
  await withEnv({ guests: withGuest({}) }, async (env) => {
    env.sim.nextTask({ exitstatus: "start failed: QEMU exited with code 1" });
    const r = await env.run("start", { vmid: 120 });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /start failed: QEMU exited with code 1/);
    const rec = written(r, "vm-120");
    assert.equal(rec.status, "stopped");
    assert.match(String(rec.lastTask), /:qmstart:120:/);
  });
});

Deno.test("start: task warnings are kept in the record and logged", async () => {
  await withEnv({ guests: withGuest({}) }, async (env) => {
    env.sim.nextTask({ warnings: ["no efidisk configured! Using temporary"] });
    const r = await env.run("start", { vmid: 120 });
    assert.equal(r.status, "succeeded", r.error);
    assert.deepEqual(written(r, "vm-120").warnings, [
      "WARN: no efidisk configured! Using temporary",
    ]);
    assert.ok(
      r.logs.some((l) => l.level === "warning" && /no efidisk/.test(l.message)),
    );
  });
});

Deno.test("start: a paused VM fails saying start resumes it only with resume: true", async () => {
  await withEnv(
    { guests: withGuest({ status: "running", qmpstatus: "paused" }) },
    async (env) => {
      const r = await env.run("start", { vmid: 120 });
      assert.equal(r.status, "failed");
      assert.match(r.error ?? "", /qmpstatus paused/);
      assert.match(r.error ?? "", /only with resume: true/);
      assert.equal(written(r, "vm-120").qmpStatus, "paused");
      assert.equal(posted(env, "/status/start").length, 0);
    },
  );
});

Deno.test("start: an absent VM fails and is recorded absent", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("start", { vmid: 999 });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /does not exist on any node/);
    const rec = written(r, "vm-999");
    assert.equal(rec.present, false);
    assert.equal(rec.status, "absent");
  });
});

Deno.test("start: waitForIp records the IPv4 address the guest agent reports", async () => {
  await withEnv(
    { guests: withGuest({ ips: ["10.0.0.7/24"] }) },
    async (env) => {
      const r = await env.run("start", { vmid: 120, waitForIp: true });
      assert.equal(r.status, "succeeded", r.error);
      assert.equal(written(r, "vm-120").ipv4, "10.0.0.7");
    },
  );
});

Deno.test("start: waitForIp without an address fails and records the running VM", async () => {
  await withEnv({ guests: withGuest({}), ...short }, async (env) => {
    const r = await env.run("start", { vmid: 120, waitForIp: true });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /waitForIp found no IPv4 address/);
    assert.match(r.error ?? "", /allowNoIp/);
    const rec = written(r, "vm-120");
    assert.equal(rec.status, "running");
    assert.equal(rec.ipv4, undefined);
  });
});

Deno.test("start: waitForIp with allowNoIp succeeds with a recorded warning", async () => {
  await withEnv({ guests: withGuest({}), ...short }, async (env) => {
    const r = await env.run("start", {
      vmid: 120,
      waitForIp: true,
      allowNoIp: true,
    });
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "vm-120");
    assert.equal(rec.ipv4, undefined);
    assert.match(String((rec.warnings as string[])[0]), /allowNoIp/);
  });
});

Deno.test("start: waitForIp on a VM without a guest agent fails without waiting", async () => {
  await withEnv({ guests: withGuest({ agent: "none" }) }, async (env) => {
    const started = Date.now();
    const r = await env.run("start", { vmid: 120, waitForIp: true });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /No QEMU guest agent configured/);
    assert.ok(
      Date.now() - started < 5000,
      "no wait for an agent that cannot come",
    );
  });
});

// ── stop ─────────────────────────────────────────────────────────────────────

Deno.test("stop: a running managed VM is stopped and recorded stopped", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("stop", { vmid: 100 });
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "vm-100");
    assert.equal(rec.status, "stopped");
    assert.match(String(rec.lastTask), /:qmstop:100:/);
    assert.equal(env.sim.guest(100)?.status, "stopped");
  });
});

Deno.test("stop: a VM on another node is stopped there", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("stop", { vmid: 101 });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(written(r, "vm-101").node, "pve2");
    assert.equal(posted(env, "/nodes/pve2/qemu/101/status/stop").length, 1);
  });
});

Deno.test("stop: a VM without the swamp tag is refused, nothing is sent, the state is recorded", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("stop", { vmid: 103 });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /refusing to stop VM 103/);
    assert.match(r.error ?? "", /`swamp` tag/);
    assert.match(r.error ?? "", /force: true/);
    assert.equal(posted(env, "/status/stop").length, 0);
    assert.equal(written(r, "vm-103").status, "running");
  });
});

Deno.test("stop: force overrides the safety gate and the override is recorded", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("stop", { vmid: 103, force: true });
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "vm-103");
    assert.equal(rec.status, "stopped");
    assert.match(
      String((rec.warnings as string[])[0]),
      /overrides the safety gate/,
    );
  });
});

Deno.test("stop: an already stopped VM succeeds without a task", async () => {
  await withEnv({ guests: withGuest({}) }, async (env) => {
    const r = await env.run("stop", { vmid: 120 });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(written(r, "vm-120").status, "stopped");
    assert.equal(posted(env, "/status/stop").length, 0);
  });
});

Deno.test("stop: an HA-managed VM whose request never applies fails naming the HA state", async () => {
  await withEnv(
    {
      guests: withGuest({ status: "running", ha: neverApplies("started") }),
      ...short,
    },
    async (env) => {
      const r = await env.run("stop", { vmid: 120 });
      assert.equal(r.status, "failed");
      assert.match(r.error ?? "", /did not reach status stopped/);
      assert.match(r.error ?? "", /status running/);
      assert.match(r.error ?? "", /HA state stopped/);
      const rec = written(r, "vm-120");
      assert.equal(rec.status, "running");
      assert.deepEqual(rec.ha, { managed: true, state: "stopped" });
    },
  );
});

Deno.test("stop: a VM locked past the budget fails with PVE's lock message and the lock recorded", async () => {
  await withEnv(
    {
      guests: withGuest({ status: "running", lock: "backup" }),
      globalArgs: { taskTimeoutSec: 2 },
    },
    async (env) => {
      const r = await env.run("stop", { vmid: 120 });
      assert.equal(r.status, "failed");
      assert.match(r.error ?? "", /VM is locked \(backup\)/);
      const rec = written(r, "vm-120");
      assert.equal(rec.lock, "backup");
      assert.equal(rec.status, "running");
    },
  );
});

// ── shutdown ─────────────────────────────────────────────────────────────────

Deno.test("shutdown: a running managed VM shuts down gracefully and is recorded stopped", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("shutdown", { vmid: 100 });
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "vm-100");
    assert.equal(rec.status, "stopped");
    assert.match(String(rec.lastTask), /:qmshutdown:100:/);
    assert.equal(posted(env, "/status/stop").length, 0, "no hard stop");
  });
});

Deno.test("shutdown: PVE is asked to wait timeoutSec for the guest", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("shutdown", { vmid: 100, timeoutSec: 45 });
    assert.equal(r.status, "succeeded", r.error);
    const [sent] = posted(env, "/status/shutdown");
    assert.deepEqual(sent.form, [["timeout", "45"]]);
  });
});

Deno.test("shutdown: a guest ignoring ACPI fails after the timeout and says what to do", async () => {
  await withEnv(
    { guests: withGuest({ status: "running", ignoresShutdown: true }) },
    async (env) => {
      const r = await env.run("shutdown", { vmid: 120, timeoutSec: 1 });
      assert.equal(r.status, "failed");
      assert.match(r.error ?? "", /did not shut down within timeoutSec=1s/);
      assert.match(r.error ?? "", /got timeout/);
      assert.match(r.error ?? "", /forceStopAfter/);
      assert.equal(written(r, "vm-120").status, "running");
      assert.equal(posted(env, "/status/stop").length, 0);
    },
  );
});

Deno.test("shutdown: forceStopAfter falls back to a hard stop and records why", async () => {
  await withEnv(
    { guests: withGuest({ status: "running", ignoresShutdown: true }) },
    async (env) => {
      const r = await env.run("shutdown", {
        vmid: 120,
        timeoutSec: 1,
        forceStopAfter: true,
      });
      assert.equal(r.status, "succeeded", r.error);
      const rec = written(r, "vm-120");
      assert.equal(rec.status, "stopped");
      assert.match(String(rec.lastTask), /:qmstop:120:/);
      assert.match(
        String((rec.warnings as string[])[0]),
        /forcing a hard stop \(forceStopAfter: true\)/,
      );
    },
  );
});

Deno.test("shutdown: a VM without the swamp tag is refused and nothing is sent", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("shutdown", { vmid: 103 });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /refusing to shut down VM 103/);
    assert.equal(posted(env, "/status/shutdown").length, 0);
    assert.equal(written(r, "vm-103").status, "running");
  });
});

Deno.test("shutdown: an HA-managed VM that never stops fails after timeoutSec", async () => {
  await withEnv(
    { guests: withGuest({ status: "running", ha: neverApplies("started") }) },
    async (env) => {
      const r = await env.run("shutdown", { vmid: 120, timeoutSec: 2 });
      assert.equal(r.status, "failed");
      assert.match(r.error ?? "", /shutdown task ended successfully/);
      assert.match(r.error ?? "", /did not reach status stopped/);
      assert.match(r.error ?? "", /HA state stopped/);
      assert.equal(written(r, "vm-120").status, "running");
    },
  );
});

Deno.test("shutdown: an already stopped VM succeeds without a task", async () => {
  await withEnv({ guests: withGuest({}) }, async (env) => {
    const r = await env.run("shutdown", { vmid: 120 });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(posted(env, "/status/shutdown").length, 0);
  });
});
