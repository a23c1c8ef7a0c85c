/**
 * Bad input is refused with an error naming the field, before any request reaches PVE.
 */
import assert from "node:assert/strict";
import { model } from "../../js/proxmox_qemu.ts";
import { SwampRepo } from "../../harness/swamp.ts";
import { type Env, isCheckRequest, withEnv } from "./env.ts";
import { PACKAGE_FILES } from "../../harness/project_package.ts";

async function refusedBeforeAnyRequest(
  env: Env,
  method: string,
  args: Record<string, unknown>,
  field: RegExp,
) {
  const r = await env.run(method, args);
  assert.equal(r.status, "failed");
  assert.match(r.error ?? "", field);
  // swamp runs pre-flight checks before it parses method arguments: only the checks' GET /version
  // and GET /access/permissions may have been sent; the method itself sent nothing.
  const sent = env.sim.requests.map((q) => q.path).filter((p) =>
    !isCheckRequest(p)
  );
  assert.deepEqual(sent, [], "the method sent no request");
  assert.equal(r.written.length, 0);
}

Deno.test("arguments: vmid below 100 is refused naming vmid", async () => {
  await withEnv(
    {},
    (env) => refusedBeforeAnyRequest(env, "lookup", { vmid: 99 }, /vmid/),
  );
});

Deno.test("arguments: an empty command is refused naming command", async () => {
  await withEnv(
    {},
    (env) =>
      refusedBeforeAnyRequest(
        env,
        "guestExec",
        { vmid: 100, command: [] },
        /command/,
      ),
  );
});

Deno.test("arguments: a command that is not an array is refused naming command", async () => {
  await withEnv(
    {},
    (env) =>
      refusedBeforeAnyRequest(
        env,
        "guestExec",
        { vmid: 100, command: "ls -l" },
        /command/,
      ),
  );
});

Deno.test("arguments: neither vmid nor vmName is refused", async () => {
  await withEnv(
    {},
    (env) =>
      refusedBeforeAnyRequest(env, "lookup", {}, /Provide vmid or vmName/),
  );
});

async function globalArgsRefused(
  transport: Record<string, unknown>,
  field: RegExp,
) {
  await withEnv({}, async (env) => {
    const repo = new SwampRepo(model, {
      name: "bad",
      globalArgs: { name: "bad", transport },
    }, { vault: true, extensionFiles: PACKAGE_FILES });
    const r = await repo.run("lookup", { vmid: 100 });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", field);
    assert.equal(env.sim.requests.length, 0, "no request was sent");
  });
}

Deno.test("arguments: a newline in the node name is refused naming node", async () => {
  await globalArgsRefused({
    kind: "api",
    node: "pve1\nx",
    apiUrl: "http://127.0.0.1:1",
    tokenId: "a@pam!b",
    tokenSecret: "s",
  }, /node/);
});

Deno.test("arguments: a newline in an ssh option is refused naming it", async () => {
  await globalArgsRefused({
    kind: "ssh",
    node: "pve1",
    host: "h",
    proxyJump: "a\nb",
  }, /proxyJump/);
});

Deno.test("arguments: an unknown transport kind is refused naming kind", async () => {
  await globalArgsRefused({ kind: "telnet", node: "pve1" }, /kind/);
});

Deno.test("arguments: a node name that would change the API path is refused", async () => {
  await globalArgsRefused({
    kind: "api",
    node: "../cluster",
    apiUrl: "http://127.0.0.1:1",
    tokenId: "a@pam!b",
    tokenSecret: "s",
  }, /node/);
});
