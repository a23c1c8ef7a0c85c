/**
 * TLS for real: the simulator serves HTTPS with a certificate from a CA the test makes (like PVE's
 * pve-root-ca). `caCert` with that CA succeeds; no CA or the wrong CA fails with a TLS message —
 * never a silent downgrade. `skipTlsVerify` cannot turn verification off in a standard Deno runtime.
 */
import assert from "node:assert/strict";
import { makeTestCerts } from "../../simulator/certs.ts";
import { withEnv } from "./env.ts";

const certs = await makeTestCerts();
const otherCa = (await makeTestCerts()).caCert;
const tls = { tls: { cert: certs.cert, key: certs.key } };

Deno.test("tls: caCert naming the CA that signed the certificate succeeds over https", async () => {
  await withEnv(
    { sim: tls, transport: { caCert: certs.caCert } },
    async (env) => {
      assert.match(env.sim.url, /^https:/);
      const r = await env.run("lookup", { vmid: 100 });
      assert.equal(r.status, "succeeded", r.error);
    },
  );
});

Deno.test("tls: without caCert an unknown CA fails with a TLS message and writes nothing", async () => {
  await withEnv({ sim: tls }, async (env) => {
    const r = await env.run("lookup", { vmid: 100 });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /TLS verification failed/);
    assert.match(r.error ?? "", /check caCert/);
    assert.equal(r.written.length, 0);
  });
});

Deno.test("tls: the wrong CA fails with a TLS message", async () => {
  await withEnv({ sim: tls, transport: { caCert: otherCa } }, async (env) => {
    const r = await env.run("lookup", { vmid: 100 });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /TLS verification failed/);
  });
});

Deno.test("tls: skipTlsVerify does not disable verification and says to give caCert", async () => {
  await withEnv(
    { sim: tls, transport: { skipTlsVerify: true } },
    async (env) => {
      const r = await env.run("lookup", { vmid: 100 });
      assert.equal(r.status, "failed");
      assert.match(r.error ?? "", /skipTlsVerify cannot turn verification off/);
    },
  );
});
