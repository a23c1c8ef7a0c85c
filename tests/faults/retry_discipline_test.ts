/**
 * Retry discipline, shown with the simulator's request log: safe reads retry transient faults a
 * bounded number of times with a pause between tries; mutations are sent exactly once, and a lost
 * answer fails saying the effect is unknown — even when (here) the effect did happen.
 */
import assert from "node:assert/strict";
import type { Env } from "../e2e/env.ts";
import { written } from "../e2e/env.ts";
import { matrixEnv, READ_RETRIES } from "./cell.ts";

async function withMatrixEnv(body: (env: Env) => Promise<void>) {
  const env = await matrixEnv();
  try {
    await body(env);
  } finally {
    await env.close();
  }
}

const sent = (env: Env, method: string, path: RegExp) =>
  env.sim.requests.filter((q) => q.method === method && path.test(q.path));

for (const afterHandler of [false, true]) {
  const when = afterHandler
    ? "after PVE carried it out"
    : "before PVE handled it";

  Deno.test(`retry discipline: agent/exec reset ${when} → sent once, "may have run"`, async () => {
    await withMatrixEnv(async (env) => {
      const marker = await Deno.makeTempFile();
      await Deno.remove(marker);
      env.sim.fault({
        method: "POST",
        pathRegex: "/qemu/100/agent/exec$",
        kind: "reset",
        afterHandler,
      });
      const r = await env.run("guestExec", {
        vmid: 100,
        command: ["touch", marker],
      });
      assert.equal(r.status, "failed");
      assert.equal(sent(env, "POST", /\/qemu\/100\/agent\/exec$/).length, 1);
      assert.match(r.error ?? "", /the command may have run in the guest/);
      assert.match(r.error ?? "", /it was not sent again/);
      const rec = written(r, "vm-100-exec");
      assert.equal(rec.outcome, "unconfirmed");
      assert.equal(rec.accepted, false);
      assert.equal(rec.exitCode, undefined);
      // "may have run" is the truth in both cases: here it did run exactly when PVE handled it.
      const ran = () => Deno.stat(marker).then(() => true, () => false);
      for (let i = 0; i < 100 && afterHandler && !await ran(); i++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      assert.equal(await ran(), afterHandler);
      if (afterHandler) await Deno.remove(marker);
    });
  });

  Deno.test(`retry discipline: status/start reset ${when} → sent once, effect unknown, lookup tells`, async () => {
    await withMatrixEnv(async (env) => {
      env.sim.fault({
        method: "POST",
        pathRegex: "/qemu/120/status/start$",
        kind: "reset",
        afterHandler,
      });
      // A start task long enough that the run ends before it does, however busy the machine:
      // the record then shows the state read before the start's effect, as on a real node.
      env.sim.nextTask({ durationMs: 2_000 });
      const r = await env.run("start", { vmid: 120 });
      assert.equal(r.status, "failed");
      assert.equal(sent(env, "POST", /\/qemu\/120\/status\/start$/).length, 1);
      assert.match(r.error ?? "", /whether PVE carried it out is unknown/);
      assert.match(r.error ?? "", /check the guest's state \(run lookup\)/);
      // The record holds what was observed (stopped, before the start), never "running".
      assert.equal(written(r, "vm-120").status, "stopped");
      // Following the advice, once the task PVE carried out has ended, shows what really happened.
      const expected = afterHandler ? "running" : "stopped";
      for (let i = 0; i < 100 && env.sim.guest(120)?.status !== expected; i++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const look = await env.run("lookup", { vmid: 120 });
      assert.equal(look.status, "succeeded", look.error);
      assert.equal(written(look, "vm-120").status, expected);
      assert.equal(env.sim.guest(120)?.status, expected);
    });
  });

  Deno.test(`retry discipline: clone reset ${when} → sent once, effect unknown, no record of the clone`, async () => {
    await withMatrixEnv(async (env) => {
      env.sim.fault({
        method: "POST",
        pathRegex: "/qemu/9000/clone$",
        kind: "reset",
        afterHandler,
      });
      const r = await env.run("clone", {
        templateId: 9000,
        vmid: 300,
        name: "web2",
      });
      assert.equal(r.status, "failed");
      assert.equal(sent(env, "POST", /\/qemu\/9000\/clone$/).length, 1);
      assert.match(r.error ?? "", /whether PVE carried it out is unknown/);
      assert.match(r.error ?? "", /run lookup/);
      assert.deepEqual(
        r.written,
        [],
        "nothing observed of the clone, nothing recorded",
      );
      await new Promise((resolve) => setTimeout(resolve, 100));
      const look = await env.run("lookup", { vmid: 300 });
      assert.equal(look.status, "succeeded", look.error);
      assert.equal(written(look, "vm-300").present, afterHandler);
    });
  });
}

Deno.test("retry discipline: a safe read is retried a bounded number of times, with pauses", async () => {
  await withMatrixEnv(async (env) => {
    env.sim.fault({
      method: "GET",
      pathRegex: "/qemu/122/status/current$",
      kind: "reset",
      times: Infinity,
    });
    const r = await env.run("lookup", { vmid: 122 });
    assert.equal(r.status, "failed");
    assert.equal(
      sent(env, "GET", /\/qemu\/122\/status\/current$/).length,
      1 + READ_RETRIES,
    );
    const retries = r.logs.filter((l) =>
      /retrying \(\d of 2\)/.test(l.message)
    );
    assert.equal(retries.length, READ_RETRIES);
    // Pauses of 200 ms then 300 ms between the tries.
    assert.ok(r.durationMs >= 500, `${r.durationMs} ms`);
    assert.deepEqual(r.written, []);
  });
});

Deno.test("retry discipline: a hung read is re-sent after requestTimeoutSec, a hung mutation never", async () => {
  await withMatrixEnv(async (env) => {
    env.sim.fault({ pathRegex: "/qemu/122/status/current$", kind: "hang" });
    const read = await env.run("lookup", { vmid: 122 });
    assert.equal(read.status, "succeeded", read.error);
    assert.equal(sent(env, "GET", /\/qemu\/122\/status\/current$/).length, 2);
    assert.ok(read.durationMs >= 1000, `${read.durationMs} ms`);

    env.sim.fault({ pathRegex: "/qemu/122/status/stop$", kind: "hang" });
    const stop = await env.run("stop", { vmid: 122 });
    assert.equal(stop.status, "failed");
    assert.equal(sent(env, "POST", /\/qemu\/122\/status\/stop$/).length, 1);
    assert.match(
      stop.error ?? "",
      /no answer within 1000 ms \(budget: requestTimeoutSec=1s\)/,
    );
    assert.match(stop.error ?? "", /whether PVE carried it out is unknown/);
  });
});
