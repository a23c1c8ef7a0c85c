/**
 * setNic and removeNic end to end, both models: a NIC succeeds only when the config read back shows
 * it as PVE stores it (its MAC as PVE generated or kept it) or pending until a restart; a removal
 * when the NIC is gone or its deletion pending. Bad arguments are refused before any request.
 */
import assert from "node:assert/strict";
import { type Env, isCheckRequest, withEnv, written } from "./env.ts";
import { withCt } from "./lxc_fixture.ts";

const MAC = "BC:24:11:AA:BB:CC";

/** Whether a run's logs hold `pattern` at `level`. */
function logged(
  r: { logs: { level: string; message: string }[] },
  level: string,
  pattern: RegExp,
): boolean {
  return r.logs.some((l) => l.level === level && pattern.test(l.message));
}

/** The package's requests, swamp's pre-flight checks left out. */
const sentToPve = (env: Env) =>
  env.sim.requests.filter((q) => !isCheckRequest(q.path));

Deno.test("setNic: a new NIC reads back applied with the MAC PVE generated, quoted in the summary", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("setNic", {
      vmid: 100,
      nic: "net1",
      bridge: "vmbr0",
      tag: 20,
      firewall: true,
    });
    assert.equal(r.status, "succeeded", r.error);
    const net1 = String(env.sim.guest(100)?.config.net1);
    assert.match(
      net1,
      /^virtio=BC:24:11:[0-9A-F]{2}:[0-9A-F]{2}:[0-9A-F]{2},bridge=vmbr0,firewall=1,tag=20$/,
    );
    assert.ok(logged(r, "info", new RegExp(`net1 reads ${net1}`)), net1);
    assert.equal(written(r, "vm-100").lastOperation, "setNic");
  });
});

Deno.test("setNic: changing a NIC's tag keeps its model and MAC", async () => {
  await withEnv({}, async (env) => {
    env.sim.guest(102)!.config.net0 = `e1000=${MAC},bridge=vmbr0,tag=10`;
    const r = await env.run("setNic", {
      vmid: 102,
      nic: "net0",
      bridge: "vmbr0",
      tag: 30,
    });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(
      env.sim.guest(102)?.config.net0,
      `e1000=${MAC},bridge=vmbr0,tag=30`,
    );
  });
});

Deno.test("setNic: a given MAC is stored and read back as given", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("setNic", {
      vmid: 102,
      nic: "net3",
      model: "vmxnet3",
      bridge: "vmbr1",
      macaddr: "02:00:00:00:00:0a",
      rate: 12.5,
    });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(
      env.sim.guest(102)?.config.net3,
      "vmxnet3=02:00:00:00:00:0a,bridge=vmbr1,rate=12.5",
    );
  });
});

Deno.test("removeNic: the NIC is gone from the config read back", async () => {
  await withEnv({}, async (env) => {
    env.sim.guest(100)!.config.net1 = `virtio=${MAC},bridge=vmbr0`;
    const r = await env.run("removeNic", { vmid: 100, nic: "net1" });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(env.sim.guest(100)?.config.net1, undefined);
    assert.equal(written(r, "vm-100").pendingDelete, undefined);
  });
});

Deno.test("setNic: on a running VM without network hot-plug a model change is pending and recorded", async () => {
  await withEnv({}, async (env) => {
    const vm = env.sim.guest(100)!;
    vm.config.hotplug = "disk,usb";
    vm.config.net0 = `virtio=${MAC},bridge=vmbr0`;
    const r = await env.run("setNic", {
      vmid: 100,
      nic: "net0",
      model: "e1000",
      bridge: "vmbr0",
    });
    assert.equal(r.status, "succeeded", r.error);
    const next = `e1000=${MAC},bridge=vmbr0`;
    assert.deepEqual(written(r, "vm-100").pending, { net0: next });
    assert.ok(logged(r, "info", /0 applied, 1 pending until a restart: net0/));
    assert.equal(vm.config.net0, `virtio=${MAC},bridge=vmbr0`);
  });
});

Deno.test("setNic: on a running VM without network hot-plug a tag change applies at once", async () => {
  await withEnv({}, async (env) => {
    const vm = env.sim.guest(100)!;
    vm.config.hotplug = "disk,usb";
    vm.config.net0 = `virtio=${MAC},bridge=vmbr0`;
    const r = await env.run("setNic", {
      vmid: 100,
      nic: "net0",
      bridge: "vmbr0",
      tag: 7,
    });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(vm.config.net0, `virtio=${MAC},bridge=vmbr0,tag=7`);
    assert.equal(written(r, "vm-100").pending, undefined);
  });
});

Deno.test("removeNic: on a running VM without network hot-plug the removal is pending and recorded", async () => {
  await withEnv({}, async (env) => {
    const vm = env.sim.guest(100)!;
    vm.config.hotplug = "0";
    vm.config.net1 = `virtio=${MAC},bridge=vmbr0`;
    const r = await env.run("removeNic", { vmid: 100, nic: "net1" });
    assert.equal(r.status, "succeeded", r.error);
    assert.deepEqual(written(r, "vm-100").pendingDelete, ["net1"]);
    assert.ok(logged(r, "info", /pending until a restart: net1 \(delete\)/));
  });
});

Deno.test("setNic: a bad nic, tag or MAC is refused naming the field before any request", async () => {
  await withEnv({}, async (env) => {
    const bad = [
      [{ nic: "net32" }, /net0 … net31 at "nic"/],
      [{ tag: 4095 }, /4094 at "tag"/],
      [{ macaddr: "01:00:5E:00:00:01" }, /unicast MAC .* at "macaddr"/],
    ] as const;
    for (const [over, field] of bad) {
      const r = await env.run("setNic", {
        vmid: 100,
        nic: "net0",
        bridge: "vmbr0",
        ...over,
      });
      assert.equal(r.status, "failed", JSON.stringify(over));
      assert.match(r.error ?? "", field);
    }
    assert.deepEqual(sentToPve(env), []);
  });
});

Deno.test("setNic (lxc): a running container takes a new NIC at once, named eth<N>, with a generated MAC", async () => {
  await withCt({}, async (env) => {
    const r = await env.run("setNic", {
      vmid: 300,
      nic: "net1",
      bridge: "vmbr0",
      ip: "dhcp",
    });
    assert.equal(r.status, "succeeded", r.error);
    const net1 = String(env.sim.guest(300)?.config.net1);
    assert.match(
      net1,
      /^name=eth1,bridge=vmbr0,hwaddr=BC:24:11:[0-9A-F:]{8},ip=dhcp,type=veth$/,
    );
    assert.ok(logged(r, "info", new RegExp(`net1 reads ${net1}`)), net1);
  });
});

Deno.test("setNic (lxc): changing a NIC's tag keeps its name and MAC", async () => {
  await withCt({}, async (env) => {
    const r = await env.run("setNic", {
      vmid: 300,
      nic: "net0",
      bridge: "vmbr0",
      ip: "10.0.0.50/24",
      gw: "10.0.0.1",
      tag: 5,
    });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(
      env.sim.guest(300)?.config.net0,
      "name=eth0,bridge=vmbr0,gw=10.0.0.1,hwaddr=BC:24:11:00:00:01,ip=10.0.0.50/24,tag=5,type=veth",
    );
  });
});

Deno.test("removeNic (lxc): net0 of a running container is unplugged at once", async () => {
  await withCt({}, async (env) => {
    const r = await env.run("removeNic", { vmid: 300, nic: "net0" });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(env.sim.guest(300)?.config.net0, undefined);
  });
});

Deno.test("removeNic (lxc): net10 of a running container waits pending, as pve-container leaves it", async () => {
  await withCt({}, async (env) => {
    const ct = env.sim.guest(300)!;
    ct.config.net10 = `name=eth10,bridge=vmbr0,hwaddr=${MAC},type=veth`;
    const r = await env.run("removeNic", { vmid: 300, nic: "net10" });
    assert.equal(r.status, "succeeded", r.error);
    assert.deepEqual(written(r, "ct-300").pendingDelete, ["net10"]);
    assert.ok(ct.config.net10 !== undefined);
  });
});

Deno.test("setNic (lxc): a bad address is refused naming the field before any request", async () => {
  await withCt({}, async (env) => {
    const r = await env.run("setNic", {
      vmid: 300,
      nic: "net1",
      bridge: "vmbr0",
      ip: "10.0.0.5",
    });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /prefix of 8 to 32 at "ip"/);
    assert.deepEqual(sentToPve(env), []);
  });
});
