/**
 * The `permissions` check and `preflight` against tokens whose ACLs are not root's, end to end:
 * what PVE checks inside its handlers and workers (a create's `VM.Allocate` on the new VMID, a
 * backup's `VM.Backup` per guest), on PVE 8 and on PVE 9 (the simulator serves either), and what
 * happens when the token's privileges cannot be read at all.
 */
import assert from "node:assert/strict";
import { type Env, TOKEN_SECRET, withEnv, written } from "./env.ts";
import type { SimToken } from "../../simulator/types.ts";

/**
 * The package's token, privilege-separated, holding `tokenAcl` (its user holds everything), on
 * PVE `major`.
 */
const token = (tokenAcl: Record<string, string[]>, major: 8 | 9 = 9) => ({
  sim: {
    pveVersion: major,
    tokens: [
      {
        id: "ops@pve!swamp",
        secret: TOKEN_SECRET,
        privsep: true,
        tokenAcl,
      } satisfies SimToken,
    ],
  },
  transport: { tokenId: "ops@pve!swamp" },
});

/** What a qemu create of VM 170 with a disk and a NIC needs, but `VM.Allocate`. */
const CREATE_BUT_ALLOCATE = {
  "/vms": [
    "VM.Audit",
    "VM.Config.Options",
    "VM.Config.Disk",
    "VM.Config.Network",
    "VM.PowerMgmt",
  ],
  "/storage": ["Datastore.AllocateSpace", "Datastore.Audit"],
  "/sdn/zones/localnetwork": ["SDN.Use"],
};

const CREATE_ARGS = {
  vmid: 170,
  name: "app",
  config: { scsi0: "local-lvm:1", net0: "virtio,bridge=vmbr0" },
};

/** Requests other than reads: what would change something. */
const mutations = (env: Env) =>
  env.sim.requests.filter((q) => q.method !== "GET");

Deno.test("permissions check: a create whose token lacks VM.Allocate on the new VMID is refused, nothing sent", async () => {
  await withEnv(token(CREATE_BUT_ALLOCATE), async (env) => {
    const r = await env.run("create", CREATE_ARGS);
    assert.equal(r.status, "failed");
    assert.match(
      r.error ?? "",
      /Pre-flight checks failed[\s\S]*permissions:[\s\S]*create needs VM\.Allocate on \/vms\/170: missing/,
    );
    assert.deepEqual(mutations(env), [], "no mutating request");
    assert.equal(env.sim.guest(170), undefined);
  });
});

Deno.test("permissions check: a create whose token holds what its arguments need passes and runs", async () => {
  const acl = {
    ...CREATE_BUT_ALLOCATE,
    "/vms": [...CREATE_BUT_ALLOCATE["/vms"], "VM.Allocate"],
  };
  await withEnv(token(acl), async (env) => {
    const r = await env.run("create", CREATE_ARGS);
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(env.sim.guest(170)?.name, "app");
  });
});

Deno.test("permissions check: a deeper ACL without VM.Backup refuses the backup of that guest only", async () => {
  // PVE's ACL semantics: the ACL on /vms/102 replaces what / grants, for that guest alone.
  const acl = { "/": ["*"], "/vms/102": ["VM.Audit"] };
  await withEnv(token(acl), async (env) => {
    const refused = await env.run("backup", { vmid: 102, storage: "local" });
    assert.equal(refused.status, "failed");
    assert.match(
      refused.error ?? "",
      /permissions:[\s\S]*backup needs VM\.Backup on \/vms\/102: missing/,
    );
    assert.deepEqual(mutations(env), [], "no vzdump was sent");
    const other = await env.run("backup", { vmid: 100, storage: "local" });
    assert.equal(other.status, "succeeded", other.error);
  });
});

Deno.test("PVE 8: fileWrite's check asks VM.Monitor, which the agent endpoints need there, and the write runs", async () => {
  const dir = await Deno.makeTempDir({ prefix: "swamp-perm-test-" });
  try {
    const acl = { "/vms/100": ["VM.Audit", "VM.Monitor"] };
    await withEnv(token(acl, 8), async (env) => {
      const r = await env.run("fileWrite", {
        vmid: 100,
        path: `${dir}/motd`,
        content: "hi\n",
      });
      assert.equal(r.status, "succeeded", r.error);
      assert.equal(await Deno.readTextFile(`${dir}/motd`), "hi\n");
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("PVE 9: fileWrite's check asks VM.GuestAgent.FileWrite and never VM.Monitor, which PVE 9 lacks", async () => {
  const acl = { "/vms/100": ["VM.Audit", "VM.Monitor"] };
  await withEnv(token(acl, 9), async (env) => {
    const r = await env.run("fileWrite", {
      vmid: 100,
      path: "/tmp/never-written",
      content: "hi\n",
    });
    assert.equal(r.status, "failed");
    assert.match(
      r.error ?? "",
      /fileWrite needs VM\.GuestAgent\.FileWrite or VM\.GuestAgent\.Unrestricted on \/vms\/100/,
    );
    assert.doesNotMatch(r.error ?? "", /VM\.Monitor/);
    assert.deepEqual(mutations(env), []);
  });
});

for (
  const [major, wanted] of [[8, "VM.Monitor"], [
    9,
    "VM.GuestAgent.Unrestricted",
  ]] as const
) {
  Deno.test(`preflight on PVE ${major}: guestExec needs ${wanted} on the guest`, async () => {
    await withEnv(token({ "/vms/100": ["VM.Audit"] }, major), async (env) => {
      const r = await env.run("preflight", {
        methods: ["guestExec"],
        vmid: 100,
      });
      assert.equal(r.status, "failed");
      const rec = written(r, "preflight-pve1");
      assert.match(String(rec.pveVersion), new RegExp(`^${major}\\.`));
      const [exec] = rec.methods as { missing: string[] }[];
      assert.deepEqual(exec.missing, [`${wanted} on /vms/100`]);
      if (major === 9) assert.doesNotMatch(JSON.stringify(rec), /VM\.Monitor/);
    });
  });
}

Deno.test("permissions check: when the token's privileges cannot be read (501 from a proxy) the method runs, with one warning", async () => {
  await withEnv({}, async (env) => {
    env.sim.fault({
      pathRegex: "/access/permissions",
      kind: "status",
      status: 501,
      message: "Not Implemented",
      times: Infinity,
    });
    const r = await env.run("delete", { vmid: 102, force: true });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(env.sim.guest(102), undefined, "the VM was deleted");
    const warnings = r.logs.filter((l) =>
      l.level === "warning" &&
      /permission pre-check could not run/.test(l.message)
    );
    assert.equal(warnings.length, 1, JSON.stringify(r.logs));
    assert.match(warnings[0].message, /PVE's own permission checks apply/);
  });
});

Deno.test("preflight: when the token's privileges cannot be read it fails saying nothing was checked", async () => {
  await withEnv({}, async (env) => {
    env.sim.fault({
      pathRegex: "/access/permissions",
      kind: "status",
      status: 501,
      message: "Not Implemented",
      times: Infinity,
    });
    const r = await env.run("preflight", { methods: ["delete"], vmid: 102 });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /the token's privileges were not checked/);
    const rec = written(r, "preflight-pve1");
    assert.equal(rec.reachable, true);
    assert.equal(rec.ready, false);
  });
});
