/**
 * clone end to end: success means the new VM exists with the requested name and the `swamp` tag
 * (added and read back when the template lacks it); a taken VMID counts as done only when it holds
 * that very VM.
 */
import assert from "node:assert/strict";
import { demoGuests } from "../../simulator/demo_cluster.ts";
import type { SimGuest } from "../../simulator/types.ts";
import { type Env, withEnv, written } from "./env.ts";
import { qemuTemplate, TEMPLATE_UUID } from "./qemu_fixture.ts";

const withTemplate = (over: Partial<SimGuest> = {}, more: SimGuest[] = []) => [
  ...demoGuests(),
  qemuTemplate(over),
  ...more,
];
const cloneArgs = (extra: Record<string, unknown> = {}) => ({
  templateId: 9000,
  vmid: 300,
  name: "web2",
  ...extra,
});

function sent(env: Env, method: string, suffix: string) {
  return env.sim.requests.filter((q) =>
    q.method === method && q.path.endsWith(suffix)
  );
}

Deno.test("clone: the new VM exists with the requested name and the swamp tag added", async () => {
  await withEnv({ guests: withTemplate() }, async (env) => {
    const r = await env.run("clone", cloneArgs());
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "vm-300");
    assert.equal(rec.present, true);
    assert.equal(rec.name, "web2");
    assert.equal(rec.node, "pve1");
    assert.equal(rec.status, "stopped");
    assert.deepEqual(rec.tags, ["swamp"]);
    assert.match(String(rec.lastTask), /:qmclone:9000:/);
    const uuid = (rec.identity as { smbiosUuid?: string }).smbiosUuid;
    assert.ok(uuid && uuid !== TEMPLATE_UUID, "the clone has its own identity");
    assert.deepEqual(env.sim.guest(300)?.tags, ["swamp"]);
    assert.equal(sent(env, "PUT", "/qemu/300/config").length, 1);
  });
});

Deno.test("clone: the template's own tags are kept when swamp is added", async () => {
  await withEnv({ guests: withTemplate({ tags: ["base"] }) }, async (env) => {
    const r = await env.run("clone", cloneArgs());
    assert.equal(r.status, "succeeded", r.error);
    assert.deepEqual(written(r, "vm-300").tags, ["base", "swamp"]);
  });
});

Deno.test("clone: a template that already carries swamp needs no tag write", async () => {
  await withEnv({ guests: withTemplate({ tags: ["swamp"] }) }, async (env) => {
    const r = await env.run("clone", cloneArgs());
    assert.equal(r.status, "succeeded", r.error);
    assert.deepEqual(written(r, "vm-300").tags, ["swamp"]);
    assert.equal(sent(env, "PUT", "/qemu/300/config").length, 0);
  });
});

Deno.test("clone: full and storage reach PVE as given", async () => {
  await withEnv({ guests: withTemplate() }, async (env) => {
    const r = await env.run("clone", cloneArgs({ storage: "local-lvm" }));
    assert.equal(r.status, "succeeded", r.error);
    assert.deepEqual(sent(env, "POST", "/qemu/9000/clone")[0].form, [
      ["newid", "300"],
      ["name", "web2"],
      ["full", "1"],
      ["storage", "local-lvm"],
    ]);
  });
});

Deno.test("clone: a linked clone is asked for with full=0", async () => {
  await withEnv({ guests: withTemplate() }, async (env) => {
    const r = await env.run("clone", cloneArgs({ full: false }));
    assert.equal(r.status, "succeeded", r.error);
    const form = sent(env, "POST", "/qemu/9000/clone")[0].form;
    assert.deepEqual(form.find(([k]) => k === "full"), ["full", "0"]);
  });
});

Deno.test("clone: a template on another node is cloned there", async () => {
  await withEnv({ guests: withTemplate({ node: "pve2" }) }, async (env) => {
    const r = await env.run("clone", cloneArgs());
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(sent(env, "POST", "/nodes/pve2/qemu/9000/clone").length, 1);
    assert.equal(written(r, "vm-300").node, "pve2");
  });
});

Deno.test("clone: running it again on the same managed VM counts as done without a second clone", async () => {
  await withEnv({ guests: withTemplate() }, async (env) => {
    const first = await env.run("clone", cloneArgs());
    assert.equal(first.status, "succeeded", first.error);
    const again = await env.run("clone", cloneArgs());
    assert.equal(again.status, "succeeded", again.error);
    assert.equal(sent(env, "POST", "/clone").length, 1);
    assert.equal(written(again, "vm-300").name, "web2");
  });
});

Deno.test("clone: a VMID in use by another guest fails naming it, and its state is recorded", async () => {
  await withEnv({ guests: withTemplate() }, async (env) => {
    const r = await env.run("clone", cloneArgs({ vmid: 100 }));
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /VMID 100 is in use by another guest/);
    assert.match(r.error ?? "", /named "web"/);
    assert.equal(sent(env, "POST", "/clone").length, 0);
    assert.equal(written(r, "vm-100").name, "web");
  });
});

Deno.test("clone: a VMID held by a same-named VM without the swamp tag is another guest", async () => {
  const squatter: SimGuest = {
    vmid: 300,
    node: "pve2",
    type: "qemu",
    name: "web2",
    status: "running",
  };
  await withEnv({ guests: withTemplate({}, [squatter]) }, async (env) => {
    const r = await env.run("clone", cloneArgs());
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /VMID 300 is in use by another guest/);
    assert.equal(sent(env, "POST", "/clone").length, 0);
    assert.equal(sent(env, "PUT", "/config").length, 0);
  });
});

Deno.test("clone: a VMID held by a container fails as in use", async () => {
  await withEnv({ guests: withTemplate() }, async (env) => {
    const r = await env.run("clone", cloneArgs({ vmid: 200 }));
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /VMID 200 is in use by another guest/);
    assert.equal(r.written.length, 0);
  });
});

Deno.test("clone: an absent template fails before anything is cloned", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("clone", cloneArgs());
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /template 9000 does not exist on any node/);
    assert.equal(sent(env, "POST", "/clone").length, 0);
    assert.equal(r.written.length, 0);
  });
});

Deno.test("clone: a failed clone task fails with PVE's text", async () => {
  await withEnv({ guests: withTemplate() }, async (env) => {
    env.sim.nextTask({ exitstatus: "clone failed: no space left on device" });
    const r = await env.run("clone", cloneArgs());
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /no space left on device/);
    assert.equal(env.sim.guest(300), undefined);
  });
});

Deno.test("clone: a refused tag write fails and records the new VM", async () => {
  await withEnv({ guests: withTemplate() }, async (env) => {
    env.sim.fault({
      method: "PUT",
      pathRegex: "/qemu/300/config$",
      kind: "status",
      status: 403,
      message: "Permission check failed (/vms/300, VM.Config.Options)",
    });
    const r = await env.run("clone", cloneArgs());
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /could not add the `swamp` tag to VM 300/);
    assert.match(r.error ?? "", /VM\.Config\.Options/);
    const rec = written(r, "vm-300");
    assert.equal(rec.present, true);
    assert.deepEqual(rec.tags, []);
  });
});

Deno.test("clone: a tag that does not read back fails saying what was read", async () => {
  await withEnv({ guests: withTemplate() }, async (env) => {
    // PVE accepts the write, but the tag is not there afterwards (e.g. a tag policy dropped it).
    env.sim.fault({
      method: "PUT",
      pathRegex: "/qemu/300/config$",
      kind: "body",
      body: '{"data":null}',
    });
    const r = await env.run("clone", cloneArgs());
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /its tags read back as ""/);
    assert.deepEqual(written(r, "vm-300").tags, []);
  });
});
