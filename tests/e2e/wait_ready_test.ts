/**
 * waitReady end to end (the real qemu-ga answers ping and info): ready means the agent answers,
 * the asked addresses are up — on net0's NIC when asked; only usable addresses count, the others
 * are recorded as skipped — and,
 * when asked, `cloud-init status --wait` exited 0. What was seen is recorded whatever the verdict.
 */
import assert from "node:assert/strict";
import { demoGuests } from "../../simulator/demo_cluster.ts";
import type { SimGuest } from "../../simulator/types.ts";
import { withEnv, written } from "./env.ts";

const MAC = "BC:24:11:0A:0B:0C";

function vm(over: Partial<SimGuest> = {}): SimGuest {
  return {
    vmid: 750,
    node: "pve1",
    type: "qemu",
    name: "web",
    status: "running",
    tags: ["swamp"],
    agent: "running",
    ips: ["10.0.0.5/24", "fe80::1/64", "2001:db8::5/64"],
    config: { net0: `virtio=${MAC},bridge=vmbr0` },
    ...over,
  };
}

const quick = { timeoutSec: 2 };

Deno.test("waitReady: agent up, IPv4 and global IPv6 on net0, cloud-init done: ready, recorded", async () => {
  await withEnv({ guests: [...demoGuests(), vm()] }, async (env) => {
    const r = await env.run("waitReady", {
      vmid: 750,
      ipv6: true,
      nic: "net0",
      cloudInit: true,
    });
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "vm-750-ready");
    assert.equal(rec.ready, true);
    assert.equal(rec.ipv4, "10.0.0.5");
    assert.equal(rec.ipv6, "2001:db8::5");
    assert.match(String(rec.agentVersion), /^\d+\.\d+/);
    assert.deepEqual(rec.interfaces, [{
      name: "eth0",
      mac: MAC.toLowerCase(),
      addresses: ["10.0.0.5", "2001:db8::5"],
      skipped: [{ address: "fe80::1", why: "link-local" }],
    }]);
    assert.deepEqual(rec.cloudInit, {
      outcome: "exited",
      exitCode: 0,
      status: "done",
    });
    assert.equal(written(r, "vm-750").ipv4, "10.0.0.5");
  });
});

Deno.test("waitReady: only link-local IPv6 fails naming what is missing and where", async () => {
  await withEnv(
    { guests: [...demoGuests(), vm({ ips: ["10.0.0.5/24", "fe80::1/64"] })] },
    async (env) => {
      const r = await env.run("waitReady", {
        vmid: 750,
        ipv6: true,
        nic: "net0",
        ...quick,
      });
      assert.equal(r.status, "failed");
      assert.match(
        r.error ?? "",
        /agent \S+ up; no global IPv6 address on net0 \(bc:24:11:0a:0b:0c\) after 2 s/,
      );
      assert.equal(written(r, "vm-750-ready").ready, false);
    },
  );
});

Deno.test("waitReady: no address at all fails after timeoutSec", async () => {
  await withEnv({ guests: [...demoGuests(), vm({ ips: [] })] }, async (env) => {
    const r = await env.run("waitReady", { vmid: 750, ...quick });
    assert.equal(r.status, "failed");
    assert.match(
      r.error ?? "",
      /no IPv4 address on any interface after 2 s \(timeoutSec\) \(seen: eth0 [0-9a-f:]+: no address\)/,
    );
  });
});

Deno.test("waitReady: an address that comes up while waiting is waited for", async () => {
  await withEnv({ guests: [...demoGuests(), vm({ ips: [] })] }, async (env) => {
    setTimeout(() => env.sim.setGuest(750, { ips: ["10.0.0.9/24"] }), 300);
    const r = await env.run("waitReady", { vmid: 750 });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(written(r, "vm-750-ready").ipv4, "10.0.0.9");
  });
});

Deno.test("waitReady: cloud-init that ended in error fails with its exit code (guestExec's truth)", async () => {
  await withEnv(
    { guests: [...demoGuests(), vm({ cloudInit: "error" })] },
    async (env) => {
      const r = await env.run("waitReady", { vmid: 750, cloudInit: true });
      assert.equal(r.status, "failed");
      assert.match(
        r.error ?? "",
        /cloud-init did not end well: .*exited with code 1/,
      );
      assert.deepEqual(written(r, "vm-750-ready").cloudInit, {
        outcome: "exited",
        exitCode: 1,
        status: "error",
      });
    },
  );
});

Deno.test("waitReady: no agent configured fails at once", async () => {
  await withEnv(
    { guests: [...demoGuests(), vm({ agent: "none" })] },
    async (env) => {
      const r = await env.run("waitReady", { vmid: 750 });
      assert.equal(r.status, "failed");
      assert.match(
        r.error ?? "",
        /does not answer ping.*No QEMU guest agent configured/,
      );
      assert.ok(r.durationMs < 2000, `${r.durationMs} ms`);
    },
  );
});

Deno.test("waitReady: a stopped VM has nothing to wait for", async () => {
  await withEnv(
    { guests: [...demoGuests(), vm({ status: "stopped" })] },
    async (env) => {
      const r = await env.run("waitReady", { vmid: 750 });
      assert.equal(r.status, "failed");
      assert.match(r.error ?? "", /is not running/);
    },
  );
});

Deno.test("start with waitReady: started, then ready, both recorded", async () => {
  await withEnv(
    { guests: [...demoGuests(), vm({ status: "stopped" })] },
    async (env) => {
      const r = await env.run("start", {
        vmid: 750,
        waitReady: { nic: "net0", cloudInit: true },
      });
      assert.equal(r.status, "succeeded", r.error);
      assert.equal(written(r, "vm-750").status, "running");
      assert.equal(written(r, "vm-750-ready").ipv4, "10.0.0.5");
    },
  );
});

Deno.test("clone with waitReady: cloned, started, ready, all recorded", async () => {
  const template: SimGuest = {
    vmid: 9000,
    node: "pve1",
    type: "qemu",
    name: "tmpl",
    status: "stopped",
    agent: "running",
    config: {
      template: 1,
      agent: 1,
      scsi0: "local-lvm:base-9000-disk-0,size=8G",
      net0: `virtio=${MAC},bridge=vmbr0`,
    },
  };
  await withEnv({ guests: [...demoGuests(), template] }, async (env) => {
    // The clone's OS gets its address by DHCP a moment after it boots.
    const boot = setInterval(() => {
      if (env.sim.guest(760)?.status === "running") {
        env.sim.setGuest(760, { ips: ["10.0.0.76/24"] });
        clearInterval(boot);
      }
    }, 20);
    try {
      const r = await env.run("clone", {
        templateId: 9000,
        vmid: 760,
        name: "web3",
        waitReady: { nic: "net0" },
      });
      assert.equal(r.status, "succeeded", r.error);
      assert.equal(written(r, "vm-760").status, "running");
      assert.equal(written(r, "vm-760-ready").ipv4, "10.0.0.76");
    } finally {
      clearInterval(boot);
    }
  });
});
