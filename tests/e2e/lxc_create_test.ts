/**
 * create (lxc) end to end: before anything changes the request is mapped onto the node — storage,
 * template, bridges — and every problem is named in one message; a created container must be seen
 * with its hostname and the swamp tag; a taken VMID is done only when it holds that very container.
 */
import assert from "node:assert/strict";
import type { Env } from "./env.ts";
import { isCheckRequest, written } from "./env.ts";
import { sent, TEMPLATE, withCt } from "./lxc_fixture.ts";

const GIB = 2 ** 30;
const NET0 = "name=eth0,bridge=vmbr0,ip=10.0.0.40/24,gw=10.0.0.1";

function createArgs(extra: Record<string, unknown> = {}) {
  return {
    vmid: 400,
    ostemplate: TEMPLATE,
    hostname: "new-ct",
    storage: "local-lvm",
    cores: 2,
    memory: 1024,
    swap: 0,
    config: { net0: NET0 },
    ...extra,
  };
}

/** The create requests sent (POST /nodes/<node>/lxc). */
const creates = (env: Env) => sent(env, "POST", "/lxc");

/** A create refused before any change: its message, for the caller's assertions. */
async function refused(
  env: Env,
  extra: Record<string, unknown> = {},
): Promise<string> {
  const r = await env.run("create", createArgs(extra));
  assert.equal(r.status, "failed");
  assert.equal(r.written.length, 0, "a refused create writes nothing");
  assert.equal(creates(env).length, 0, "nothing was sent to PVE");
  assert.equal(env.sim.guest(400), undefined);
  const message = r.error ?? "";
  assert.match(
    message,
    /^cannot create container 400 on node pve1; nothing was changed\. /,
  );
  return message;
}

Deno.test("create: a feasible container is created, verified and recorded with the swamp tag", async () => {
  await withCt({}, async (env) => {
    const r = await env.run("create", createArgs());
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "ct-400");
    assert.equal(rec.present, true);
    assert.equal(rec.name, "new-ct");
    assert.equal(rec.node, "pve1");
    assert.equal(rec.status, "stopped");
    assert.deepEqual(rec.tags, ["swamp"]);
    assert.equal(rec.lastOperation, "create");
    assert.match(String(rec.lastTask), /:vzcreate:400:/);
    assert.deepEqual(r.written.map((w) => w.instance), ["ct-400"]);
    assert.equal(r.written[0].spec, "container");
    const ct = env.sim.guest(400);
    assert.equal(ct?.type, "lxc");
    assert.match(
      String(ct?.config.rootfs),
      /^local-lvm:vm-400-disk-0,.*size=8G/,
    );
    assert.equal(ct?.config.cores, 2);
    const form = Object.fromEntries(creates(env)[0].form);
    assert.equal(form.rootfs, "local-lvm:8");
    assert.equal(form.tags, "swamp");
    assert.equal(form.unprivileged, "1");
    assert.equal(form.start, undefined, "the start is ours, verified");
  });
});

Deno.test("create: tags from the config are kept beside swamp", async () => {
  await withCt({}, async (env) => {
    const r = await env.run(
      "create",
      createArgs({ config: { net0: NET0, tags: "web" } }),
    );
    assert.equal(r.status, "succeeded", r.error);
    assert.deepEqual(
      [...(written(r, "ct-400").tags as string[])].sort(),
      ["swamp", "web"],
    );
  });
});

Deno.test("create: start true goes through the verified start and records the container running", async () => {
  await withCt({}, async (env) => {
    const r = await env.run("create", createArgs({ start: true }));
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "ct-400");
    assert.equal(rec.status, "running");
    assert.match(String(rec.lastTask), /:vzstart:400:/);
    assert.equal(sent(env, "POST", "/lxc/400/status/start").length, 1);
    assert.equal(env.sim.guest(400)?.status, "running");
  });
});

Deno.test("create: a re-run for the same managed container is done without a second create", async () => {
  await withCt({}, async (env) => {
    const first = await env.run("create", createArgs());
    assert.equal(first.status, "succeeded", first.error);
    const again = await env.run("create", createArgs({ start: true }));
    assert.equal(again.status, "succeeded", again.error);
    assert.equal(creates(env).length, 1);
    assert.ok(
      again.logs.some((l) => /nothing was created/.test(l.message)),
      "the summary says nothing was created",
    );
    assert.equal(written(again, "ct-400").status, "running");
  });
});

Deno.test("create: a VMID held by a VM is in use by another guest", async () => {
  await withCt({}, async (env) => {
    const r = await env.run("create", createArgs({ vmid: 100 }));
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /^VMID 100 is in use by another guest/);
    assert.equal(creates(env).length, 0);
  });
});

Deno.test("create: a container with the same hostname but without the swamp tag is another guest", async () => {
  await withCt({}, async (env) => {
    const r = await env.run(
      "create",
      createArgs({ vmid: 303, hostname: "plain-ct" }),
    );
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /^VMID 303 is in use by another guest/);
    assert.equal(written(r, "ct-303").name, "plain-ct");
    assert.equal(creates(env).length, 0);
  });
});

Deno.test("create: refused when the rootfs storage does not exist on the node", async () => {
  await withCt({}, async (env) => {
    const message = await refused(env, { storage: "nope" });
    assert.match(message, /rootfs: storage nope does not exist on node pve1/);
    assert.match(message, /storages listed: local, local-lvm, local-zfs/);
  });
});

Deno.test("create: refused when the rootfs storage is disabled", async () => {
  await withCt({}, async (env) => {
    env.sim.storage("pve1", "local-lvm")!.disabled = true;
    assert.match(await refused(env), /rootfs storage local-lvm is disabled/);
  });
});

Deno.test("create: refused when the rootfs storage is not active", async () => {
  await withCt({}, async (env) => {
    env.sim.storage("pve1", "local-lvm")!.active = false;
    assert.match(
      await refused(env),
      /rootfs storage local-lvm is not active \(offline\?\) on node pve1/,
    );
  });
});

Deno.test("create: refused when the storage does not take container volumes", async () => {
  await withCt({}, async (env) => {
    assert.match(
      await refused(env, { storage: "local" }),
      /rootfs storage local does not allow content rootdir \(its content: backup, iso, vztmpl\)/,
    );
  });
});

Deno.test("create: refused when the storage has no room for rootfsSize (mount points counted)", async () => {
  await withCt({}, async (env) => {
    const store = env.sim.storage("pve1", "local-lvm")!;
    store.total = 20 * GIB;
    store.used = 10 * GIB;
    const message = await refused(env, {
      rootfsSize: 8,
      config: { net0: NET0, mp0: "local-lvm:4,mp=/data" },
    });
    assert.match(
      message,
      /rootfs and mp0 storage local-lvm has [\d.]+ GiB free on node pve1, but 12 GiB are needed/,
    );
  });
});

Deno.test("create: refused when the template is not on its storage", async () => {
  await withCt({}, async (env) => {
    const message = await refused(env, {
      ostemplate: "local:vztmpl/alpine-3.20-default_20240908_amd64.tar.xz",
    });
    assert.match(
      message,
      /is not in the content of storage local on node pve1/,
    );
    assert.match(message, /its templates: local:vztmpl\/debian-12-standard/);
  });
});

Deno.test("create: refused when the template's storage does not hold templates", async () => {
  await withCt({}, async (env) => {
    assert.match(
      await refused(env, { ostemplate: "local-lvm:vztmpl/x.tar.zst" }),
      /ostemplate storage local-lvm does not allow content vztmpl/,
    );
  });
});

Deno.test("create: refused when a bridge of the net config does not exist (PVE itself would only fail the first start)", async () => {
  await withCt({}, async (env) => {
    const message = await refused(env, {
      config: { net0: "name=eth0,bridge=vmbr9,ip=dhcp" },
    });
    assert.match(
      message,
      /net0: bridge vmbr9 does not exist on node pve1 \(its bridges: vmbr0\)/,
    );
  });
});

Deno.test("create: refused when a bridge is down", async () => {
  await withCt({}, async (env) => {
    env.sim.bridges("pve1").push({ iface: "vmbr1", active: false });
    assert.match(
      await refused(env, {
        config: { net0: NET0, net1: "name=eth1,bridge=vmbr1,ip=dhcp" },
      }),
      /net1: bridge vmbr1 exists on node pve1 but is not active/,
    );
  });
});

Deno.test("create: every problem is listed in one message", async () => {
  await withCt({}, async (env) => {
    const message = await refused(env, {
      storage: "local",
      ostemplate: "local:vztmpl/missing_1.0_amd64.tar.zst",
      config: { net0: "name=eth0,bridge=vmbr9" },
    });
    assert.match(message, /3 problems found: \(1\) rootfs storage local/);
    assert.match(message, /\(2\) ostemplate "local:vztmpl\/missing/);
    assert.match(message, /\(3\) net0: bridge vmbr9/);
  });
});

Deno.test("create: a create task that fails fails with PVE's words", async () => {
  await withCt({}, async (env) => {
    env.sim.nextTask({
      exitstatus: "unable to create CT 400 - rootfs volume allocation failed",
    });
    const r = await env.run("create", createArgs());
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /rootfs volume allocation failed/);
  });
});

Deno.test("create: argument rules — hostname, config keys that have their own argument", async () => {
  await withCt({}, async (env) => {
    const badName = await env.run("create", createArgs({ hostname: "-x" }));
    assert.equal(badName.status, "failed");
    assert.match(badName.error ?? "", /hostname/);
    const force = await env.run(
      "create",
      createArgs({ config: { force: 1 } }),
    );
    assert.equal(force.status, "failed");
    assert.match(force.error ?? "", /config\.force/);
    assert.deepEqual(
      env.sim.requests.map((q) => q.path).filter((p) => !isCheckRequest(p)),
      [],
      "only the pre-flight checks reached PVE",
    );
  });
});

Deno.test("create: the transport-reachable check runs first", async () => {
  await withCt({}, async (env) => {
    env.sim.fault({
      pathRegex: "/version$",
      kind: "status",
      status: 500,
      message: "proxy down",
    });
    const r = await env.run("create", createArgs());
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /transport-reachable/);
    assert.equal(creates(env).length, 0);
  });
});
