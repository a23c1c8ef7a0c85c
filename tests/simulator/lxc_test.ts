/**
 * Proves the simulator's LXC container endpoints and the node storage/network
 * endpoints they depend on. Every test starts its own simulator and closes it.
 */

import assert from "node:assert/strict";
import {
  api,
  type ApiAnswer,
  type ApiOptions,
  type ApiParams,
  tokenHeader,
  until,
  waitTask,
} from "../../simulator/sim_client.ts";
import {
  type SimGuest,
  type SimOptions,
  type Simulator,
  startSimulator,
} from "../../simulator/simulator.ts";
import { parseUpid } from "../../simulator/tasks.ts";

const TOKEN = { id: "root@pam!ci", secret: "ct-secret-1" };
const AUTH = { auth: tokenHeader(TOKEN.id, TOKEN.secret) };
/** A token that may not touch container 303 nor the unused id 555. */
const LIMITED = {
  id: "ops@pve!ci",
  secret: "ops-secret",
  denyVmids: [303, 555],
};
const LIMITED_AUTH = { auth: tokenHeader(LIMITED.id, LIMITED.secret) };

const TEMPLATE = "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst";
const KEY =
  "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHq3c0ZpQ0lLb2tRb0lhZlJzVmhBc2Z6b2Fv ci@example";

/** pve1: 300 running (static ip), 301 stopped, 303 denied to LIMITED, 100 qemu; pve2: 302 stopped. */
function guests(): SimGuest[] {
  return [
    {
      vmid: 300,
      node: "pve1",
      type: "lxc",
      name: "web-ct",
      status: "running",
      tags: ["swamp", "web"],
      config: {
        arch: "amd64",
        ostype: "debian",
        cores: 2,
        memory: 1024,
        swap: 512,
        unprivileged: 1,
        rootfs: "local-lvm:vm-300-disk-0,size=8G",
        net0:
          "name=eth0,bridge=vmbr0,gw=10.0.0.1,hwaddr=BC:24:11:00:03:00,ip=10.0.0.30/24,type=veth",
      },
    },
    {
      vmid: 301,
      node: "pve1",
      type: "lxc",
      name: "idle-ct",
      status: "stopped",
      config: {
        memory: 512,
        rootfs: "local-lvm:vm-301-disk-0,size=4G",
        net0:
          "name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:03:01,ip=dhcp,type=veth",
      },
    },
    {
      vmid: 302,
      node: "pve2",
      type: "lxc",
      name: "far-ct",
      status: "stopped",
      config: { rootfs: "local-lvm:vm-302-disk-0,size=4G" },
    },
    {
      vmid: 303,
      node: "pve1",
      type: "lxc",
      name: "secret-ct",
      status: "running",
      config: { rootfs: "local-lvm:vm-303-disk-0,size=4G" },
    },
    { vmid: 100, node: "pve1", type: "qemu", name: "vm", status: "running" },
  ];
}

async function withSim(
  fn: (sim: Simulator) => Promise<void>,
  extra: Partial<SimOptions> = {},
): Promise<void> {
  const sim = await startSimulator({
    nodes: ["pve1", "pve2"],
    guests: guests(),
    tokens: [TOKEN, LIMITED],
    taskDurationMs: 20,
    ...extra,
  });
  try {
    await fn(sim);
  } finally {
    await sim.close();
  }
}

function call(
  sim: Simulator,
  method: string,
  path: string,
  params: ApiParams = {},
  opts: ApiOptions = AUTH,
): Promise<ApiAnswer> {
  return api(sim.url, method, path, params, opts);
}

function assertPveError(r: ApiAnswer, status: number, message: string): void {
  assert.equal(r.status, status, JSON.stringify(r.body));
  assert.equal(r.body.message, `${message}\n`);
}

/** Sends a task-creating request and waits for its task; returns the UPID and final status. */
async function runTask(
  sim: Simulator,
  method: string,
  path: string,
  params: ApiParams = {},
): Promise<{ upid: string; status: Record<string, unknown> }> {
  const r = await call(sim, method, path, params);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const upid = r.body.data as string;
  return { upid, status: await waitTask(sim.url, upid, AUTH) };
}

function createParams(extra: ApiParams = {}): ApiParams {
  return {
    vmid: 400,
    ostemplate: TEMPLATE,
    hostname: "new-ct",
    rootfs: "local-lvm:8",
    cores: 2,
    memory: 1024,
    swap: 0,
    net0: "name=eth0,bridge=vmbr0,ip=10.0.0.40/24,gw=10.0.0.1",
    ...extra,
  };
}

// --- reads ---------------------------------------------------------------

Deno.test("lxc list shows the node's containers with status fields and leaves out denied ones", async () => {
  await withSim(async (sim) => {
    const r = await call(sim, "GET", "/nodes/pve1/lxc", {}, LIMITED_AUTH);
    assert.equal(r.status, 200);
    const rows = r.body.data as Record<string, unknown>[];
    assert.deepEqual(rows.map((c) => c.vmid), [300, 301]);
    const web = rows[0];
    assert.equal(web.status, "running");
    assert.equal(web.name, "web-ct");
    assert.equal(web.type, "lxc");
    assert.equal(web.tags, "swamp;web");
    assert.equal(web.maxmem, 1024 * 2 ** 20);
    assert.equal(web.maxdisk, 8 * 2 ** 30);
    assert.equal(web.cpus, 2);
    assert.equal("ha" in web, false);
  });
});

Deno.test("lxc status/current shows status, name, tags, ha and metrics, no qmpstatus", async () => {
  await withSim(async (sim) => {
    const r = await call(sim, "GET", "/nodes/pve1/lxc/300/status/current");
    const s = r.body.data;
    assert.equal(s.status, "running");
    assert.equal(s.name, "web-ct");
    assert.equal(s.tags, "swamp;web");
    assert.deepEqual(s.ha, { managed: 0 });
    assert.equal(typeof s.uptime, "number");
    assert.equal(typeof s.pid, "number");
    assert.equal(s.maxswap, 512 * 2 ** 20);
    assert.equal("qmpstatus" in s, false);
    assert.equal("agent" in s, false);
    sim.setGuest(301, { lock: "backup" });
    const locked = await call(sim, "GET", "/nodes/pve1/lxc/301/status/current");
    assert.equal(locked.body.data.lock, "backup");
    assert.equal(locked.body.data.status, "stopped");
  });
});

Deno.test("lxc status/current of a container on another node, a missing one or a VM is 500 config file does not exist", async () => {
  await withSim(async (sim) => {
    for (const vmid of [302, 999, 100]) {
      assertPveError(
        await call(sim, "GET", `/nodes/pve1/lxc/${vmid}/status/current`),
        500,
        `Configuration file 'nodes/pve1/lxc/${vmid}.conf' does not exist`,
      );
    }
  });
});

Deno.test("lxc paths on a denied vmid are 403 before existence", async () => {
  await withSim(async (sim) => {
    assertPveError(
      await call(sim, "GET", "/nodes/pve1/lxc/303/config", {}, LIMITED_AUTH),
      403,
      "Permission check failed (/vms/303, VM.Audit)",
    );
    assertPveError(
      await call(
        sim,
        "POST",
        "/nodes/pve1/lxc/555/status/start",
        {},
        LIMITED_AUTH,
      ),
      403,
      "Permission check failed (/vms/555, VM.PowerMgmt)",
    );
  });
});

Deno.test("containers have no guest agent: the agent paths are 501", async () => {
  await withSim(async (sim) => {
    const r = await call(sim, "POST", "/nodes/pve1/lxc/300/agent/exec", {
      command: ["true"],
    });
    assertPveError(
      r,
      501,
      "Method 'POST /nodes/pve1/lxc/300/agent/exec' not implemented",
    );
  });
});

Deno.test("interfaces of a running container report eth0 with net0's static address", async () => {
  await withSim(async (sim) => {
    const r = await call(sim, "GET", "/nodes/pve1/lxc/300/interfaces");
    const eth0 = r.body.data.find((i: { name: string }) => i.name === "eth0");
    assert.equal(eth0.inet, "10.0.0.30/24");
    assert.equal(eth0.hwaddr, "bc:24:11:00:03:00");
    const stopped = await call(sim, "GET", "/nodes/pve1/lxc/301/interfaces");
    assert.equal(stopped.body.data, null);
  });
});

Deno.test("cluster/resources shows a container's rootfs size as maxdisk", async () => {
  await withSim(async (sim) => {
    const r = await call(sim, "GET", "/cluster/resources", { type: "vm" });
    const ct = r.body.data.find((x: { vmid: number }) => x.vmid === 300);
    assert.equal(ct.type, "lxc");
    assert.equal(ct.maxdisk, 8 * 2 ** 30);
  });
});

// --- create --------------------------------------------------------------

Deno.test("create: the container appears locked at once and stopped with its config when vzcreate ends", async () => {
  await withSim(async (sim) => {
    sim.nextTask({ durationMs: 150 });
    const r = await call(sim, "POST", "/nodes/pve1/lxc", createParams());
    const upid = r.body.data as string;
    assert.equal(parseUpid(upid)?.type, "vzcreate");
    assert.equal(parseUpid(upid)?.id, "400");
    const during = await call(sim, "GET", "/nodes/pve1/lxc/400/status/current");
    assert.equal(during.body.data.lock, "create");
    assert.equal(during.body.data.status, "stopped");
    // pve-container's create_vm writes hostname and tags under the lock before the worker ends.
    assert.equal(during.body.data.name, "new-ct");
    const status = await waitTask(sim.url, upid, AUTH);
    assert.equal(status.exitstatus, "OK");
    const cfg = await call(sim, "GET", "/nodes/pve1/lxc/400/config");
    const c = cfg.body.data;
    assert.equal(c.hostname, "new-ct");
    assert.equal(c.rootfs, "local-lvm:vm-400-disk-0,size=8G");
    assert.equal(c.memory, 1024);
    assert.equal(c.swap, 0);
    assert.equal(c.unprivileged, 1);
    assert.equal(c.ostype, "debian");
    assert.equal("lock" in c, false);
    assert.match(
      c.net0,
      /^name=eth0,bridge=vmbr0,gw=10\.0\.0\.1,hwaddr=BC:24:11(:[0-9A-F]{2}){3},ip=10\.0\.0\.40\/24,type=veth$/,
    );
    assert.equal(sim.guest(400)?.status, "stopped");
  });
});

Deno.test("create with start=1: vzcreate ends OK and a separate vzstart task starts the container", async () => {
  await withSim(async (sim) => {
    const { status } = await runTask(
      sim,
      "POST",
      "/nodes/pve1/lxc",
      createParams({ start: true }),
    );
    assert.equal(status.exitstatus, "OK");
    const start = await until(
      () => Promise.resolve(sim.tasks().find((t) => t.type === "vzstart")),
      "vzstart task",
    );
    await waitTask(sim.url, start.upid, AUTH);
    assert.equal(start.exitstatus, "OK");
    assert.equal(sim.guest(400)?.status, "running");
  });
});

Deno.test("create of a taken vmid is 500 CT/VM already exists on node, before any task", async () => {
  await withSim(async (sim) => {
    assertPveError(
      await call(sim, "POST", "/nodes/pve1/lxc", createParams({ vmid: 302 })),
      500,
      "CT 302 already exists on node 'pve2'",
    );
    assertPveError(
      await call(sim, "POST", "/nodes/pve1/lxc", createParams({ vmid: 100 })),
      500,
      "VM 100 already exists on node 'pve1'",
    );
    assert.equal(sim.tasks().length, 0);
  });
});

Deno.test("create by a token denied the vmid is 403 Permission check failed", async () => {
  await withSim(async (sim) => {
    assertPveError(
      await call(
        sim,
        "POST",
        "/nodes/pve1/lxc",
        createParams({ vmid: 555 }),
        LIMITED_AUTH,
      ),
      403,
      "Permission check failed",
    );
  });
});

Deno.test("create on a storage without rootdir is 400 does not support container directories", async () => {
  await withSim(async (sim) => {
    const r = await call(
      sim,
      "POST",
      "/nodes/pve1/lxc",
      createParams({ rootfs: "local:8" }),
    );
    assertPveError(r, 400, "Parameter verification failed.");
    assert.deepEqual(r.body.errors, {
      storage: "storage 'local' does not support container directories",
    });
    assert.equal(sim.guest(400), undefined);
  });
});

Deno.test("create on a missing storage is 500 storage does not exist", async () => {
  await withSim(async (sim) => {
    assertPveError(
      await call(
        sim,
        "POST",
        "/nodes/pve1/lxc",
        createParams({ rootfs: "fast-ssd:8" }),
      ),
      500,
      "storage 'fast-ssd' does not exist",
    );
  });
});

Deno.test("create with a missing template fails its task and removes the container", async () => {
  await withSim(async (sim) => {
    const { status } = await runTask(
      sim,
      "POST",
      "/nodes/pve1/lxc",
      createParams({ ostemplate: "local:vztmpl/nope-1.0_amd64.tar.zst" }),
    );
    assert.equal(
      status.exitstatus,
      "unable to create CT 400 - can't find file 'local:vztmpl/nope-1.0_amd64.tar.zst'",
    );
    assert.equal(sim.guest(400), undefined);
  });
});

Deno.test("create with a template on an unknown storage is 500 before any task", async () => {
  await withSim(async (sim) => {
    assertPveError(
      await call(
        sim,
        "POST",
        "/nodes/pve1/lxc",
        createParams({ ostemplate: "nas:vztmpl/debian.tar.zst" }),
      ),
      500,
      "storage 'nas' does not exist",
    );
  });
});

Deno.test("create with an ostemplate that is no template is 500 content type needs to be vztmpl", async () => {
  await withSim(async (sim) => {
    assertPveError(
      await call(
        sim,
        "POST",
        "/nodes/pve1/lxc",
        createParams({ ostemplate: "local:iso/debian-12.iso" }),
      ),
      500,
      "unable to use volume local:iso/debian-12.iso - content type needs to be 'vztmpl'",
    );
  });
});

Deno.test("create larger than the storage's free space fails its task", async () => {
  await withSim(async (sim) => {
    const lvm = sim.storage("pve1", "local-lvm")!;
    lvm.total = 20 * 2 ** 30; // 16 GiB already used by 300/301/303
    const { status } = await runTask(
      sim,
      "POST",
      "/nodes/pve1/lxc",
      createParams({ rootfs: "local-lvm:8" }),
    );
    assert.match(
      String(status.exitstatus),
      /^unable to create CT 400 - lvcreate 'pve\/vm-400-disk-0' error: {3}Volume group "pve" has insufficient free space/,
    );
    assert.equal(sim.guest(400), undefined);
  });
});

Deno.test("create with a missing bridge succeeds; its start task fails naming the bridge", async () => {
  await withSim(async (sim) => {
    const { status } = await runTask(
      sim,
      "POST",
      "/nodes/pve1/lxc",
      createParams({
        net0: "name=eth0,bridge=vmbr9,ip=dhcp",
        start: true,
      }),
    );
    assert.equal(status.exitstatus, "OK");
    const start = await until(
      () =>
        Promise.resolve(
          sim.tasks().find((t) =>
            t.type === "vzstart" && t.status === "stopped"
          ),
        ),
      "vzstart task end",
    );
    assert.equal(start.exitstatus, "startup for container '400' failed");
    assert.ok(
      start.log.some((l) => l.includes("bridge 'vmbr9' does not exist")),
      start.log.join("\n"),
    );
    assert.equal(sim.guest(400)?.status, "stopped");
  });
});

Deno.test("node task list finds the vzstart task a create with start=1 forked", async () => {
  await withSim(async (sim) => {
    await runTask(
      sim,
      "POST",
      "/nodes/pve1/lxc",
      createParams({ net0: "name=eth0,bridge=vmbr9,ip=dhcp", start: true }),
    );
    const found = await until(async () => {
      const r = await call(sim, "GET", "/nodes/pve1/tasks", {
        vmid: 400,
        typefilter: "vzstart",
      });
      return r.body.data.length > 0 ? r.body : undefined;
    }, "vzstart in the task list");
    assert.equal(found.total, 1);
    assert.equal(found.data[0].status, "startup for container '400' failed");
    assert.equal(found.data[0].user, "root@pam");
    assert.equal(found.data[0].tokenid, "ci");
    const all = await call(sim, "GET", "/nodes/pve1/tasks", { vmid: 400 });
    assert.deepEqual(
      all.body.data.map((t: { type: string }) => t.type),
      ["vzstart", "vzcreate"],
    );
  });
});

Deno.test("create passes plain ssh-public-keys to the container, not into its config", async () => {
  await withSim(async (sim) => {
    await runTask(
      sim,
      "POST",
      "/nodes/pve1/lxc",
      createParams({ "ssh-public-keys": `${KEY}\n`, password: "s3cret-pw" }),
    );
    assert.equal(sim.containerSetup(400)?.sshPublicKeys, `${KEY}\n`);
    assert.equal(sim.containerSetup(400)?.password, "s3cret-pw");
    const cfg = await call(sim, "GET", "/nodes/pve1/lxc/400/config");
    assert.equal(JSON.stringify(cfg.body).includes("AAAAC3"), false);
  });
});

Deno.test("create refuses URL-encoded ssh-public-keys: 500 SSH public key validation error", async () => {
  await withSim(async (sim) => {
    assertPveError(
      await call(
        sim,
        "POST",
        "/nodes/pve1/lxc",
        createParams({ "ssh-public-keys": encodeURIComponent(KEY) }),
      ),
      500,
      "SSH public key validation error",
    );
  });
});

// --- power -------------------------------------------------------------------

Deno.test("start and stop run vzstart/vzstop tasks and change the status at task end", async () => {
  await withSim(async (sim) => {
    const started = await runTask(
      sim,
      "POST",
      "/nodes/pve1/lxc/301/status/start",
    );
    assert.equal(parseUpid(started.upid)?.type, "vzstart");
    assert.equal(started.status.exitstatus, "OK");
    assert.equal(sim.guest(301)?.status, "running");
    const stopped = await runTask(
      sim,
      "POST",
      "/nodes/pve1/lxc/301/status/stop",
    );
    assert.equal(parseUpid(stopped.upid)?.type, "vzstop");
    assert.equal(sim.guest(301)?.status, "stopped");
  });
});

Deno.test("shutdown runs a vzshutdown task that stops the container", async () => {
  await withSim(async (sim) => {
    const { upid, status } = await runTask(
      sim,
      "POST",
      "/nodes/pve1/lxc/300/status/shutdown",
      { timeout: 30 },
    );
    assert.equal(parseUpid(upid)?.type, "vzshutdown");
    assert.equal(status.exitstatus, "OK");
    assert.equal(sim.guest(300)?.status, "stopped");
  });
});

Deno.test("shutdown of a container that ignores it fails its task unless forceStop", async () => {
  await withSim(async (sim) => {
    sim.setGuest(300, { ignoresShutdown: true });
    const polite = await runTask(
      sim,
      "POST",
      "/nodes/pve1/lxc/300/status/shutdown",
      { timeout: 5 },
    );
    assert.equal(
      polite.status.exitstatus,
      "command 'lxc-stop -n 300 --nokill --timeout 5' failed: exit code 1",
    );
    assert.equal(sim.guest(300)?.status, "running");
    const forced = await runTask(
      sim,
      "POST",
      "/nodes/pve1/lxc/300/status/shutdown",
      { timeout: 5, forceStop: true },
    );
    assert.equal(forced.status.exitstatus, "OK");
    assert.equal(sim.guest(300)?.status, "stopped");
  });
});

Deno.test("start of a running container is 500 CT already running, before any task", async () => {
  await withSim(async (sim) => {
    assertPveError(
      await call(sim, "POST", "/nodes/pve1/lxc/300/status/start"),
      500,
      "CT 300 already running",
    );
    assert.equal(sim.tasks().length, 0);
  });
});

Deno.test("stop of a stopped container is 500 CT not running", async () => {
  await withSim(async (sim) => {
    assertPveError(
      await call(sim, "POST", "/nodes/pve1/lxc/301/status/stop"),
      500,
      "CT 301 not running",
    );
  });
});

Deno.test("start of a container on another node gets a UPID whose task fails config does not exist", async () => {
  await withSim(async (sim) => {
    const { status } = await runTask(
      sim,
      "POST",
      "/nodes/pve1/lxc/302/status/start",
    );
    assert.equal(
      status.exitstatus,
      "Configuration file 'nodes/pve1/lxc/302.conf' does not exist",
    );
  });
});

Deno.test("skiplock is root@pam only: 400 for an API token", async () => {
  await withSim(async (sim) => {
    const r = await call(sim, "POST", "/nodes/pve1/lxc/301/status/start", {
      skiplock: true,
    });
    assertPveError(r, 400, "Parameter verification failed.");
    assert.deepEqual(r.body.errors, {
      skiplock: "Only root may use this option.",
    });
  });
});

Deno.test("HA start that never applies: hastart task OK, container stays stopped", async () => {
  await withSim(async (sim) => {
    sim.setGuest(301, {
      ha: { managed: true, state: "stopped", neverApplies: true },
    });
    const { upid, status } = await runTask(
      sim,
      "POST",
      "/nodes/pve1/lxc/301/status/start",
    );
    assert.equal(parseUpid(upid)?.type, "hastart");
    assert.equal(status.exitstatus, "OK");
    assert.ok(sim.task(upid)?.log.includes("Requesting HA start for CT 301"));
    await new Promise((r) => setTimeout(r, 60));
    const s = await call(sim, "GET", "/nodes/pve1/lxc/301/status/current");
    assert.equal(s.body.data.status, "stopped");
    assert.deepEqual(s.body.data.ha, { managed: 1, state: "started" });
  });
});

Deno.test("HA stop applies after applyDelayMs", async () => {
  await withSim(async (sim) => {
    sim.setGuest(300, {
      ha: { managed: true, state: "started", applyDelayMs: 80 },
    });
    const { upid } = await runTask(
      sim,
      "POST",
      "/nodes/pve1/lxc/300/status/stop",
    );
    assert.equal(parseUpid(upid)?.type, "hastop");
    assert.equal(sim.guest(300)?.status, "running");
    await until(
      () =>
        Promise.resolve(
          sim.guest(300)?.status === "stopped" ? true : undefined,
        ),
      "HA stop",
    );
  });
});

// --- resize ----------------------------------------------------------------

Deno.test("resize grows the rootfs size= when the resize task ends", async () => {
  await withSim(async (sim) => {
    const { upid, status } = await runTask(
      sim,
      "PUT",
      "/nodes/pve1/lxc/301/resize",
      { disk: "rootfs", size: "+2G" },
    );
    assert.equal(parseUpid(upid)?.type, "resize");
    assert.equal(status.exitstatus, "OK");
    assert.equal(
      sim.guest(301)?.config.rootfs,
      "local-lvm:vm-301-disk-0,size=6G",
    );
  });
});

Deno.test("resize to the current size is 500 disk is already at specified size", async () => {
  await withSim(async (sim) => {
    assertPveError(
      await call(sim, "PUT", "/nodes/pve1/lxc/301/resize", {
        disk: "rootfs",
        size: "4G",
      }),
      500,
      "disk is already at specified size",
    );
  });
});

Deno.test("resize refuses to shrink: 500 unable to shrink disk size", async () => {
  await withSim(async (sim) => {
    assertPveError(
      await call(sim, "PUT", "/nodes/pve1/lxc/301/resize", {
        disk: "rootfs",
        size: "2G",
      }),
      500,
      "unable to shrink disk size",
    );
  });
});

Deno.test("resize of an unset mount point is 500 format error", async () => {
  await withSim(async (sim) => {
    const r = await call(sim, "PUT", "/nodes/pve1/lxc/301/resize", {
      disk: "mp0",
      size: "+1G",
    });
    assertPveError(r, 500, "format error");
    assert.deepEqual(r.body.errors, {
      volume: "property is missing and it is not optional",
    });
  });
});

// --- delete ------------------------------------------------------------------

Deno.test("delete removes the container when vzdestroy ends and frees its volume", async () => {
  await withSim(async (sim) => {
    const before = await call(
      sim,
      "GET",
      "/nodes/pve1/storage/local-lvm/status",
    );
    const { upid, status } = await runTask(
      sim,
      "DELETE",
      "/nodes/pve1/lxc/301",
      { purge: true },
    );
    assert.equal(parseUpid(upid)?.type, "vzdestroy");
    assert.equal(status.exitstatus, "OK");
    assert.equal(sim.guest(301), undefined);
    const after = await call(
      sim,
      "GET",
      "/nodes/pve1/storage/local-lvm/status",
    );
    assert.equal(after.body.data.avail - before.body.data.avail, 4 * 2 ** 30);
  });
});

Deno.test("delete of a running container is 500 container is running, unless force", async () => {
  await withSim(async (sim) => {
    assertPveError(
      await call(sim, "DELETE", "/nodes/pve1/lxc/300"),
      500,
      "unable to destroy CT 300 - container is running",
    );
    const { status, upid } = await runTask(
      sim,
      "DELETE",
      "/nodes/pve1/lxc/300",
      { force: true },
    );
    assert.equal(status.exitstatus, "OK");
    assert.ok(
      sim.task(upid)?.log.includes("forced to stop CT 300 before destroying!"),
    );
    assert.equal(sim.guest(300), undefined);
  });
});

Deno.test("delete of an HA container without purge is 500", async () => {
  await withSim(async (sim) => {
    sim.setGuest(301, { ha: { managed: true, state: "stopped" } });
    assertPveError(
      await call(sim, "DELETE", "/nodes/pve1/lxc/301"),
      500,
      "unable to remove CT 301 - used in HA resources and purge parameter not set.",
    );
  });
});

// --- config ------------------------------------------------------------------

Deno.test("PUT config on a stopped container applies every key at once", async () => {
  await withSim(async (sim) => {
    const r = await call(sim, "PUT", "/nodes/pve1/lxc/301/config", {
      memory: 2048,
      swap: 256,
      hostname: "renamed",
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const pending = await call(sim, "GET", "/nodes/pve1/lxc/301/pending");
    assert.equal(
      pending.body.data.some((row: { pending?: unknown }) =>
        row.pending !== undefined
      ),
      false,
    );
    const cfg = await call(sim, "GET", "/nodes/pve1/lxc/301/config", {
      current: true,
    });
    assert.equal(cfg.body.data.memory, 2048);
    assert.equal(cfg.body.data.swap, 256);
    assert.equal(cfg.body.data.hostname, "renamed");
  });
});

Deno.test("PUT config on a running container hotplugs memory and hostname and leaves features pending", async () => {
  await withSim(async (sim) => {
    const r = await call(sim, "PUT", "/nodes/pve1/lxc/300/config", {
      memory: 4096,
      hostname: "web2",
      features: "nesting=1",
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const rows = (await call(sim, "GET", "/nodes/pve1/lxc/300/pending")).body
      .data as { key: string; value?: unknown; pending?: unknown }[];
    const row = (k: string) => rows.find((x) => x.key === k);
    assert.deepEqual(row("features"), {
      key: "features",
      pending: "nesting=1",
    });
    assert.deepEqual(row("memory"), { key: "memory", value: 4096 });
    assert.deepEqual(row("hostname"), { key: "hostname", value: "web2" });
    const current = await call(sim, "GET", "/nodes/pve1/lxc/300/config", {
      current: true,
    });
    assert.equal("features" in current.body.data, false);
    const withPending = await call(sim, "GET", "/nodes/pve1/lxc/300/config");
    assert.equal(withPending.body.data.features, "nesting=1");
  });
});

Deno.test("pending container changes apply when it starts", async () => {
  await withSim(async (sim) => {
    await call(sim, "PUT", "/nodes/pve1/lxc/300/config", {
      nameserver: "1.1.1.1",
    });
    await runTask(sim, "POST", "/nodes/pve1/lxc/300/status/stop");
    await runTask(sim, "POST", "/nodes/pve1/lxc/300/status/start");
    assert.equal(sim.guest(300)?.config.nameserver, "1.1.1.1");
    assert.deepEqual(sim.guest(300)?.pending, {});
  });
});

Deno.test("PUT config hotplugging net0 onto a missing bridge is 400 and changes nothing", async () => {
  await withSim(async (sim) => {
    const before = sim.guest(300)?.config.net0;
    const r = await call(sim, "PUT", "/nodes/pve1/lxc/300/config", {
      net0: "name=eth0,bridge=vmbr9,ip=dhcp",
      cores: 4,
    });
    assertPveError(r, 400, "Parameter verification failed.");
    assert.deepEqual(r.body.errors, {
      net0: "unable to hotplug net0: bridge 'vmbr9' does not exist",
    });
    assert.equal(sim.guest(300)?.config.net0, before);
    assert.equal(sim.guest(300)?.config.cores, 2);
  });
});

Deno.test("PUT config of unprivileged is 500 read-only option", async () => {
  await withSim(async (sim) => {
    assertPveError(
      await call(sim, "PUT", "/nodes/pve1/lxc/301/config", { unprivileged: 0 }),
      500,
      "unable to modify read-only option: 'unprivileged'",
    );
  });
});

Deno.test("PUT config on a locked container is 500 CT is locked", async () => {
  await withSim(async (sim) => {
    sim.setGuest(301, { lock: "backup" });
    assertPveError(
      await call(sim, "PUT", "/nodes/pve1/lxc/301/config", { cores: 1 }),
      500,
      "CT is locked (backup)",
    );
  });
});

// --- storage and network --------------------------------------------------------

Deno.test("storage list shows content, type and space and filters by content", async () => {
  await withSim(async (sim) => {
    const all = await call(sim, "GET", "/nodes/pve1/storage");
    const ids = all.body.data.map((s: { storage: string }) => s.storage);
    assert.deepEqual(ids, ["local", "local-lvm", "local-zfs"]);
    const local = all.body.data[0];
    assert.equal(local.type, "dir");
    assert.equal(local.content, "backup,iso,vztmpl");
    assert.equal(local.active, 1);
    assert.equal(local.enabled, 1);
    assert.equal(local.total, local.used + local.avail);
    const rootdir = await call(sim, "GET", "/nodes/pve1/storage", {
      content: "rootdir",
    });
    assert.deepEqual(
      rootdir.body.data.map((s: { storage: string }) => s.storage),
      ["local-lvm", "local-zfs"],
    );
  });
});

Deno.test("storage content lists templates with volid, format, size and content", async () => {
  await withSim(async (sim) => {
    const r = await call(sim, "GET", "/nodes/pve1/storage/local/content", {
      content: "vztmpl",
    });
    assert.equal(r.status, 200);
    assert.equal(r.body.data.length, 1);
    const t = r.body.data[0];
    assert.equal(t.volid, TEMPLATE);
    assert.equal(t.format, "tzst");
    assert.equal(t.content, "vztmpl");
    assert.equal(typeof t.size, "number");
  });
});

Deno.test("storage content of container volumes follows their configs", async () => {
  await withSim(async (sim) => {
    const r = await call(sim, "GET", "/nodes/pve1/storage/local-lvm/content", {
      content: "rootdir",
    });
    assert.deepEqual(
      r.body.data.map((v: { volid: string; vmid: number; size: number }) => [
        v.volid,
        v.vmid,
        v.size,
      ]),
      [
        ["local-lvm:vm-300-disk-0", 300, 8 * 2 ** 30],
        ["local-lvm:vm-301-disk-0", 301, 4 * 2 ** 30],
        ["local-lvm:vm-303-disk-0", 303, 4 * 2 ** 30],
      ],
    );
  });
});

Deno.test("storage content of an unknown storage is 500 does not exist; its status is 400 No such storage.", async () => {
  await withSim(async (sim) => {
    assertPveError(
      await call(sim, "GET", "/nodes/pve1/storage/nas/content"),
      500,
      "storage 'nas' does not exist",
    );
    const r = await call(sim, "GET", "/nodes/pve1/storage/nas/status");
    assertPveError(r, 400, "Parameter verification failed.");
    assert.deepEqual(r.body.errors, { storage: "No such storage." });
  });
});

Deno.test("a storage restricted to another node is listed disabled and refused at create", async () => {
  await withSim(async (sim) => {
    const r = await call(sim, "GET", "/nodes/pve1/storage", {
      storage: "ceph",
    });
    assert.equal(r.body.data[0].enabled, 0);
    assert.equal(r.body.data[0].active, 0);
    assertPveError(
      await call(
        sim,
        "POST",
        "/nodes/pve1/lxc",
        createParams({ rootfs: "ceph:8" }),
      ),
      500,
      "storage 'ceph' is not available on node 'pve1'",
    );
  }, {
    storages: [
      {
        storage: "local",
        type: "dir",
        content: ["vztmpl"],
        templates: [{ file: "debian-12-standard_12.7-1_amd64.tar.zst" }],
      },
      {
        storage: "ceph",
        type: "rbd",
        content: ["rootdir", "images"],
        nodes: ["pve2"],
        shared: true,
      },
    ],
  });
});

Deno.test("network any_bridge lists the node's bridges", async () => {
  await withSim(async (sim) => {
    const r = await call(sim, "GET", "/nodes/pve2/network", {
      type: "any_bridge",
    });
    assert.deepEqual(
      r.body.data.map((i: { iface: string; type: string; active?: number }) => [
        i.iface,
        i.type,
        i.active,
      ]),
      [["vmbr0", "bridge", 1], ["vmbr1", "OVSBridge", undefined]],
    );
    const all = await call(sim, "GET", "/nodes/pve2/network");
    assert.ok(all.body.data.some((i: { type: string }) => i.type === "eth"));
  }, {
    bridges: {
      pve1: ["vmbr0"],
      pve2: [
        { iface: "vmbr0", ports: "eno1" },
        { iface: "vmbr1", type: "OVSBridge", active: false },
      ],
    },
  });
});

Deno.test("PUT config of a container NIC without hwaddr gives it a new MAC, as parse_lxc_network does", async () => {
  await withSim(async (sim) => {
    await call(sim, "PUT", "/nodes/pve1/lxc/301/config", {
      net0: "name=eth0,bridge=vmbr0,ip=dhcp",
    });
    const net0 = String(sim.guest(301)?.config.net0);
    assert.match(net0, /^name=eth0,bridge=vmbr0,hwaddr=BC:24:11:/);
    assert.ok(!net0.includes("hwaddr=BC:24:11:00:03:01,"), net0);
  });
});

Deno.test("PUT config deleting net10 of a running container leaves it pending; net0 is unplugged at once", async () => {
  await withSim(async (sim) => {
    const ct = sim.guest(300)!;
    ct.config.net10 =
      "name=eth10,bridge=vmbr0,hwaddr=BC:24:11:00:03:10,type=veth";
    await call(sim, "PUT", "/nodes/pve1/lxc/300/config", {
      delete: "net0,net10",
    });
    assert.equal(ct.config.net0, undefined);
    assert.deepEqual(ct.pendingDelete, ["net10"]);
  });
});
