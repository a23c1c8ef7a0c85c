/**
 * cloudInit end to end: the options are set, the cloud-init drive regenerated, and success means
 * the config PVE generates (GET …/cloudinit/dump user, network, meta) carries every asked value and
 * nothing asked is pending against the drive. No drive: a failure that says how to add one.
 */
import assert from "node:assert/strict";
import { demoGuests } from "../../simulator/demo_cluster.ts";
import type { SimGuest } from "../../simulator/types.ts";
import { networkData, userData } from "../../simulator/cloudinit.ts";
import { type Env, withEnv, written } from "./env.ts";

const MAC = "BC:24:11:AA:BB:CC";
const KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMx ops@laptop";

function vm(over: Partial<SimGuest> = {}): SimGuest {
  return {
    vmid: 740,
    node: "pve1",
    type: "qemu",
    name: "web",
    status: "stopped",
    tags: ["swamp"],
    agent: "running",
    config: {
      memory: 1024,
      ide2: "local-lvm:vm-740-cloudinit,media=cdrom",
      net0: `virtio=${MAC},bridge=vmbr0`,
      scsi0: "local-lvm:vm-740-disk-0,size=8G",
    },
    ...over,
  };
}

const ASK = {
  vmid: 740,
  ciuser: "ops",
  cipassword: "pa55-w0rd-never-echoed",
  sshkeys: KEY,
  ipconfig0: "ip=10.0.0.5/24,gw=10.0.0.1",
  nameserver: "1.1.1.1",
  searchdomain: "lan",
};

/** What PVE would dump for the VM now (the simulator's generator, as the route serves it). */
function dump(env: Env, type: "user" | "network"): string {
  const g = env.sim.guest(740)!;
  return type === "user" ? userData(g) : networkData(g);
}

Deno.test("cloudInit: options set, drive regenerated, the generated config carries them", async () => {
  await withEnv({ guests: [...demoGuests(), vm()] }, async (env) => {
    const r = await env.run("cloudInit", ASK);
    assert.equal(r.status, "succeeded", r.error);
    const user = dump(env, "user");
    assert.match(user, /\nuser: ops\n/);
    assert.ok(user.includes(`  - ${KEY}\n`));
    const network = dump(env, "network");
    assert.match(network, new RegExp(`mac_address: '${MAC.toLowerCase()}'`));
    assert.match(network, /address: '10\.0\.0\.5'/);
    assert.equal(env.sim.guest(740)?.cloudinitGenerated?.ciuser, "ops");
    assert.equal(written(r, "vm-740").present, true);
    const everything = JSON.stringify([r.written, r.logs, r.error]);
    assert.ok(
      !everything.includes(ASK.cipassword),
      "the password is never echoed",
    );
    assert.ok(!everything.includes("$5$"), "nor its hash");
  });
});

Deno.test("cloudInit: a VM without a cloud-init drive fails before any change, saying how to add one", async () => {
  const bare = vm();
  delete bare.config!.ide2;
  await withEnv({ guests: [...demoGuests(), bare] }, async (env) => {
    const r = await env.run("cloudInit", ASK);
    assert.equal(r.status, "failed");
    assert.match(
      r.error ?? "",
      /has no cloud-init drive.*"ide2": "<storage>:cloudinit"/,
    );
    assert.equal(env.sim.requests.filter((q) => q.method === "PUT").length, 0);
  });
});

Deno.test("cloudInit: a generated config lacking an asked key fails at that key", async () => {
  await withEnv({ guests: [...demoGuests(), vm()] }, async (env) => {
    env.sim.fault({
      method: "GET",
      pathRegex: "/qemu/740/cloudinit/dump$",
      kind: "body",
      body: JSON.stringify({ data: "#cloud-config\nhostname: web\n" }),
    });
    const r = await env.run("cloudInit", ASK);
    assert.equal(r.status, "failed");
    assert.match(
      r.error ?? "",
      /lacks what was asked: user config has no `user: ops`; user config has no password/,
    );
  });
});

Deno.test("cloudInit: a running VM is told to apply at its next boot, or rebooted with applyPending", async () => {
  await withEnv(
    { guests: [...demoGuests(), vm({ status: "running" })] },
    async (env) => {
      const later = await env.run("cloudInit", { vmid: 740, ciuser: "ops" });
      assert.equal(later.status, "succeeded", later.error);
      assert.ok(
        later.logs.some((l) =>
          l.level === "warning" && /next boot/.test(l.message)
        ),
      );
      const pid = env.sim.guest(740)?.pid;
      const now = await env.run("cloudInit", {
        vmid: 740,
        ciuser: "admin",
        applyPending: "reboot",
      });
      assert.equal(now.status, "succeeded", now.error);
      assert.notEqual(env.sim.guest(740)?.pid, pid);
      assert.ok(
        now.logs.some((l) =>
          /rebooted: running again with a new boot.*nothing is pending/.test(
            l.message,
          )
        ),
      );
    },
  );
});

Deno.test("cloudInit: an sshkeys line that is no key is refused before anything runs", async () => {
  await withEnv({ guests: [...demoGuests(), vm()] }, async (env) => {
    const r = await env.run("cloudInit", {
      vmid: 740,
      sshkeys: `${KEY}\nnot-a-key`,
    });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /sshkeys/);
    assert.equal(
      env.sim.requests.filter((q) => q.path.includes("/740/")).length,
      0,
    );
  });
});
