/**
 * The test sshd itself: a real OpenSSH server on loopback that accepts exactly its generated client
 * key, presents exactly its generated host key, and leaves nothing behind when stopped.
 */
import assert from "node:assert/strict";
import { startSshd } from "./sshd.ts";

async function ssh(port: number, key: string, knownHosts: string) {
  const out = await new Deno.Command("ssh", {
    args: [
      "-F",
      "/dev/null",
      "-o",
      "BatchMode=yes",
      "-o",
      "IdentitiesOnly=yes",
      "-o",
      `IdentityFile=${key}`,
      "-o",
      `UserKnownHostsFile=${knownHosts}`,
      "-o",
      "GlobalKnownHostsFile=/dev/null",
      "-o",
      "StrictHostKeyChecking=yes",
      "-p",
      String(port),
      "-l",
      "root",
      "--",
      "127.0.0.1",
      "echo hello from $(whoami)",
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const d = new TextDecoder();
  return {
    code: out.code,
    stdout: d.decode(out.stdout),
    stderr: d.decode(out.stderr),
  };
}

Deno.test("sshd: the client key logs in, the host key is checked strictly", async () => {
  const sshd = await startSshd();
  try {
    const r = await ssh(sshd.port, sshd.clientKey, sshd.knownHosts);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "hello from root\n");
    assert.match(sshd.log(), /Accepted publickey for root from 127\.0\.0\.1/);
    assert.match(sshd.hostKeyPub, /^ssh-ed25519 \S+$/);
  } finally {
    await sshd.stop();
  }
});

Deno.test("sshd: another key is refused; another server's known_hosts does not match", async () => {
  const [a, b] = await Promise.all([startSshd(), startSshd()]);
  try {
    const wrongKey = await ssh(a.port, b.clientKey, a.knownHosts);
    assert.equal(wrongKey.code, 255);
    assert.match(wrongKey.stderr, /Permission denied \(publickey\)/);
    const wrongHost = await ssh(a.port, a.clientKey, b.knownHosts);
    assert.equal(wrongHost.code, 255);
    assert.match(wrongHost.stderr, /Host key verification failed/);
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
});

Deno.test("sshd: stop() ends the daemon, frees the port and removes its dir", async () => {
  const sshd = await startSshd();
  await sshd.stop();
  await sshd.stop(); // idempotent
  await assert.rejects(
    Deno.connect({ hostname: "127.0.0.1", port: sshd.port }),
    Deno.errors.ConnectionRefused,
  );
  await assert.rejects(Deno.stat(sshd.dir), Deno.errors.NotFound);
});
