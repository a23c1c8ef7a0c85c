/**
 * guestExec of a container end to end: over the ssh transport it runs `pct exec <vmid> -- <argv>`
 * on the node (the fixture's pct really runs the command), with the qemu guestExec contract and
 * record (ct-<vmid>-exec); over the api transport it fails saying it needs ssh.
 */
import assert from "node:assert/strict";
import { model as lxcModel } from "../../js/proxmox_lxc.ts";
import { demoGuests } from "../../simulator/demo_cluster.ts";
import { containers } from "./lxc_fixture.ts";
import { type EnvOptions, withEnv, written } from "./env.ts";

const overSsh: EnvOptions = {
  guests: [...demoGuests(), ...containers()],
  model: lxcModel,
  via: "ssh",
};

Deno.test("lxc guestExec: a command that exits 3 fails with exit code 3 and its output recorded", async () => {
  await withEnv(overSsh, async (env) => {
    const r = await env.run("guestExec", {
      vmid: 300,
      command: ["sh", "-c", "echo out; echo err >&2; exit 3"],
    });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /exited with code 3/);
    assert.match(r.error ?? "", /stderr ends: err/);
    const rec = written(r, "ct-300-exec");
    assert.equal(rec.outcome, "exited");
    assert.equal(rec.exitCode, 3);
    assert.equal(rec.stdout, "out\n");
    assert.equal(rec.stderr, "err\n");
    assert.equal(rec.accepted, false);
  });
});

Deno.test("lxc guestExec: exit 0 succeeds and the argv reaches pct exactly", async () => {
  await withEnv(overSsh, async (env) => {
    const tricky = ["printf", "%s|", "a b", "it's", "$(id)", "-x", "ü\nz"];
    const r = await env.run("guestExec", { vmid: 300, command: tricky });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(written(r, "ct-300-exec").stdout, "a b|it's|$(id)|-x|ü\nz|");
    assert.deepEqual((await env.ssh!.pctCalls()).at(-1), [
      "exec",
      "300",
      "--",
      ...tricky,
    ]);
  });
});

Deno.test("lxc guestExec: inputData reaches the command's stdin", async () => {
  await withEnv(overSsh, async (env) => {
    const r = await env.run("guestExec", {
      vmid: 300,
      command: ["cat"],
      inputData: "line 1\nit's $HOME\n",
    });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(written(r, "ct-300-exec").stdout, "line 1\nit's $HOME\n");
  });
});

Deno.test("lxc guestExec: allowedExitCodes accepts the listed code", async () => {
  await withEnv(overSsh, async (env) => {
    const r = await env.run("guestExec", {
      vmid: 300,
      command: ["sh", "-c", "exit 3"],
      allowedExitCodes: [3],
    });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(written(r, "ct-300-exec").accepted, true);
  });
});

Deno.test("lxc guestExec: a command killed by a signal fails naming lxc-attach's 128+N status", async () => {
  await withEnv(overSsh, async (env) => {
    const r = await env.run("guestExec", {
      vmid: 300,
      command: ["sh", "-c", "kill -9 $$"],
    });
    assert.equal(r.status, "failed");
    assert.equal(written(r, "ct-300-exec").exitCode, 137);
    assert.match(r.error ?? "", /killed by signal 9 as exit status 137/);
  });
});

Deno.test("lxc guestExec: a command outliving timeoutSec is recorded timedOut", async () => {
  await withEnv(overSsh, async (env) => {
    const r = await env.run("guestExec", {
      vmid: 300,
      command: ["sleep", "30"],
      timeoutSec: 1,
    });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /did not finish within timeoutSec=1s/);
    assert.equal(written(r, "ct-300-exec").outcome, "timedOut");
  });
});

Deno.test("lxc guestExec: a stopped container is not started, and the record says why", async () => {
  await withEnv(overSsh, async (env) => {
    const r = await env.run("guestExec", { vmid: 301, command: ["true"] });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /is not running \(status stopped\)/);
    assert.equal(written(r, "ct-301-exec").outcome, "notStarted");
    assert.deepEqual(await env.ssh!.pctCalls(), []);
  });
});

Deno.test("lxc guestExec: a container on another node is refused naming the node to reach", async () => {
  await withEnv(overSsh, async (env) => {
    const r = await env.run("guestExec", { vmid: 302, command: ["true"] });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /lives on node pve2/);
  });
});

Deno.test("lxc guestExec: over the api transport it fails saying it needs ssh", async () => {
  await withEnv(
    { guests: [...demoGuests(), ...containers()], model: lxcModel },
    async (env) => {
      const r = await env.run("guestExec", { vmid: 300, command: ["true"] });
      assert.equal(r.status, "failed");
      assert.match(r.error ?? "", /needs the ssh transport/);
      assert.equal(
        env.sim.requests.filter((q) => q.path.includes("/lxc/300")).length,
        0,
      );
    },
  );
});
