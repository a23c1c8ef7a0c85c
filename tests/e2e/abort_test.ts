/**
 * An aborted run (`ctx.signal`) stops promptly and fails cleanly, keeping the evidence it gathered.
 */
import assert from "node:assert/strict";
import { withEnv, written } from "./env.ts";

Deno.test("abort: guestExec stops polling at once and records the command as aborted", async () => {
  await withEnv({}, async (env) => {
    const controller = new AbortController();
    // Measured from the abort, not the run's start: a busy machine may slow what comes before it.
    let abortedAt = Infinity;
    setTimeout(() => {
      abortedAt = performance.now();
      controller.abort();
    }, 300);
    const r = await env.run("guestExec", {
      vmid: 100,
      command: ["sleep", "30"],
      timeoutSec: 60,
    }, {
      signal: controller.signal,
    });
    const took = performance.now() - abortedAt;
    assert.equal(r.status, "failed");
    assert.ok(took < 1700, `returned ${Math.round(took)} ms after the abort`);
    const rec = written(r, "vm-100-exec");
    assert.equal(rec.outcome, "aborted");
    assert.match(
      r.error ?? "",
      /aborted; it may still be running in the guest/,
    );
  });
});

Deno.test("abort: start stops waiting for its task and fails", async () => {
  await withEnv({}, async (env) => {
    env.sim.nextTask({ durationMs: 20_000 });
    const controller = new AbortController();
    // Measured from the abort, not the run's start: a busy machine may slow what comes before it.
    let abortedAt = Infinity;
    setTimeout(() => {
      abortedAt = performance.now();
      controller.abort();
    }, 300);
    const r = await env.run("start", { vmid: 102 }, {
      signal: controller.signal,
    });
    assert.equal(r.status, "failed");
    const took = performance.now() - abortedAt;
    assert.ok(took < 1700, `returned ${Math.round(took)} ms after the abort`);
    assert.match(r.error ?? "", /abort/);
  });
});
