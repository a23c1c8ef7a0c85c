/**
 * PVE's booleans on the wire, over both transports: a node's HTTP API takes only `1`/`0` for a
 * boolean parameter (pve-common JSONSchema.pm `check_type`), pvesh also `yes`/`on`/`true`
 * (`get_options` → `parse_boolean`). The package sends every boolean config key as `1`/`0`
 * whatever the caller wrote, and refuses a value that is no boolean before anything is sent.
 */
import assert from "node:assert/strict";
import { withEnv } from "./env.ts";
import { CREATE_400, sent, withCt } from "./lxc_fixture.ts";

for (const via of ["api", "ssh"] as const) {
  Deno.test(`booleans (${via}): setConfig sends yes, true and Off as 1/0 and they read back applied`, async () => {
    await withEnv({ via }, async (env) => {
      const r = await env.run("setConfig", {
        vmid: 102,
        config: { onboot: "yes", numa: true, protection: "Off" },
      });
      assert.equal(r.status, "succeeded", r.error);
      const config = env.sim.guest(102)?.config;
      assert.equal(Number(config?.onboot), 1);
      assert.equal(Number(config?.numa), 1);
      assert.equal(Number(config?.protection), 0);
      const puts = env.sim.requests.filter((q) =>
        q.method === "PUT" && q.path.endsWith("/qemu/102/config")
      );
      assert.equal(puts.length, 1, "one config write");
    });
  });

  Deno.test(`booleans (${via}): a value that is no boolean for a boolean key is refused naming the key, nothing sent`, async () => {
    await withEnv({ via }, async (env) => {
      const r = await env.run("setConfig", {
        vmid: 102,
        config: { onboot: "maybe", description: "x" },
      });
      assert.equal(r.status, "failed");
      assert.match(r.error ?? "", /config\.onboot/);
      assert.match(r.error ?? "", /boolean/);
      assert.equal(
        env.sim.requests.filter((q) => q.method === "PUT").length,
        0,
        "no config write was sent",
      );
      assert.equal(env.sim.guest(102)?.config.description, undefined);
    });
  });
}

Deno.test("booleans (api): lxc create sends a config flag written as on as 1", async () => {
  await withCt({}, async (env) => {
    const r = await env.run("create", {
      ...CREATE_400,
      config: { onboot: "on" },
    });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(Number(env.sim.guest(400)?.config.onboot), 1);
    const [post] = sent(env, "POST", "/nodes/pve1/lxc");
    assert.ok(post, "the create was sent");
  });
});
