/**
 * Proves the simulator follows the rules PVE sets in its Perl rather than its
 * schema: what an API token may not do that root@pam (pvesh over ssh) may,
 * refusals before any task, exec input/output bytes, the broadcast lag of
 * `/cluster/resources`, and the JSON types of PVE's answers. One test per rule.
 */

import assert from "node:assert/strict";
import {
  api,
  type ApiParams,
  tokenHeader,
  until,
} from "../../simulator/sim_client.ts";
import {
  type SimGuest,
  type SimOptions,
  type Simulator,
  startSimulator,
} from "../../simulator/simulator.ts";
import { type GuestAgent, startGuestAgent } from "../../simulator/qga.ts";

/** An API token of root@pam: still not root@pam to PVE's root-only checks. */
const TOKEN = { id: "root@pam!ci", secret: "rules-secret" };
/** Stands for pvesh over ssh: root@pam itself. */
const PVESH = {
  id: "root@pam!pvesh-node",
  secret: "pvesh-secret",
  pvesh: true,
};
const AS_TOKEN = { auth: tokenHeader(TOKEN.id, TOKEN.secret) };
const AS_ROOT = { auth: tokenHeader(PVESH.id, PVESH.secret) };

const TEMPLATE = "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst";

function guests(): SimGuest[] {
  return [
    {
      vmid: 100,
      node: "pve1",
      type: "qemu",
      name: "web",
      status: "running",
      agent: "running",
      config: { cores: 2, scsi0: "local-lvm:vm-100-disk-0,size=8G" },
    },
    {
      vmid: 9000,
      node: "pve1",
      type: "qemu",
      name: "tmpl",
      status: "stopped",
      config: { template: 1, scsi0: "local-lvm:base-9000-disk-0,size=8G" },
    },
    {
      vmid: 300,
      node: "pve1",
      type: "lxc",
      name: "unpriv-ct",
      status: "stopped",
      config: {
        unprivileged: 1,
        features: "nesting=1",
        rootfs: "local-lvm:vm-300-disk-0,size=4G",
      },
    },
    {
      vmid: 301,
      node: "pve1",
      type: "lxc",
      name: "priv-ct",
      status: "stopped",
      config: { rootfs: "local-lvm:vm-301-disk-0,size=4G", cpulimit: 0.5 },
    },
  ];
}

async function withSim(
  fn: (sim: Simulator) => Promise<void>,
  extra: Partial<SimOptions> = {},
): Promise<void> {
  const sim = await startSimulator({
    nodes: ["pve1"],
    guests: guests(),
    tokens: [TOKEN, PVESH],
    taskDurationMs: 10,
    ...extra,
  });
  try {
    await fn(sim);
  } finally {
    await sim.close();
  }
}

async function withAgentSim(
  fn: (sim: Simulator, agent: GuestAgent) => Promise<void>,
) {
  const agent = await startGuestAgent();
  try {
    await withSim((sim) => fn(sim, agent), { agent });
  } finally {
    await agent.stop();
  }
}

const createCt = (extra: ApiParams): ApiParams => ({
  vmid: 310,
  ostemplate: TEMPLATE,
  rootfs: "local-lvm:4",
  ...extra,
});

// --- identity: token vs root@pam ------------------------------------------------

Deno.test("a token setting a root-only qemu key (args) is 500 only root can set; root@pam may", async () => {
  await withSim(async (sim) => {
    const path = "/nodes/pve1/qemu/100/config";
    const token = await api(
      sim.url,
      "PUT",
      path,
      { args: "-no-reboot" },
      AS_TOKEN,
    );
    assert.equal(token.status, 500);
    assert.equal(token.body.message, "only root can set 'args' config\n");
    const root = await api(
      sim.url,
      "PUT",
      path,
      { args: "-no-reboot" },
      AS_ROOT,
    );
    assert.equal(root.status, 200, JSON.stringify(root.body));
  });
});

Deno.test("a token deleting a root-only qemu key (hookscript) is refused too", async () => {
  await withSim(async (sim) => {
    const r = await api(sim.url, "PUT", "/nodes/pve1/qemu/100/config", {
      delete: "hookscript",
    }, AS_TOKEN);
    assert.equal(r.status, 500);
    assert.equal(r.body.message, "only root can set 'hookscript' config\n");
  });
});

Deno.test("a token may set keys with a privilege of their own (cores, net0, tags)", async () => {
  await withSim(async (sim) => {
    const r = await api(sim.url, "PUT", "/nodes/pve1/qemu/100/config", {
      cores: 4,
      net0: "virtio,bridge=vmbr0",
      tags: "a;b",
    }, AS_TOKEN);
    assert.equal(r.status, 200, JSON.stringify(r.body));
  });
});

Deno.test("skiplock from a token is 400 Only root may use this option", async () => {
  await withSim(async (sim) => {
    const r = await api(sim.url, "PUT", "/nodes/pve1/qemu/100/config", {
      cores: 4,
      skiplock: 1,
    }, AS_TOKEN);
    assert.equal(r.status, 400);
    assert.deepEqual(r.body.errors, {
      skiplock: "Only root may use this option.",
    });
  });
});

Deno.test("a token creating a privileged container with any feature is 403; root@pam may", async () => {
  await withSim(async (sim) => {
    const params = createCt({ features: "nesting=1" });
    const token = await api(
      sim.url,
      "POST",
      "/nodes/pve1/lxc",
      params,
      AS_TOKEN,
    );
    assert.equal(token.status, 403);
    assert.equal(
      token.body.message,
      "Permission check failed (changing feature flags for privileged container is only allowed for root@pam)\n",
    );
    const root = await api(sim.url, "POST", "/nodes/pve1/lxc", params, AS_ROOT);
    assert.equal(root.status, 200, JSON.stringify(root.body));
  });
});

Deno.test("a token creating an unprivileged container may set nesting alone, not keyctl", async () => {
  await withSim(async (sim) => {
    const nesting = await api(sim.url, "POST", "/nodes/pve1/lxc", {
      ...createCt({ features: "nesting=1", unprivileged: 1 }),
    }, AS_TOKEN);
    assert.equal(nesting.status, 200, JSON.stringify(nesting.body));
    const keyctl = await api(sim.url, "POST", "/nodes/pve1/lxc", {
      ...createCt({
        vmid: 311,
        features: "nesting=1,keyctl=1",
        unprivileged: 1,
      }),
    }, AS_TOKEN);
    assert.equal(keyctl.status, 403);
    assert.equal(
      keyctl.body.message,
      "Permission check failed (changing feature flags (except nesting) is only allowed for root@pam)\n",
    );
  });
});

Deno.test("a token changing a feature other than nesting of an existing container is 403", async () => {
  await withSim(async (sim) => {
    const r = await api(sim.url, "PUT", "/nodes/pve1/lxc/300/config", {
      features: "nesting=1,fuse=1",
    }, AS_TOKEN);
    assert.equal(r.status, 403);
    assert.match(r.body.message, /except nesting/);
    const nestingOff = await api(sim.url, "PUT", "/nodes/pve1/lxc/300/config", {
      features: "nesting=0",
    }, AS_TOKEN);
    assert.equal(nestingOff.status, 200, JSON.stringify(nestingOff.body));
  });
});

Deno.test("a token giving a container a bind mount point is 403", async () => {
  await withSim(async (sim) => {
    const r = await api(sim.url, "PUT", "/nodes/pve1/lxc/300/config", {
      mp0: "/srv/data,mp=/data",
    }, AS_TOKEN);
    assert.equal(r.status, 403);
    assert.equal(
      r.body.message,
      "Permission check failed (mount point type bind is only allowed for root@pam)\n",
    );
  });
});

// --- refusals before any task ------------------------------------------------------

Deno.test("a linked clone with a storage is 500 before any task", async () => {
  await withSim(async (sim) => {
    const before = sim.tasks().length;
    const r = await api(sim.url, "POST", "/nodes/pve1/qemu/9000/clone", {
      newid: 500,
      full: 0,
      storage: "local-lvm",
    }, AS_TOKEN);
    assert.equal(r.status, 500);
    assert.equal(
      r.body.message,
      "parameter 'storage' not allowed for linked clones\n",
    );
    assert.equal(sim.tasks().length, before);
  });
});

Deno.test("a clone of a locked template is 500 VM is locked before any task, and nothing is created", async () => {
  await withSim(async (sim) => {
    sim.setGuest(9000, { lock: "backup" });
    const before = sim.tasks().length;
    const r = await api(sim.url, "POST", "/nodes/pve1/qemu/9000/clone", {
      newid: 500,
      name: "web5",
    }, AS_TOKEN);
    assert.equal(r.status, 500);
    assert.equal(r.body.message, "VM is locked (backup)\n");
    assert.equal(sim.tasks().length, before);
    assert.equal(sim.guest(500), undefined);
  });
});

Deno.test("a linked clone with a format is 500 before any task", async () => {
  await withSim(async (sim) => {
    const r = await api(sim.url, "POST", "/nodes/pve1/qemu/9000/clone", {
      newid: 500,
      format: "qcow2",
    }, AS_TOKEN);
    assert.equal(r.status, 500);
    assert.equal(
      r.body.message,
      "parameter 'format' not allowed for linked clones\n",
    );
  });
});

// --- exec bytes ------------------------------------------------------------------------

async function execToEnd(sim: Simulator, command: string[], input?: string) {
  const params: ApiParams = { command };
  if (input !== undefined) params["input-data"] = input;
  const started = await api(
    sim.url,
    "POST",
    "/nodes/pve1/qemu/100/agent/exec",
    params,
    AS_TOKEN,
  );
  assert.equal(started.status, 200, JSON.stringify(started.body));
  const pid = started.body.data.pid as number;
  return await until(async () => {
    const r = await api(
      sim.url,
      "GET",
      "/nodes/pve1/qemu/100/agent/exec-status",
      {
        pid,
      },
      AS_TOKEN,
    );
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body.data.exited === 1 ? r.body.data : undefined;
  }, `exec ${pid}`);
}

const hex = (text: string) =>
  [...text].map((c) => c.charCodeAt(0).toString(16).padStart(2, "0")).join(" ");

Deno.test("exec input: U+0080–U+00FF reach the guest as single Latin-1 bytes", async () => {
  await withAgentSim(async (sim) => {
    const final = await execToEnd(sim, ["od", "-An", "-tx1"], "ü");
    assert.equal(final["out-data"].trim(), "fc");
  });
});

Deno.test("exec input: a character above U+00FF is 500 Wide character and nothing runs", async () => {
  await withAgentSim(async (sim) => {
    const r = await api(sim.url, "POST", "/nodes/pve1/qemu/100/agent/exec", {
      command: ["cat"],
      "input-data": "5 €",
    }, AS_TOKEN);
    assert.equal(r.status, 500);
    assert.match(r.body.message, /^Wide character in subroutine entry/);
  });
});

Deno.test("exec output: the guest's bytes arrive one character per byte (UTF-8 double-encoded)", async () => {
  await withAgentSim(async (sim) => {
    const final = await execToEnd(sim, ["printf", "gr\\303\\274\\303\\237e"]);
    assert.equal(final["out-data"], "gr\u00c3\u00bc\u00c3\u009fe");
    assert.equal(hex(final["out-data"]), "67 72 c3 bc c3 9f 65");
  });
});

// --- the broadcast lag of /cluster/resources -------------------------------------------

async function resource(sim: Simulator, vmid: number) {
  const r = await api(
    sim.url,
    "GET",
    "/cluster/resources",
    { type: "vm" },
    AS_TOKEN,
  );
  return r.body.data.find((e: { vmid: number }) => e.vmid === vmid);
}

Deno.test("cluster/resources shows a rename and a new status only after the next broadcast; lock and tags at once", async () => {
  await withSim(async (sim) => {
    assert.equal((await resource(sim, 100)).name, "web");
    sim.setGuest(100, {
      name: "renamed",
      status: "stopped",
      lock: "backup",
      tags: ["new"],
    });
    const stale = await resource(sim, 100);
    assert.equal(stale.name, "web");
    assert.equal(stale.status, "running");
    assert.equal(stale.lock, "backup");
    assert.equal(stale.tags, "new");
    await until(
      async () => (await resource(sim, 100)).name === "renamed" || undefined,
      "broadcast",
    );
    assert.equal((await resource(sim, 100)).status, "stopped");
  }, { broadcastIntervalMs: 300 });
});

Deno.test("cluster/resources shows a guest the broadcast has not seen as status unknown without a name", async () => {
  await withSim(async (sim) => {
    sim.addGuest({
      vmid: 777,
      node: "pve1",
      type: "qemu",
      name: "fresh",
      status: "stopped",
    });
    const entry = await resource(sim, 777);
    assert.equal(entry.status, "unknown");
    assert.equal(entry.name, undefined);
    assert.equal(entry.node, "pve1");
  });
});

// --- JSON value types -----------------------------------------------------------------------

Deno.test("config answers string options as JSON strings and integer options as numbers", async () => {
  await withSim(async (sim) => {
    const r = await api(
      sim.url,
      "GET",
      "/nodes/pve1/qemu/100/config",
      {},
      AS_TOKEN,
    );
    assert.equal(r.body.data.agent, "1");
    assert.equal(r.body.data.cores, 2);
    const ct = await api(
      sim.url,
      "GET",
      "/nodes/pve1/lxc/301/config",
      {},
      AS_TOKEN,
    );
    assert.equal(ct.body.data.cpulimit, "0.5");
  });
});

Deno.test("node status always has memory.available", async () => {
  await withSim(async (sim) => {
    const r = await api(sim.url, "GET", "/nodes/pve1/status", {}, AS_TOKEN);
    assert.equal(typeof r.body.data.memory.available, "number");
  });
});

Deno.test("a container with cpulimit and no cores reports fractional cpus", async () => {
  await withSim(async (sim) => {
    const r = await api(
      sim.url,
      "GET",
      "/nodes/pve1/lxc/301/status/current",
      {},
      AS_TOKEN,
    );
    assert.equal(r.body.data.cpus, 0.5);
  });
});
