/**
 * The simulator answers `GET /access/permissions` as pve-access-control does
 * (`PVE/API2/AccessControl.pm` `permissions`, `PVE/RPCEnvironment.pm`
 * `permissions`): root@pam holds everything; a token without privilege
 * separation holds its user's privileges; a privilege-separated token its own
 * ACLs intersected with its user's; and the privilege checks of guest routes
 * follow the same privileges.
 */

import assert from "node:assert/strict";
import { api, tokenHeader } from "../../simulator/sim_client.ts";
import { startSimulator } from "../../simulator/simulator.ts";
import type { SimToken } from "../../simulator/types.ts";

async function withTokens(
  tokens: SimToken[],
  fn: (url: string) => Promise<void>,
): Promise<void> {
  const sim = await startSimulator({
    nodes: ["pve1"],
    guests: [{
      vmid: 100,
      node: "pve1",
      type: "qemu",
      name: "web",
      status: "stopped",
    }],
    tokens,
    taskDurationMs: 10,
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
