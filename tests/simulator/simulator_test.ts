/**
 * Proves the PVE simulator, with guest agent calls served by a real qemu-ga.
 * Every test starts its own simulator (and agent, when it needs one) and closes
 * them: Deno's sanitizers check that nothing leaks.
 */

import assert from "node:assert/strict";
import { makeTestCerts } from "../../simulator/certs.ts";
import { type GuestAgent, startGuestAgent } from "../../simulator/qga.ts";
import {
  api,
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

const TOKEN = {
  id: "root@pam!ci",
  secret: "5a1e3f1c-0d6b-4e59-9c0e-3f1b2a7c9d11",
};
const AUTH = { auth: tokenHeader(TOKEN.id, TOKEN.secret) };
/** A token that may not see guest 102 (nor the unused id 555). */
const LIMITED = {
  id: "ops@pve!ci",
  secret: "limited-secret",
  denyVmids: [102, 555],
};
const LIMITED_AUTH = { auth: tokenHeader(LIMITED.id, LIMITED.secret) };

/** pve1: 100 running web (agent up), 102 running db (denied to LIMITED), 9000 template; pve2: 101 lxc, 200 stopped. */
function guests(): SimGuest[] {
  return [
    {
      vmid: 100,
      node: "pve1",
      type: "qemu",
      name: "web",
      status: "running",
      agent: "running",
      tags: ["prod", "web"],
      ips: ["10.0.0.5/24"],
      config: {
        smbios1: "uuid=6f9a1c2e-1111-4a4a-9b9b-000000000100",
        scsi0: "local-zfs:vm-100-disk-0,size=32G",
        net0: "virtio=BC:24:11:AA:BB:CC,bridge=vmbr0",
        memory: "2048",
        cores: 2,
      },
    },
    { vmid: 101, node: "pve2", type: "lxc", name: "ct", status: "running" },
    {
      vmid: 102,
      node: "pve1",
      type: "qemu",
      name: "db",
      status: "running",
      agent: "running",
    },
    {
      vmid: 200,
      node: "pve2",
      type: "qemu",
      name: "idle",
      status: "stopped",
      agent: "running",
    },
    {
      vmid: 9000,
      node: "pve1",
      type: "qemu",
      name: "tmpl",
      status: "stopped",
      agent: "running",
      tags: ["base"],
      config: {
        template: 1,
        scsi0: "local-zfs:base-9000-disk-0,size=8G",
        meta: "creation-qemu=9.0.2,ctime=1700000000",
      },
    },
  ];
}

/** Runs `fn` with a fresh simulator and closes it afterwards. */
async function withSim(
  fn: (sim: Simulator) => Promise<void>,
  extra: Partial<SimOptions> = {},
): Promise<void> {
  const sim = await startSimulator({
    nodes: ["pve1", "pve2"],
    guests: guests(),
    tokens: [TOKEN, LIMITED],
    ...extra,
  });
  try {
    await fn(sim);
  } finally {
    await sim.close();
  }
}

/** Like withSim, with a real qemu-ga behind the guests' agents. */
async function withAgentSim(
  fn: (sim: Simulator, agent: GuestAgent) => Promise<void>,
  extra: Partial<SimOptions> = {},
): Promise<void> {
  const agent = await startGuestAgent();
  try {
    await withSim((sim) => fn(sim, agent), { agent, ...extra });
  } finally {
    await agent.stop();
  }
}

function call(
  sim: Simulator,
  method: string,
  path: string,
  params: ApiParams = {},
  opts: ApiOptions = AUTH,
) {
  return api(sim.url, method, path, params, opts);
}

/** Starts an agent exec and polls exec-status until the final answer. */
async function execToEnd(
  sim: Simulator,
  vmid: number,
  command: string[],
  input?: string,
) {
  const params: ApiParams = { command };
  if (input !== undefined) params["input-data"] = input;
  const started = await call(
    sim,
    "POST",
    `/nodes/pve1/qemu/${vmid}/agent/exec`,
    params,
  );
  assert.equal(started.status, 200, JSON.stringify(started.body));
  const pid = started.body.data.pid as number;
  const final = await until(async () => {
    const r = await call(
      sim,
      "GET",
      `/nodes/pve1/qemu/${vmid}/agent/exec-status`,
      { pid },
    );
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body.data.exited === 1 ? r.body.data : undefined;
  }, `exec ${pid}`);
  return { pid, final };
}

function assertPveError(
  r: { status: number; body: { message?: string } },
  status: number,
  message: string,
) {
  assert.equal(r.status, status, JSON.stringify(r.body));
  assert.equal(r.body.message, `${message}\n`);
}

// --- guest agent exec, served by the real qemu-ga -------------------------------------------

Deno.test("exec reports exit code and decoded stdout/stderr", async () => {
  await withAgentSim(async (sim) => {
    const { final } = await execToEnd(sim, 100, [
      "bash",
      "-c",
      "echo out; echo err >&2; exit 42",
    ]);
    assert.equal(final.exitcode, 42);
    assert.equal(final["out-data"], "out\n");
    assert.equal(final["err-data"], "err\n");
    assert.equal(final["out-truncated"], 0);
    assert.equal("signal" in final, false);
  });
});

Deno.test("exec of a signal-killed command reports the signal and no exitcode", async () => {
  await withAgentSim(async (sim) => {
    const { final } = await execToEnd(sim, 100, ["bash", "-c", "kill -9 $$"]);
    assert.equal(final.exited, 1);
    assert.equal(final.signal, 9);
    assert.equal("exitcode" in final, false);
    assert.equal("out-data" in final, false);
  });
});

Deno.test("exec-status of a finished command can be read only once", async () => {
  await withAgentSim(async (sim) => {
    const { pid } = await execToEnd(sim, 100, ["true"]);
    const again = await call(
      sim,
      "GET",
      "/nodes/pve1/qemu/100/agent/exec-status",
      { pid },
    );
    assertPveError(again, 500, "Agent error: Invalid parameter 'pid'");
  });
});

Deno.test("exec-status of a running command is exited 0 only", async () => {
  await withAgentSim(async (sim) => {
    const started = await call(sim, "POST", "/nodes/pve1/qemu/100/agent/exec", {
      command: ["sleep", "5"],
    });
    const r = await call(sim, "GET", "/nodes/pve1/qemu/100/agent/exec-status", {
      pid: started.body.data.pid,
    });
    assert.deepEqual(r.body.data, { exited: 0 });
  });
});

Deno.test("exec passes input-data to the command's stdin", async () => {
  await withAgentSim(async (sim) => {
    const { final } = await execToEnd(sim, 100, ["cat"], "héllo\n");
    assert.equal(final.exitcode, 0);
    assert.equal(final["out-data"], "héllo\n");
  });
});

Deno.test("exec of an unspawnable program fails the exec call itself", async () => {
  await withAgentSim(async (sim) => {
    const r = await call(sim, "POST", "/nodes/pve1/qemu/100/agent/exec", {
      command: ["/nonexistent/prog", "x"],
    });
    assert.equal(r.status, 500);
    assert.match(
      r.body.message,
      /^Agent error: .*Failed to execute child process .*\/nonexistent\/prog.*\n$/,
    );
  });
});

Deno.test("exec without command is 400 with a per-parameter error", async () => {
  await withAgentSim(async (sim) => {
    const r = await call(sim, "POST", "/nodes/pve1/qemu/100/agent/exec", {});
    assert.equal(r.status, 400);
    assert.deepEqual(r.body.errors, {
      command: "property is missing and it is not optional",
    });
    assert.equal(r.body.message, "Parameter verification failed.\n");
  });
});

Deno.test("agent call on a guest without agent is 500 No QEMU guest agent configured", async () => {
  await withAgentSim(async (sim) => {
    sim.setGuest(100, { agent: "none" });
    const r = await call(sim, "POST", "/nodes/pve1/qemu/100/agent/exec", {
      command: ["true"],
    });
    assertPveError(r, 500, "No QEMU guest agent configured");
  });
});

Deno.test("agent call on a stopped guest is 500 VM is not running", async () => {
  await withAgentSim(async (sim) => {
    const r = await call(sim, "POST", "/nodes/pve2/qemu/200/agent/exec", {
      command: ["true"],
    });
    assertPveError(r, 500, "VM 200 is not running");
  });
});

Deno.test("agent call with the agent configured but silent is 500 QEMU guest agent is not running", async () => {
  await withAgentSim(async (sim) => {
    sim.setGuest(100, { agent: "configured" });
    const r = await call(
      sim,
      "GET",
      "/nodes/pve1/qemu/100/agent/network-get-interfaces",
    );
    assertPveError(r, 500, "QEMU guest agent is not running");
  });
});

Deno.test("exec on a guest that disables it is 500 Agent error: Command guest-exec has been disabled", async () => {
  await withAgentSim(async (sim) => {
    sim.setGuest(100, { agent: "exec-disabled" });
    const r = await call(sim, "POST", "/nodes/pve1/qemu/100/agent/exec", {
      command: ["true"],
    });
    assertPveError(r, 500, "Agent error: Command guest-exec has been disabled");
  });
});

Deno.test("agent killed mid-command makes exec-status 500 QEMU guest agent is not running", async () => {
  await withAgentSim(async (sim, agent) => {
    const started = await call(sim, "POST", "/nodes/pve1/qemu/100/agent/exec", {
      command: ["sleep", "5"],
    });
    await agent.kill();
    const r = await call(sim, "GET", "/nodes/pve1/qemu/100/agent/exec-status", {
      pid: started.body.data.pid,
    });
    assertPveError(r, 500, "QEMU guest agent is not running");
  });
});

Deno.test("exec results are forgotten when the guest stops", async () => {
  await withAgentSim(async (sim) => {
    const started = await call(sim, "POST", "/nodes/pve1/qemu/100/agent/exec", {
      command: ["true"],
    });
    sim.setGuest(100, { status: "stopped" });
    sim.setGuest(100, { status: "running" });
    const r = await call(sim, "GET", "/nodes/pve1/qemu/100/agent/exec-status", {
      pid: started.body.data.pid,
    });
    assertPveError(r, 500, "Agent error: Invalid parameter 'pid'");
  });
});

Deno.test("network-get-interfaces reports the guest's ips on eth0", async () => {
  await withAgentSim(async (sim) => {
    const r = await call(
      sim,
      "GET",
      "/nodes/pve1/qemu/100/agent/network-get-interfaces",
    );
    assert.equal(r.status, 200);
    const result = r.body.data.result as {
      name: string;
      "ip-addresses"?: unknown[];
      "hardware-address": string;
    }[];
    assert.deepEqual(result.map((i) => i.name), ["lo", "eth0"]);
    assert.deepEqual(result[1]["ip-addresses"], [{
      "ip-address": "10.0.0.5",
      "ip-address-type": "ipv4",
      prefix: 24,
    }]);
    assert.equal(result[1]["hardware-address"], "bc:24:11:aa:bb:cc");
  });
});

// --- auth, permissions, errors ----------------------------------------------------------------

Deno.test("missing or wrong token is 401 authentication failure", async () => {
  await withSim(async (sim) => {
    assertPveError(
      await call(sim, "GET", "/version", {}, {}),
      401,
      "authentication failure",
    );
    const wrong = { auth: tokenHeader(TOKEN.id, "nope") };
    assertPveError(
      await call(sim, "GET", "/version", {}, wrong),
      401,
      "authentication failure",
    );
  });
});

Deno.test("denied vmid is 403 before existence: also for a missing one", async () => {
  await withSim(async (sim) => {
    const denied = await call(
      sim,
      "GET",
      "/nodes/pve1/qemu/102/status/current",
      {},
      LIMITED_AUTH,
    );
    assertPveError(denied, 403, "Permission check failed (/vms/102, VM.Audit)");
    const missing = await call(
      sim,
      "GET",
      "/nodes/pve1/qemu/555/status/current",
      {},
      LIMITED_AUTH,
    );
    assertPveError(
      missing,
      403,
      "Permission check failed (/vms/555, VM.Audit)",
    );
  });
});

Deno.test("guest on another node is 500 config file does not exist", async () => {
  await withSim(async (sim) => {
    const r = await call(sim, "GET", "/nodes/pve2/qemu/100/status/current");
    assertPveError(
      r,
      500,
      "Configuration file 'nodes/pve2/qemu-server/100.conf' does not exist",
    );
  });
});

Deno.test("unknown path is 501 not implemented", async () => {
  await withSim(async (sim) => {
    assertPveError(
      await call(sim, "GET", "/nodes/pve1/bogus"),
      501,
      "Method 'GET /nodes/pve1/bogus' not implemented",
    );
  });
});

Deno.test("unknown node is 500 hostname lookup failed", async () => {
  await withSim(async (sim) => {
    const r = await call(sim, "GET", "/nodes/nope/qemu");
    assert.equal(r.status, 500);
    assert.match(r.body.message, /^hostname lookup 'nope' failed/);
  });
});

Deno.test("cluster/resources lists qemu and lxc guests and leaves out denied ones", async () => {
  await withSim(async (sim) => {
    const all = await call(sim, "GET", "/cluster/resources", { type: "vm" });
    assert.deepEqual(all.body.data.map((r: { id: string }) => r.id), [
      "qemu/100",
      "lxc/101",
      "qemu/102",
      "qemu/200",
      "qemu/9000",
    ]);
    const web = all.body.data[0];
    assert.equal(web.tags, "prod;web");
    assert.equal(web.node, "pve1");
    assert.equal(web.template, 0);
    const limited = await call(
      sim,
      "GET",
      "/cluster/resources",
      { type: "vm" },
      LIMITED_AUTH,
    );
    assert.equal(
      limited.body.data.some((r: { vmid: number }) => r.vmid === 102),
      false,
    );
  });
});

Deno.test("node qemu list leaves out denied guests and other nodes' guests", async () => {
  await withSim(async (sim) => {
    const r = await call(
      sim,
      "GET",
      "/nodes/pve1/qemu",
      { full: 1 },
      LIMITED_AUTH,
    );
    assert.deepEqual(r.body.data.map((g: { vmid: number }) => g.vmid), [
      100,
      9000,
    ]);
    assert.equal(r.body.data[0].qmpstatus, "running");
  });
});

Deno.test("nextid is 400 for a taken id, even one the token may not see", async () => {
  await withSim(async (sim) => {
    const r = await call(
      sim,
      "GET",
      "/cluster/nextid",
      { vmid: 102 },
      LIMITED_AUTH,
    );
    assert.equal(r.status, 400);
    assert.deepEqual(r.body.errors, { vmid: "VM 102 already exists" });
    assert.deepEqual(
      (await call(sim, "GET", "/cluster/nextid", { vmid: 300 })).body,
      { data: "300" },
    );
  });
});

Deno.test("status/current shows status, qmpstatus, ha, agent and tags", async () => {
  await withSim(async (sim) => {
    sim.setGuest(100, { qmpstatus: "paused", lock: "backup" });
    const r = await call(sim, "GET", "/nodes/pve1/qemu/100/status/current");
    const d = r.body.data;
    assert.equal(d.status, "running");
    assert.equal(d.qmpstatus, "paused");
    assert.equal(d.lock, "backup");
    assert.deepEqual(d.ha, { managed: 0 });
    assert.equal(d.agent, 1);
    assert.equal(d.tags, "prod;web");
    assert.equal(d.maxdisk, 32 * 2 ** 30);
  });
});

Deno.test("requests are recorded without the Authorization header", async () => {
  await withSim(async (sim) => {
    await call(sim, "POST", "/nodes/pve1/qemu/100/status/stop", {
      timeout: 30,
    });
    const rec = sim.requests[0];
    assert.equal(rec.method, "POST");
    assert.equal(rec.path, "/api2/json/nodes/pve1/qemu/100/status/stop");
    assert.deepEqual(rec.form, [["timeout", "30"]]);
    assert.equal(rec.authorized, true);
    assert.equal(rec.status, 200);
    assert.equal(JSON.stringify(sim.requests).includes(TOKEN.secret), false);
  });
});

// --- tasks -------------------------------------------------------------------------------------

Deno.test("stop task: UPID parses, runs, ends OK, and the guest is stopped", async () => {
  await withSim(async (sim) => {
    const r = await call(sim, "POST", "/nodes/pve1/qemu/100/status/stop");
    const upid = r.body.data as string;
    assert.match(
      upid,
      /^UPID:pve1:[0-9A-F]{8}:[0-9A-F]{8}:[0-9A-F]{8}:qmstop:100:root@pam!ci:$/,
    );
    const fields = parseUpid(upid)!;
    const first = await call(
      sim,
      "GET",
      `/nodes/pve1/tasks/${encodeURIComponent(upid)}/status`,
    );
    assert.equal(first.body.data.status, "running");
    assert.equal("exitstatus" in first.body.data, false);
    assert.equal(first.body.data.pid, fields.pid);
    const final = await waitTask(sim.url, upid, AUTH);
    assert.equal(final.exitstatus, "OK");
    assert.equal(final.user, "root@pam");
    assert.equal(final.tokenid, "ci");
    const log = await call(
      sim,
      "GET",
      `/nodes/pve1/tasks/${encodeURIComponent(upid)}/log`,
    );
    assert.equal(log.body.data.at(-1).t, "TASK OK");
    assert.equal(sim.guest(100)!.status, "stopped");
  });
});

Deno.test("task status polled on another node is 400 no such task", async () => {
  await withSim(async (sim) => {
    const upid =
      (await call(sim, "POST", "/nodes/pve1/qemu/100/status/stop")).body.data;
    const r = await call(
      sim,
      "GET",
      `/nodes/pve2/tasks/${encodeURIComponent(upid)}/status`,
    );
    assert.equal(r.status, 400);
    assert.deepEqual(r.body.errors, { upid: "no such task" });
  });
});

Deno.test("failed task leaves the guest unchanged", async () => {
  await withSim(async (sim) => {
    sim.nextTask({ exitstatus: "timeout waiting on systemd" });
    const upid =
      (await call(sim, "POST", "/nodes/pve2/qemu/200/status/start")).body.data;
    const final = await waitTask(sim.url, upid, AUTH);
    assert.equal(final.exitstatus, "timeout waiting on systemd");
    assert.equal(sim.guest(200)!.status, "stopped");
  });
});

Deno.test("WARNINGS task succeeds and logs WARN lines", async () => {
  await withSim(async (sim) => {
    sim.nextTask({
      warnings: ["no efidisk configured! Using temporary efivars disk."],
    });
    const upid =
      (await call(sim, "POST", "/nodes/pve2/qemu/200/status/start")).body.data;
    assert.equal(
      (await waitTask(sim.url, upid, AUTH)).exitstatus,
      "WARNINGS: 1",
    );
    const log = await call(
      sim,
      "GET",
      `/nodes/pve2/tasks/${encodeURIComponent(upid)}/log`,
    );
    assert.ok(
      log.body.data.some((l: { t: string }) => l.t.startsWith("WARN: ")),
    );
    assert.equal(sim.guest(200)!.status, "running");
  });
});

Deno.test("task status right after dispatch can be 400 no such task", async () => {
  await withSim(async (sim) => {
    sim.nextTask({ noSuchTaskFor: 200 });
    const upid =
      (await call(sim, "POST", "/nodes/pve2/qemu/200/status/start")).body.data;
    const early = await call(
      sim,
      "GET",
      `/nodes/pve2/tasks/${encodeURIComponent(upid)}/status`,
    );
    assert.equal(early.status, 400);
    assert.equal((await waitTask(sim.url, upid, AUTH)).exitstatus, "OK");
  });
});

Deno.test("start of a running guest fails its task", async () => {
  await withSim(async (sim) => {
    const upid =
      (await call(sim, "POST", "/nodes/pve1/qemu/100/status/start")).body.data;
    assert.equal(
      (await waitTask(sim.url, upid, AUTH)).exitstatus,
      "VM 100 already running",
    );
  });
});

// --- HA ----------------------------------------------------------------------------------------

Deno.test("HA start that never applies: task OK, guest stays stopped", async () => {
  await withSim(async (sim) => {
    sim.setGuest(200, {
      ha: { managed: true, state: "stopped", neverApplies: true },
    });
    const upid =
      (await call(sim, "POST", "/nodes/pve2/qemu/200/status/start")).body.data;
    assert.equal(parseUpid(upid)!.type, "hastart");
    assert.equal((await waitTask(sim.url, upid, AUTH)).exitstatus, "OK");
    await new Promise((r) => setTimeout(r, 100));
    const cur = await call(sim, "GET", "/nodes/pve2/qemu/200/status/current");
    assert.equal(cur.body.data.status, "stopped");
    assert.deepEqual(cur.body.data.ha, { managed: 1, state: "started" });
  });
});

Deno.test("HA start applies after applyDelayMs", async () => {
  await withSim(async (sim) => {
    sim.setGuest(200, {
      ha: { managed: true, state: "stopped", applyDelayMs: 150 },
    });
    const upid =
      (await call(sim, "POST", "/nodes/pve2/qemu/200/status/start")).body.data;
    await waitTask(sim.url, upid, AUTH);
    assert.equal(sim.guest(200)!.status, "stopped");
    await until(
      () =>
        Promise.resolve(
          sim.guest(200)!.status === "running" ? true : undefined,
        ),
      "HA start",
    );
  });
});

// --- clone, delete, resize, config ---------------------------------------------------------------

Deno.test("clone is written under lock: clone with its final name at once, unlocked at task end: stopped, tags copied, new smbios1 uuid", async () => {
  await withSim(async (sim) => {
    const r = await call(sim, "POST", "/nodes/pve1/qemu/9000/clone", {
      newid: 123,
      name: "app1",
      full: 1,
    });
    // qemu-server's clone_vm writes the new config (name, tags, lock: clone) before the worker ends.
    assert.equal(sim.guest(123)?.lock, "clone");
    assert.equal(sim.guest(123)?.name, "app1");
    const taken = await call(sim, "GET", "/cluster/nextid", { vmid: 123 });
    assert.equal(taken.status, 400, "a clone in progress holds its id");
    assert.equal((await waitTask(sim.url, r.body.data, AUTH)).exitstatus, "OK");
    const clone = sim.guest(123)!;
    assert.equal(clone.lock, undefined, "the lock is removed at the end");
    assert.equal(clone.status, "stopped");
    assert.equal(clone.name, "app1");
    assert.deepEqual(clone.tags, ["base"]);
    assert.match(String(clone.config.smbios1), /^uuid=[0-9a-f-]{36}$/);
    assert.notEqual(clone.config.smbios1, sim.guest(9000)!.config.smbios1);
    assert.equal(clone.config.scsi0, "local-zfs:vm-123-disk-0,size=8G");
    assert.equal(clone.config.meta, sim.guest(9000)!.config.meta);
    assert.equal("template" in clone.config, false);
  });
});

Deno.test("clone to a taken id is 500 config file already exists", async () => {
  await withSim(async (sim) => {
    const r = await call(sim, "POST", "/nodes/pve1/qemu/9000/clone", {
      newid: 200,
    });
    assertPveError(
      r,
      500,
      "unable to create VM 200: config file already exists",
    );
  });
});

Deno.test("delete removes the guest when its task ends", async () => {
  await withSim(async (sim) => {
    const r = await call(sim, "DELETE", "/nodes/pve2/qemu/200", {
      purge: 1,
      "destroy-unreferenced-disks": 1,
    });
    assert.ok(sim.guest(200), "still there while the task runs");
    assert.equal((await waitTask(sim.url, r.body.data, AUTH)).exitstatus, "OK");
    assert.equal(sim.guest(200), undefined);
    const gone = await call(sim, "GET", "/nodes/pve2/qemu/200/status/current");
    assertPveError(
      gone,
      500,
      "Configuration file 'nodes/pve2/qemu-server/200.conf' does not exist",
    );
  });
});

Deno.test("delete of a running guest is 500 before any task", async () => {
  await withSim(async (sim) => {
    assertPveError(
      await call(sim, "DELETE", "/nodes/pve1/qemu/100"),
      500,
      "VM 100 is running - destroy failed",
    );
  });
});

Deno.test("resize grows the disk size in the config when the task ends", async () => {
  await withSim(async (sim) => {
    const r = await call(sim, "PUT", "/nodes/pve1/qemu/100/resize", {
      disk: "scsi0",
      size: "+20G",
    });
    assert.equal((await waitTask(sim.url, r.body.data, AUTH)).exitstatus, "OK");
    assert.equal(
      sim.guest(100)!.config.scsi0,
      "local-zfs:vm-100-disk-0,size=52G",
    );
    const abs = await call(sim, "PUT", "/nodes/pve1/qemu/100/resize", {
      disk: "scsi0",
      size: "64G",
    });
    await waitTask(sim.url, abs.body.data, AUTH);
    assert.equal(
      sim.guest(100)!.config.scsi0,
      "local-zfs:vm-100-disk-0,size=64G",
    );
  });
});

Deno.test("resize refuses to shrink", async () => {
  await withSim(async (sim) => {
    const r = await call(sim, "PUT", "/nodes/pve1/qemu/100/resize", {
      disk: "scsi0",
      size: "16G",
    });
    assertPveError(r, 500, "shrinking disks is not supported");
    assert.equal(
      sim.guest(100)!.config.scsi0,
      "local-zfs:vm-100-disk-0,size=32G",
    );
  });
});

Deno.test("PUT config on a running guest leaves memory pending and applies tags at once", async () => {
  await withSim(async (sim) => {
    const r = await call(sim, "PUT", "/nodes/pve1/qemu/100/config", {
      memory: "4096",
      tags: "prod;web;new",
    });
    assert.deepEqual(r.body, { data: null });
    const pending = await call(sim, "GET", "/nodes/pve1/qemu/100/pending");
    const mem = pending.body.data.find((p: { key: string }) =>
      p.key === "memory"
    );
    assert.deepEqual(mem, { key: "memory", value: "2048", pending: "4096" });
    const current = await call(sim, "GET", "/nodes/pve1/qemu/100/config", {
      current: 1,
    });
    assert.equal(current.body.data.memory, "2048");
    // PVE sorts and de-duplicates tags (datacenter.cfg tag-style default).
    assert.equal(current.body.data.tags, "new;prod;web");
    // PVE's default config read shows pending values applied.
    assert.equal(
      (await call(sim, "GET", "/nodes/pve1/qemu/100/config")).body.data.memory,
      "4096",
    );
  });
});

Deno.test("POST config returns a UPID and applies at task end", async () => {
  await withSim(async (sim) => {
    const r = await call(sim, "POST", "/nodes/pve2/qemu/200/config", {
      cores: 4,
    });
    assert.equal(parseUpid(r.body.data)!.type, "qmconfig");
    await waitTask(sim.url, r.body.data, AUTH);
    assert.equal(sim.guest(200)!.config.cores, 4);
  });
});

Deno.test("unknown config option is 400 with a per-parameter error", async () => {
  await withSim(async (sim) => {
    const r = await call(sim, "PUT", "/nodes/pve1/qemu/100/config", {
      bogus: 1,
    });
    assert.equal(r.status, 400);
    assert.match(r.body.errors.bogus, /not defined in schema/);
  });
});

// --- faults, latency, transport ----------------------------------------------------------------

Deno.test("reset fault makes the client see a network error", async () => {
  await withSim(async (sim) => {
    await call(sim, "GET", "/version"); // a previous request on the client's pool
    sim.fault({ pathRegex: /\/version$/, kind: "reset" });
    await assert.rejects(() => call(sim, "GET", "/version"), TypeError);
    assert.equal(sim.requests.at(-1)!.status, 0);
    assert.equal((await call(sim, "GET", "/version")).status, 200);
  });
});

Deno.test("status fault answers the given error in PVE's shape", async () => {
  await withSim(async (sim) => {
    sim.fault({
      method: "GET",
      pathRegex: "status/current",
      kind: "status",
      status: 596,
      message: "Connection timed out",
    });
    assertPveError(
      await call(sim, "GET", "/nodes/pve1/qemu/100/status/current"),
      596,
      "Connection timed out",
    );
    assert.equal(
      (await call(sim, "GET", "/nodes/pve1/qemu/100/status/current")).status,
      200,
    );
  });
});

Deno.test("body fault answers exactly the given body", async () => {
  await withSim(async (sim) => {
    sim.fault({ pathRegex: /version/, kind: "body", body: '{"data": {"vers' });
    const r = await call(sim, "GET", "/version");
    assert.equal(r.status, 200);
    assert.equal(r.body, '{"data": {"vers');
  });
});

Deno.test("hang fault answers nothing until the simulator closes", async () => {
  const sim = await startSimulator({ nodes: ["pve1"], tokens: [TOKEN] });
  sim.fault({ pathRegex: /version/, kind: "hang" });
  const pending = call(sim, "GET", "/version");
  const raced = await Promise.race([
    pending.then(() => "answered"),
    new Promise((r) => setTimeout(() => r("waiting"), 150)),
  ]);
  assert.equal(raced, "waiting");
  await sim.close();
  await assert.rejects(pending, TypeError);
});

Deno.test("latency delays every answer", async () => {
  await withSim(async (sim) => {
    sim.setLatency(120);
    const t0 = performance.now();
    await call(sim, "GET", "/version");
    assert.ok(performance.now() - t0 >= 110);
  });
});

Deno.test("with keepAlive, Deno's fetch silently retries a reset request once", async () => {
  await withSim(async (sim) => {
    await call(sim, "GET", "/version"); // pooled, kept-alive connection
    sim.fault({ method: "POST", pathRegex: /status\/stop$/, kind: "reset" });
    const r = await call(sim, "POST", "/nodes/pve1/qemu/100/status/stop");
    assert.equal(
      r.status,
      200,
      "the retry, on a fresh connection, got through",
    );
    const stops = sim.requests.filter((q) => q.path.endsWith("/status/stop"));
    assert.deepEqual(
      stops.map((q) => q.status),
      [0, 200],
      "the server saw the POST twice",
    );
  }, { keepAlive: true });
});

Deno.test("HTTPS with a CA-signed certificate", async () => {
  const certs = await makeTestCerts();
  const client = Deno.createHttpClient({ caCerts: [certs.caCert] });
  try {
    await withSim(async (sim) => {
      assert.match(sim.url, /^https:\/\/127\.0\.0\.1:\d+$/);
      const r = await api(sim.url, "GET", "/version", {}, { ...AUTH, client });
      assert.equal(r.body.data.version, "9.0.3");
    }, { tls: { cert: certs.cert, key: certs.key } });
  } finally {
    client.close();
  }
});

Deno.test("PUT config stores a NIC as qemu-server prints it, with a new MAC whenever none is given", async () => {
  await withSim(async (sim) => {
    const stored = async () => {
      await call(sim, "PUT", "/nodes/pve1/qemu/100/config", {
        net1: "bridge=vmbr0,model=e1000,firewall=yes",
      });
      return String(sim.guest(100)!.config.net1);
    };
    const first = await stored();
    assert.match(
      first,
      /^e1000=BC:24:11:[0-9A-F]{2}:[0-9A-F]{2}:[0-9A-F]{2},bridge=vmbr0,firewall=1$/,
    );
    // parse_net generates a MAC for a value without one, also one replacing a NIC that had one.
    assert.notEqual(await stored(), first);
  });
});

Deno.test("PUT config on a running VM without network hot-plug: a NIC's tag applies at once, a model change and a removal wait", async () => {
  await withSim(async (sim) => {
    sim.guest(100)!.config.hotplug = "disk,usb";
    const put = (params: ApiParams) =>
      call(sim, "PUT", "/nodes/pve1/qemu/100/config", params);
    await put({ net0: "virtio=BC:24:11:AA:BB:CC,bridge=vmbr0,tag=5" });
    assert.equal(
      sim.guest(100)!.config.net0,
      "virtio=BC:24:11:AA:BB:CC,bridge=vmbr0,tag=5",
    );
    await put({ net0: "e1000=BC:24:11:AA:BB:CC,bridge=vmbr0" });
    assert.equal(
      sim.guest(100)!.pending.net0,
      "e1000=BC:24:11:AA:BB:CC,bridge=vmbr0",
    );
    await put({ delete: "net0" });
    assert.deepEqual(sim.guest(100)!.pendingDelete, ["net0"]);
  });
});
