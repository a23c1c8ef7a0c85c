/**
 * The simulator answers `GET /access/permissions` as pve-access-control does
 * (`PVE/API2/AccessControl.pm` `permissions`, `PVE/RPCEnvironment.pm`
 * `permissions`): root@pam holds everything; a token without privilege
 * separation holds its user's privileges; a privilege-separated token its own
 * ACLs intersected with its user's; and the privilege checks of guest routes
 * follow the same privileges: the deepest ACL on a path replaces what it inherits
 * (`PVE/AccessControl.pm` `roles`), and on PVE 8 the privileges are PVE 8's.
 */

import assert from "node:assert/strict";
import { api, tokenHeader, waitTask } from "../../simulator/sim_client.ts";
import { startSimulator } from "../../simulator/simulator.ts";
import type { SimToken } from "../../simulator/types.ts";

async function withTokens(
  tokens: SimToken[],
  fn: (url: string) => Promise<void>,
  pveVersion: 8 | 9 = 9,
): Promise<void> {
  const sim = await startSimulator({
    nodes: ["pve1"],
    guests: [{
      vmid: 100,
      node: "pve1",
      type: "qemu",
      name: "web",
      status: "stopped",
    }, {
      vmid: 102,
      node: "pve1",
      type: "qemu",
      name: "db",
      status: "stopped",
    }, {
      vmid: 300,
      node: "pve1",
      type: "lxc",
      name: "ct",
      status: "stopped",
    }],
    tokens,
    taskDurationMs: 10,
    pveVersion,
  });
  try {
    await fn(sim.url);
  } finally {
    await sim.close();
  }
}

const auth = (t: SimToken) => ({ auth: tokenHeader(t.id, t.secret) });

Deno.test("a token of root@pam without privilege separation holds every privilege", async () => {
  const root = { id: "root@pam!ci", secret: "s1" };
  await withTokens([root], async (url) => {
    const r = await api(url, "GET", "/access/permissions", {
      path: "/vms/100",
    }, auth(root));
    assert.equal(r.status, 200);
    const privs = (r.body.data as Record<string, Record<string, number>>)[
      "/vms/100"
    ];
    assert.equal(privs["VM.Allocate"], 1);
    assert.equal(privs["Sys.Modify"], 1);
  });
});

Deno.test("a privilege-separated token holds its own ACLs intersected with its user's", async () => {
  const token = {
    id: "ops@pve!ci",
    secret: "s2",
    privsep: true,
    userAcl: { "/vms": ["VM.Audit", "VM.PowerMgmt"] },
    tokenAcl: { "/vms/100": ["VM.Audit", "VM.Allocate"] },
  };
  await withTokens([token], async (url) => {
    const on = async (path: string) => {
      const r = await api(
        url,
        "GET",
        "/access/permissions",
        { path },
        auth(token),
      );
      assert.equal(r.status, 200);
      return r.body.data as Record<string, Record<string, number>>;
    };
    // VM.Allocate is the token's but not its user's; VM.PowerMgmt the user's but not the token's.
    assert.deepEqual(await on("/vms/100"), {
      "/vms/100": { "VM.Audit": 1 },
    });
    assert.deepEqual(await on("/storage/local"), {});
    const all = await api(url, "GET", "/access/permissions", {}, auth(token));
    assert.deepEqual(Object.keys(all.body.data as object), ["/vms/100"]);
  });
});

Deno.test("a route's privilege check follows the token's privileges: 403 without VM.PowerMgmt", async () => {
  const token = {
    id: "ops@pve!ci",
    secret: "s3",
    privsep: true,
    tokenAcl: { "/vms": ["VM.Audit"] },
  };
  await withTokens([token], async (url) => {
    const read = await api(
      url,
      "GET",
      "/nodes/pve1/qemu/100/status/current",
      {},
      auth(token),
    );
    assert.equal(read.status, 200);
    const start = await api(
      url,
      "POST",
      "/nodes/pve1/qemu/100/status/start",
      {},
      auth(token),
    );
    assert.equal(start.status, 403);
    assert.match(
      JSON.stringify(start.body),
      /Permission check failed \(\/vms\/100, VM\.PowerMgmt\)/,
    );
  });
});

Deno.test("a deeper ACL replaces an inherited one: PVEAdmin-like on /, audit only on /vms/102", async () => {
  const token = {
    id: "ops@pve!ci",
    secret: "s4",
    privsep: true,
    tokenAcl: { "/": ["*"], "/vms/102": ["VM.Audit"] },
  };
  await withTokens([token], async (url) => {
    const on = async (path: string) => {
      const r = await api(
        url,
        "GET",
        "/access/permissions",
        { path },
        auth(token),
      );
      return Object.keys((r.body.data as Record<string, object>)[path] ?? {});
    };
    assert.deepEqual(await on("/vms/102"), ["VM.Audit"]);
    assert.ok((await on("/vms/100")).includes("VM.Backup"));
  });
});

Deno.test("vzdump: PVE answers a UPID, then its worker fails the task for a guest without VM.Backup", async () => {
  const token = {
    id: "ops@pve!ci",
    secret: "s5",
    privsep: true,
    tokenAcl: { "/": ["*"], "/vms/102": ["VM.Audit"] },
  };
  await withTokens([token], async (url) => {
    const r = await api(url, "POST", "/nodes/pve1/vzdump", {
      vmid: "102",
      storage: "local",
    }, auth(token));
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const status = await waitTask(url, r.body.data as string, auth(token));
    assert.equal(
      status.exitstatus,
      "Permission check failed (/vms/102, VM.Backup)",
    );
    const ok = await api(url, "POST", "/nodes/pve1/vzdump", {
      vmid: "100",
      storage: "local",
    }, auth(token));
    const done = await waitTask(url, ok.body.data as string, auth(token));
    assert.equal(done.exitstatus, "OK");
  });
});

Deno.test("vzdump: the handler refuses a backup storage without Datastore.AllocateSpace", async () => {
  const token = {
    id: "ops@pve!ci",
    secret: "s6",
    privsep: true,
    tokenAcl: {
      "/vms": ["VM.Backup", "VM.Audit"],
      "/storage": ["Datastore.Audit"],
    },
  };
  await withTokens([token], async (url) => {
    const r = await api(url, "POST", "/nodes/pve1/vzdump", {
      vmid: "100",
      storage: "local",
    }, auth(token));
    assert.equal(r.status, 403);
    assert.match(
      JSON.stringify(r.body),
      /Permission check failed \(\/storage\/local, Datastore\.AllocateSpace\)/,
    );
  });
});

Deno.test("PVE 8: the version says 8, VM.Monitor exists, VM.GuestAgent.* does not, and the agent needs VM.Monitor", async () => {
  const token = {
    id: "ops@pve!ci",
    secret: "s7",
    privsep: true,
    tokenAcl: { "/vms/100": ["VM.Audit", "VM.GuestAgent.Unrestricted"] },
  };
  await withTokens([token], async (url) => {
    const version = await api(url, "GET", "/version", {}, auth(token));
    assert.match((version.body.data as { version: string }).version, /^8\./);
    const privs = await api(url, "GET", "/access/permissions", {
      path: "/vms/100",
    }, auth(token));
    assert.deepEqual(privs.body.data, { "/vms/100": { "VM.Audit": 1 } });
    const info = await api(
      url,
      "GET",
      "/nodes/pve1/qemu/100/agent/info",
      {},
      auth(token),
    );
    assert.equal(info.status, 403);
    assert.match(JSON.stringify(info.body), /\(\/vms\/100, VM\.Monitor\)/);
  }, 8);
});

Deno.test("PVE 8: a container has no migrate precondition endpoint (501), a VM has", async () => {
  const root = { id: "root@pam!ci", secret: "s8" };
  await withTokens([root], async (url) => {
    const ct = await api(
      url,
      "GET",
      "/nodes/pve1/lxc/300/migrate",
      {},
      auth(root),
    );
    assert.equal(ct.status, 501);
    const vm = await api(
      url,
      "GET",
      "/nodes/pve1/qemu/100/migrate",
      {},
      auth(root),
    );
    assert.equal(vm.status, 200);
  }, 8);
});
