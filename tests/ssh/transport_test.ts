/**
 * The package's ssh transport against a real OpenSSH server: through a ProxyJump hop, every way a
 * connection fails (each named, with what to check, and never slower than connectTimeoutSec), hostile
 * values reaching the guest byte for byte through the node's shell, and the limits of a command line.
 *
 * ssh's own words, as OpenSSH 9.2 prints them here (also pinned in src/transport/ssh.rs's tests):
 * - refused:      `ssh: connect to host 127.0.0.1 port <p>: Connection refused`
 * - key changed:  a `@@@ WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED! @@@` banner, then
 *                 `Host key for [127.0.0.1]:<p> has changed and you have requested strict checking.`
 *                 `Host key verification failed.`
 * - key unknown:  `No ED25519 host key is known for [127.0.0.1]:<p> and you have requested strict
 *                 checking.` `Host key verification failed.`
 * - wrong key:    `<user>@127.0.0.1: Permission denied (publickey).`
 * - silent port:  `Connection timed out during banner exchange` `Connection to 127.0.0.1 port <p> timed out`
 * - stalled kex:  `Connection to 127.0.0.1 port <p> timed out` — only because the transport sets
 *                 ServerAliveInterval: ConnectTimeout alone lets ssh wait forever after the banner.
 * - jump down:    `ssh: connect to host 127.0.0.1 port <j>: Connection refused`
 *                 `kex_exchange_identification: Connection closed by remote host`
 *                 `Connection closed by UNKNOWN port 65535`
 */
import assert from "node:assert/strict";
import { decide, validateOnCore } from "../../js/_lib/core.ts";
import { model } from "../../js/proxmox_qemu.ts";
import { type Env, withEnv, written } from "../e2e/env.ts";
import { SwampRepo } from "../../harness/swamp.ts";
import type { RunResult } from "../../harness/swamp.ts";
import { strangerKey } from "./node.ts";
import { freePort, generateKey, knownHostsLine } from "./sshd.ts";
import { PACKAGE, PACKAGE_FILES } from "../../harness/project_package.ts";

/** Runs `method` with the env's transport changed by `override`; returns the result and its duration. */
async function runWith(
  env: Env,
  override: Record<string, unknown>,
  method = "lookup",
  args: Record<string, unknown> = { vmid: 100 },
): Promise<{ r: RunResult; ms: number }> {
  const transport = {
    ...(env.globalArgs.transport as Record<string, unknown>),
    ...override,
  };
  const repo = new SwampRepo(model, {
    name: "fleet",
    globalArgs: { ...env.globalArgs, transport },
  }, { vault: true, extensionFiles: PACKAGE_FILES });
  const started = performance.now();
  const r = await repo.run(method, args);
  return { r, ms: performance.now() - started };
}

/** A TCP port that accepts connections and then never speaks (or only sends `banner`). */
function mute(banner?: string): { port: number; close(): Promise<void> } {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns: Deno.Conn[] = [];
  const loop = (async () => {
    try {
      for await (const conn of listener) {
        conns.push(conn);
        if (banner) await conn.write(new TextEncoder().encode(banner));
      }
    } catch {
      // listener closed
    }
  })();
  return {
    port: (listener.addr as Deno.NetAddr).port,
    close: async () => {
      listener.close();
      for (const conn of conns) {
        try {
          conn.close();
        } catch {
          // already closed
        }
      }
      await loop;
    },
  };
}

/** Every process below `pid` (children, grandchildren, …), from /proc. */
async function descendants(pid: number): Promise<number[]> {
  const parents = new Map<number, number[]>();
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const stat = await Deno.readTextFile(`/proc/${entry.name}/stat`);
      // "pid (comm) state ppid …": comm may hold spaces and parentheses, so split after the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      parents.set(ppid, [...(parents.get(ppid) ?? []), Number(entry.name)]);
    } catch {
      // exited meanwhile
    }
  }
  const found: number[] = [];
  const walk = (p: number) => {
    for (const child of parents.get(p) ?? []) {
      found.push(child);
      walk(child);
    }
  };
  walk(pid);
  return found;
}

/** The failure of a connection: named, ssh's words kept, nothing reached pvesh. */
async function assertConnectionFailure(
  env: Env,
  r: RunResult,
  hint: RegExp,
  said: RegExp,
) {
  assert.equal(r.status, "failed");
  const error = r.error ?? "";
  assert.match(error, /could not read the state of VM 100 on node pve1/);
  assert.match(error, /ssh to root@127\.0\.0\.1:\d+ .*failed — /);
  assert.match(error, hint);
  assert.match(error, said);
  assert.match(error, /a retry would fail the same way/);
  assert.equal(r.written.length, 0);
  assert.deepEqual(await env.ssh!.calls(), [], "pvesh never ran");
}

Deno.test("ssh transport: lookup through a ProxyJump hop; both sshds carried the session", async () => {
  await withEnv({ via: "ssh-jump" }, async (env) => {
    const r = await env.run("lookup", { vmid: 100 });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(written(r, "vm-100").status, "running");
    // Different client keys for the two hops: identityFile served the node, the config the jump.
    assert.match(
      env.ssh!.jump!.log(),
      /Accepted publickey for root from 127\.0\.0\.1/,
    );
    assert.match(
      env.ssh!.target.log(),
      /Accepted publickey for root from 127\.0\.0\.1/,
    );
  });
});

Deno.test("ssh transport: connection refused is named at once, not retried", async () => {
  await withEnv({ via: "ssh" }, async (env) => {
    const port = freePort();
    const { r, ms } = await runWith(env, { port });
    await assertConnectionFailure(
      env,
      r,
      /connection refused: check host, port and that sshd runs on the node/,
      new RegExp(
        `ssh said: ssh: connect to host 127\\.0\\.0\\.1 port ${port}: Connection refused`,
      ),
    );
    assert.ok(ms < 2000, `${ms} ms`);
  });
});

Deno.test("ssh transport: a changed host key under strict checking is named, banner left out", async () => {
  await withEnv({ via: "ssh" }, async (env) => {
    const other = await generateKey(`${env.ssh!.dir}/impostor_key`);
    const port = env.ssh!.target.port;
    await Deno.writeTextFile(
      env.ssh!.knownHosts,
      knownHostsLine(port, other) + "\n",
    );
    const { r } = await runWith(env, {});
    await assertConnectionFailure(
      env,
      r,
      /the host key is not the one known_hosts holds for it/,
      new RegExp(
        `Host key for \\[127\\.0\\.0\\.1\\]:${port} has changed and you have requested strict checking\\.; Host key verification failed\\.`,
      ),
    );
    assert.doesNotMatch(r.error ?? "", /@@@|NASTY/);
  });
});

Deno.test("ssh transport: an unknown host key under strict checking is named", async () => {
  await withEnv({ via: "ssh" }, async (env) => {
    await Deno.writeTextFile(env.ssh!.knownHosts, "");
    const { r } = await runWith(env, {});
    await assertConnectionFailure(
      env,
      r,
      /the host key is not the one known_hosts holds for it \(or is unknown while strict checking is on\)/,
      /No ED25519 host key is known for \[127\.0\.0\.1\]:\d+ and you have requested strict checking\.; Host key verification failed\./,
    );
  });
});

Deno.test("ssh transport: accept-new takes an unknown key and connects", async () => {
  await withEnv({ via: "ssh" }, async (env) => {
    await Deno.writeTextFile(env.ssh!.knownHosts, "");
    const { r } = await runWith(env, { strictHostKeyChecking: "accept-new" });
    assert.equal(r.status, "succeeded", r.error);
    assert.match(
      await Deno.readTextFile(env.ssh!.knownHosts),
      new RegExp(`^\\[127\\.0\\.0\\.1\\]:${env.ssh!.target.port} ssh-ed25519 `),
    );
  });
});

Deno.test("ssh transport: a key the node does not accept is named as an authentication failure", async () => {
  await withEnv({ via: "ssh" }, async (env) => {
    const { r } = await runWith(env, {
      identityFile: await strangerKey(env.ssh!.dir),
    });
    await assertConnectionFailure(
      env,
      r,
      /authentication failed: check user, identityFile\/identityAgent/,
      /root@127\.0\.0\.1: Permission denied \(publickey\)\./,
    );
  });
});

Deno.test("ssh transport: a port that never speaks fails within connectTimeoutSec", async () => {
  await withEnv({ via: "ssh" }, async (env) => {
    const silent = mute();
    try {
      const { r, ms } = await runWith(env, {
        port: silent.port,
        connectTimeoutSec: 1,
      });
      await assertConnectionFailure(
        env,
        r,
        /no ssh session within connectTimeoutSec=1s/,
        /Connection timed out during banner exchange; Connection to 127\.0\.0\.1 port \d+ timed out/,
      );
      // One attempt of 1 s: a timeout is not retried (each retry would wait as long again).
      assert.ok(ms >= 1000 && ms < 2500, `${ms} ms`);
    } finally {
      await silent.close();
    }
  });
});

Deno.test("ssh transport: a server that stalls after its banner fails within connectTimeoutSec", async () => {
  await withEnv({ via: "ssh" }, async (env) => {
    const stalling = mute("SSH-2.0-OpenSSH_9.2p1\r\n");
    try {
      const { r, ms } = await runWith(env, {
        port: stalling.port,
        connectTimeoutSec: 1,
      });
      await assertConnectionFailure(
        env,
        r,
        /no ssh session within connectTimeoutSec/,
        /Connection to 127\.0\.0\.1 port \d+ timed out/,
      );
      assert.ok(ms < 2500, `${ms} ms`);
    } finally {
      await stalling.close();
    }
  });
});

Deno.test("ssh transport: a node that stops answering mid-call is given up on, and the exec is unconfirmed", async () => {
  await withEnv({
    via: "ssh",
    transport: { connectTimeoutSec: 1 },
  }, async (env) => {
    const node = env.ssh!;
    // pvesh sleeps before starting the command; meanwhile the node's whole sshd session freezes.
    await node.setKnobs({ stall: { path: "/agent/exec", ms: 4000 } });
    const running = env.run("guestExec", { vmid: 100, command: ["true"] });
    const deadline = Date.now() + 10000;
    while (
      !(await node.calls()).some((argv) => argv[1].endsWith("/agent/exec"))
    ) {
      assert.ok(Date.now() < deadline, "pvesh was never asked to exec");
      await new Promise((r) => setTimeout(r, 20));
    }
    const frozen = await descendants(node.target.pid);
    const frozenAt = performance.now();
    for (const pid of frozen) Deno.kill(pid, "SIGSTOP");
    let r: RunResult;
    try {
      r = await running;
    } finally {
      for (const pid of frozen) {
        try {
          Deno.kill(pid, "SIGCONT");
        } catch {
          // gone
        }
      }
    }
    const waited = performance.now() - frozenAt;
    assert.equal(r.status, "failed");
    assert.match(
      r.error ?? "",
      /the connection went silent mid-call .*Timeout, server 127\.0\.0\.1 not responding/,
    );
    // Keepalives every connectTimeoutSec=1 s, given up after the first unanswered one.
    assert.ok(waited < 4000, `gave up after ${waited} ms`);
    // The request may have reached the node: it was not sent again, and the record says so.
    const rec = written(r, "vm-100-exec");
    assert.equal(rec.outcome, "unconfirmed");
    assert.equal(
      (await node.calls()).filter((argv) => argv[1].endsWith("/agent/exec"))
        .length,
      1,
    );
  });
});

Deno.test("ssh transport: a jump host that is down is named, with the hop", async () => {
  await withEnv({ via: "ssh-jump" }, async (env) => {
    await env.ssh!.jump!.stop();
    const { r } = await runWith(env, {});
    await assertConnectionFailure(
      env,
      r,
      /\(through proxyJump pve-jump\) failed — connection refused/,
      /kex_exchange_identification: Connection closed by remote host/,
    );
  });
});

Deno.test("ssh transport: a pveshBinary the node cannot run is named", async () => {
  await withEnv({ via: "ssh" }, async (env) => {
    const { r } = await runWith(env, { pveshBinary: "/nonexistent/pvesh" });
    assert.equal(r.status, "failed");
    assert.match(
      r.error ?? "",
      /the node's shell could not run pveshBinary "\/nonexistent\/pvesh" \(exit 127: .*No such file or directory\)/,
    );
  });
});

Deno.test("ssh transport: pvesh's exit code is not trusted, its words are (die with 2 or 255)", async () => {
  for (const dieExitCode of [2, 255]) {
    await withEnv({ via: "ssh" }, async (env) => {
      await env.ssh!.setKnobs({ dieExitCode });
      // The guest "left" pve1 between the cluster listing and the read: PVE's "not on this node".
      env.sim.fault({
        pathRegex: "/qemu/100/status/current$",
        kind: "status",
        status: 500,
        message:
          "Configuration file 'nodes/pve1/qemu-server/100.conf' does not exist",
      });
      const r = await env.run("lookup", { vmid: 100 });
      assert.equal(r.status, "succeeded", `die ${dieExitCode}: ${r.error}`);
      const reads = (await env.ssh!.calls()).filter((argv) =>
        argv[1] === "/nodes/pve1/qemu/100/status/current"
      );
      assert.equal(
        reads.length,
        2,
        "read, found 'not on this node', looked up again",
      );
    });
  }
});

/** Values a shell would love to interpret; each must reach the guest's argv unchanged. */
const HOSTILE = (marker: string) => [
  "it's",
  "''",
  "'",
  'say "hi"',
  '"',
  `$(touch ${marker}-dollar)`,
  `\`touch ${marker}-backtick\``,
  "${HOME}",
  "$HOME",
  "a;b",
  "a|b",
  "a && b || c",
  "a > /tmp/x",
  "two  spaces",
  " leading",
  "trailing ",
  "tab\there",
  "new\nline",
  "carriage\rreturn",
  "ünïcödé ✓ 日本語 🚀",
  "\u00a0nbsp",
  "-n",
  "-",
  "--",
  "--flag=x",
  "--command=injected",
  "back\\slash",
  "\\n",
  "*",
  "?",
  "[a]",
  "~root",
  "{a,b}",
  "!",
  "!!",
  "#not a comment",
  "%s %d %%",
  "=",
  "'; touch /tmp/x; echo '",
];

Deno.test("ssh transport: hostile command items reach the guest byte for byte through the node's shell", async () => {
  await withEnv({ via: "ssh" }, async (env) => {
    const marker = `${env.ssh!.dir}/pwned`;
    const values = HOSTILE(marker);
    const command = ["printf", "%s\\0", ...values];
    const r = await env.run("guestExec", { vmid: 100, command });
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "vm-100-exec");
    assert.deepEqual(rec.command, command);
    assert.deepEqual((rec.stdout as string).split("\0").slice(0, -1), values);
    // pvesh received every item as one `--command=<value>` word, unchanged.
    const exec = (await env.ssh!.calls()).find((argv) =>
      argv[1].endsWith("/agent/exec")
    )!;
    assert.deepEqual(
      exec.filter((w) => w.startsWith("--command=")),
      command.map((c) => `--command=${c}`),
    );
    for (const suffix of ["-dollar", "-backtick"]) {
      await assert.rejects(
        Deno.stat(`${marker}${suffix}`),
        Deno.errors.NotFound,
      );
    }
  });
});

Deno.test("ssh transport: NUL is refused by zod and by the core alike, naming the field; nothing runs", async () => {
  await withEnv({ via: "ssh" }, async (env) => {
    const cases: [Record<string, unknown>, RegExp, string][] = [
      [{ command: ["printf", "a\0b"] }, /command/, "command[1]"],
      [{ command: ["cat"], inputData: "a\0b" }, /inputData/, "inputData"],
    ];
    for (const [extra, zodField, coreField] of cases) {
      const args = { vmid: 100, ...extra };
      const r = await env.run("guestExec", args);
      assert.equal(r.status, "failed");
      assert.match(r.error ?? "", zodField);
      assert.match(r.error ?? "", /NUL/);
      // The core's own rule, without zod in front.
      const core = validateOnCore(PACKAGE, "qemu", "guestExec", {
        ...env.globalArgs,
        ...args,
      });
      assert.match(
        core ?? "",
        new RegExp(`${coreField.replace(/[[\]]/g, "\\$&")}.*NUL`),
      );
      const outcome = await decide(
        "qemu",
        "guestExec",
        { ...env.globalArgs, ...args },
        { logger: { info() {}, error() {} }, ...PACKAGE },
      );
      assert.equal(outcome.verdict.status, "failed");
    }
    const reached = (await env.ssh!.calls()).filter((argv) =>
      argv[1].includes("/agent/")
    );
    assert.deepEqual(reached, [], "no agent call reached the node");
  });
});

Deno.test("ssh transport: 64 KiB of stdin crosses the command line; one too long for it is refused up front", async () => {
  await withEnv({ via: "ssh" }, async (env) => {
    const big = "x".repeat(65536);
    const ok = await env.run("guestExec", {
      vmid: 100,
      command: ["cat"],
      inputData: big,
    });
    assert.equal(ok.status, "succeeded", ok.error);
    assert.equal(written(ok, "vm-100-exec").stdout, big);
    // Each ' becomes '\'' on the command line: 40 000 of them need 160 000 bytes, more than the
    // 131 071 one program argument may hold (over the api transport the same input is fine).
    const quotes = "'".repeat(40000);
    const before = (await env.ssh!.calls()).length;
    const r = await env.run("guestExec", {
      vmid: 100,
      command: ["cat"],
      inputData: quotes,
    });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /limited to 131071 bytes/);
    assert.equal(written(r, "vm-100-exec").outcome, "notStarted");
    const after = await env.ssh!.calls();
    assert.ok(
      !after.slice(before).some((argv) => argv[1].endsWith("/agent/exec")),
      "the exec was never sent",
    );
  });
});
