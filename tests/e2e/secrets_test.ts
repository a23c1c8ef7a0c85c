/**
 * The secret scan itself: the fixture scans every run (records, logs, errors) and the simulator's
 * request log for the token secret. These tests prove the scan sees what it must.
 */
import assert from "node:assert/strict";
import { assertNoSecret, TOKEN_SECRET, withEnv } from "./env.ts";

Deno.test("secrets: the scan fails when the secret appears anywhere in a value", () => {
  assert.throws(
    () =>
      assertNoSecret("a record", {
        logs: [{ message: `token=${TOKEN_SECRET}` }],
      }),
    /leaked into a record/,
  );
  assert.doesNotThrow(() =>
    assertNoSecret("a record", { logs: [{ message: "token=***" }] })
  );
});

Deno.test("secrets: a failing run over a refused token does not echo the secret", async () => {
  await withEnv({}, async (env) => {
    env.sim.fault({
      pathRegex: "/status/current$",
      kind: "status",
      status: 401,
      message: "authentication failure",
    });
    const r = await env.run("lookup", { vmid: 100 });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /authentication failure/);
    assert.match(r.error ?? "", /check tokenId and tokenSecret/);
  });
});

Deno.test("secrets: a transport error does not echo the request's headers", async () => {
  await withEnv({}, async (env) => {
    env.sim.fault({ pathRegex: "/agent/exec$", kind: "reset" });
    const r = await env.run("guestExec", { vmid: 100, command: ["true"] });
    assert.equal(r.status, "failed");
    assert.doesNotMatch(r.error ?? "", /PVEAPIToken|Authorization/);
  });
});
