/**
 * guestExec end to end: harness → package → wasm core → simulator → real qemu-ga.
 * Success means the command exited with an accepted code; the exec record is written either way.
 */
import assert from "node:assert/strict";
import { withEnv, written } from "./env.ts";

const exec = (command: string[], extra: Record<string, unknown> = {}) => ({
  vmid: 100,
  command,
  ...extra,
});

Deno.test("guestExec: exit 42 fails the run and records 42 with stdout and stderr", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run(
      "guestExec",
      exec(["bash", "-c", "echo out; echo err >&2; exit 42"]),
    );
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /exited with code 42/);
    const rec = written(r, "vm-100-exec");
    assert.equal(rec.exitCode, 42);
    assert.equal(rec.outcome, "exited");
    assert.equal(rec.accepted, false);
    assert.equal(rec.stdout, "out\n");
    assert.equal(rec.stderr, "err\n");
    assert.deepEqual(rec.command, [
      "bash",
      "-c",
      "echo out; echo err >&2; exit 42",
    ]);
  });
});

Deno.test("guestExec: exit 0 succeeds with the output recorded", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("guestExec", exec(["bash", "-c", "printf hello"]));
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "vm-100-exec");
    assert.equal(rec.exitCode, 0);
    assert.equal(rec.stdout, "hello");
    assert.equal(rec.accepted, true);
    assert.equal(rec.timedOut, false);
  });
});

Deno.test("guestExec: a command killed by a signal fails with the signal recorded", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("guestExec", exec(["bash", "-c", "kill -9 $$"]));
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /killed by signal 9/);
    const rec = written(r, "vm-100-exec");
    assert.equal(rec.signal, 9);
    assert.equal(rec.exitCode, undefined);
    assert.equal(rec.outcome, "signaled");
  });
});

Deno.test("guestExec: allowNonZeroExit accepts a non-zero code and records it", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run(
      "guestExec",
      exec(["bash", "-c", "exit 3"], { allowNonZeroExit: true }),
    );
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(written(r, "vm-100-exec").exitCode, 3);
  });
});

Deno.test("guestExec: allowNonZeroExit does not accept a signal", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run(
      "guestExec",
      exec(["bash", "-c", "kill -TERM $$"], { allowNonZeroExit: true }),
    );
    assert.equal(r.status, "failed");
    assert.equal(written(r, "vm-100-exec").signal, 15);
  });
});

Deno.test("guestExec: allowedExitCodes accepts only the listed codes", async () => {
  await withEnv({}, async (env) => {
    const ok = await env.run(
      "guestExec",
      exec(["bash", "-c", "exit 1"], { allowedExitCodes: [1] }),
    );
    assert.equal(ok.status, "succeeded", ok.error);
    const bad = await env.run(
      "guestExec",
      exec(["bash", "-c", "exit 2"], { allowedExitCodes: [1] }),
    );
    assert.equal(bad.status, "failed");
    assert.match(bad.error ?? "", /only exit codes 0, 1 counts/);
  });
});

Deno.test("guestExec: okExitCodes lists the codes that count, replacing 0", async () => {
  await withEnv({}, async (env) => {
    const ok = await env.run(
      "guestExec",
      exec(["bash", "-c", "exit 3"], { okExitCodes: [3] }),
    );
    assert.equal(ok.status, "succeeded", ok.error);
    const zero = await env.run(
      "guestExec",
      exec(["bash", "-c", "exit 0"], { okExitCodes: [3] }),
    );
    assert.equal(zero.status, "failed");
    assert.match(zero.error ?? "", /only exit code 3 \(okExitCodes\) counts/);
    assert.equal(written(zero, "vm-100-exec").exitCode, 0);
  });
});

Deno.test('guestExec: okExitCodes "any" accepts every exit code but not a signal', async () => {
  await withEnv({}, async (env) => {
    const ok = await env.run(
      "guestExec",
      exec(["bash", "-c", "exit 77"], { okExitCodes: "any" }),
    );
    assert.equal(ok.status, "succeeded", ok.error);
    const killed = await env.run(
      "guestExec",
      exec(["bash", "-c", "kill -TERM $$"], { okExitCodes: "any" }),
    );
    assert.equal(killed.status, "failed");
  });
});

Deno.test("guestExec: a command past timeoutSec fails with timedOut recorded", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run(
      "guestExec",
      exec(["sleep", "5"], { timeoutSec: 1 }),
    );
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /did not finish within timeoutSec=1s/);
    const rec = written(r, "vm-100-exec");
    assert.equal(rec.timedOut, true);
    assert.equal(rec.outcome, "timedOut");
    assert.ok((rec.durationMs as number) >= 1000);
  });
});

Deno.test("guestExec: agent not running fails with PVE's message and a notStarted record", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("guestExec", { vmid: 103, command: ["true"] });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /QEMU guest agent is not running/);
    const rec = written(r, "vm-103-exec");
    assert.equal(rec.outcome, "notStarted");
    assert.equal(rec.exited, false);
  });
});

Deno.test("guestExec: agent not configured fails with PVE's message", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("guestExec", { vmid: 104, command: ["true"] });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /No QEMU guest agent configured/);
  });
});

Deno.test("guestExec: a stopped guest fails with PVE's message", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("guestExec", { vmid: 102, command: ["true"] });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /VM 102 is not running/);
  });
});

Deno.test("guestExec: exec disabled in the agent fails with the agent's message", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("guestExec", { vmid: 105, command: ["true"] });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /guest-exec has been disabled/);
  });
});

Deno.test("guestExec: a program that cannot be spawned fails with the agent's error", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("guestExec", exec(["/nonexistent/program"]));
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /did not start: Agent error/);
    assert.equal(written(r, "vm-100-exec").outcome, "notStarted");
  });
});

Deno.test("guestExec: a guest on another node is found and run there", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("guestExec", { vmid: 101, command: ["true"] });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(written(r, "vm-101-exec").node, "pve2");
    assert.ok(
      env.sim.requests.some((q) =>
        q.path.includes("/nodes/pve2/qemu/101/agent/exec")
      ),
    );
  });
});

Deno.test("guestExec: the final status is read once and never again", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("guestExec", exec(["bash", "-c", "exit 7"]));
    assert.equal(r.status, "failed");
    const statusReads = env.sim.requests.filter((q) =>
      q.path.endsWith("/agent/exec-status")
    );
    const finals = statusReads.filter((q) => q.status === 200);
    assert.ok(statusReads.length >= 1);
    assert.equal(
      statusReads.length,
      finals.length,
      "no status read failed (none after the final one)",
    );
  });
});

Deno.test("guestExec: stdin from inputData reaches the command", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run(
      "guestExec",
      exec(["cat"], { inputData: "piped in" }),
    );
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(written(r, "vm-100-exec").stdout, "piped in");
  });
});

Deno.test("guestExec: a short command is noticed within a few hundred milliseconds", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("guestExec", exec(["true"]));
    assert.equal(r.status, "succeeded", r.error);
    // First poll after ≤ 100 ms: a 3 s fixed poll would show here as ≥ 3000 ms.
    assert.ok((written(r, "vm-100-exec").durationMs as number) < 1500);
  });
});
