/**
 * A PVE "node" reached over real ssh: a loopback sshd (optionally behind a second sshd used as the
 * ProxyJump hop) whose `pvesh` is the fixture in pvesh.py, answering from the PVE simulator.
 *
 * The package's ssh transport is used as a user would: `identityFile`, `port`,
 * `strictHostKeyChecking: "yes"`, `connectTimeoutSec` and `proxyJump` are its own arguments. What a user
 * keeps in `~/.ssh/config` and `~/.ssh/known_hosts` lives in a generated client config instead,
 * handed to ssh by a two-line `sshBinary` wrapper (`exec ssh -F <config> "$@"`): ssh reads those files
 * from the passwd home directory, not from $HOME, so a generated config file is the only honest way
 * to point a test's ssh at its own known_hosts. ssh hands `-F` on to the ProxyJump hop's ssh (the
 * `-o` options of the transport are not handed on, exactly as in real use), so the jump host's key
 * and known_hosts entry are in that config under the alias `pve-jump`.
 *
 * @module
 */

import { generateKey, knownHostsLine, type Sshd, startSshd } from "./sshd.ts";

/** The simulator token the node-side pvesh uses: pvesh runs as root@pam, so it has no denies. */
export const PVESH_TOKEN = {
  id: "root@pam!pvesh-node",
  secret: "pvesh-node-fixture-secret",
  pvesh: true,
};

/** The ssh alias of the jump host in the generated client config. */
export const JUMP_ALIAS = "pve-jump";

const PVESH_SCRIPT = new URL("./pvesh.py", import.meta.url).pathname;
const PCT_SCRIPT = new URL("./pct.py", import.meta.url).pathname;
const PYTHON_CANDIDATES = ["/usr/bin/python3", "/usr/local/bin/python3"];
const SSH_CANDIDATES = ["/usr/bin/ssh", "/usr/local/bin/ssh"];

/** Options of {@link startSshNode}. */
export interface SshNodeOptions {
  /** Put a second sshd in front as the ProxyJump hop. */
  jump?: boolean;
  /** The token the node-side pvesh presents to the simulator; default {@link PVESH_TOKEN}. */
  token?: { id: string; secret: string };
}

/** A running ssh node. */
export interface SshNode {
  /** The sshd the transport's `host`/`port` name. */
  readonly target: Sshd;
  /** The ProxyJump hop, when asked for. */
  readonly jump?: Sshd;
  /** The fixture's temp dir (client config, wrappers, pvesh state). */
  readonly dir: string;
  /** The `sshBinary` wrapper. */
  readonly sshBinary: string;
  /** The `pveshBinary` wrapper (runs pvesh.py against the simulator). */
  readonly pveshBinary: string;
  /** The `pctBinary` wrapper (runs pct.py: `pct exec` of containers on pve1, really running the command). */
  readonly pctBinary: string;
  /** The known_hosts file the client config names (target and jump keys). */
  readonly knownHosts: string;
  /** The user the transport logs in as. */
  readonly user: string;
  /** The package's `transport` argument for this node, with `extra` fields merged over it. */
  transport(extra?: Record<string, unknown>): Record<string, unknown>;
  /** The argv of every pvesh invocation so far, exactly as the node received it. */
  calls(): Promise<string[][]>;
  /** The argv (after `pct`) of every pct invocation so far, exactly as the node received it. */
  pctCalls(): Promise<string[][]>;
  /** Sets pvesh's knobs (e.g. `{dieExitCode: 2}`) for the following invocations. */
  setKnobs(knobs: Record<string, unknown>): Promise<void>;
  /** Stops the sshds and removes every temp dir. Idempotent. */
  close(): Promise<void>;
}

async function firstExisting(
  candidates: string[],
  hint: string,
): Promise<string> {
  for (const candidate of candidates) {
    try {
      if ((await Deno.stat(candidate)).isFile) return candidate;
    } catch {
      // next
    }
  }
  throw new Error(`none of ${candidates.join(", ")} exists: ${hint}`);
}

/** A POSIX single-quoted word, for the generated wrapper scripts. */
function sq(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

async function writeScript(path: string, lines: string[]): Promise<void> {
  await Deno.writeTextFile(path, ["#!/bin/sh", ...lines, ""].join("\n"));
  await Deno.chmod(path, 0o755);
}

/** Starts the node's sshd (and jump sshd) and writes the client config and the two wrappers. */
export async function startSshNode(
  simUrl: string,
  opts: SshNodeOptions = {},
): Promise<SshNode> {
  const python = await firstExisting(
    PYTHON_CANDIDATES,
    "install Debian's python3 (scripts/tools.sh does)",
  );
  const ssh = await firstExisting(
    SSH_CANDIDATES,
    "install Debian's openssh-client (scripts/tools.sh does)",
  );
  const token = opts.token ?? PVESH_TOKEN;
  const dir = await Deno.makeTempDir({ prefix: "swamp-ssh-node-" });
  const started: Sshd[] = [];
  try {
    const target = await startSshd();
    started.push(target);
    const jump = opts.jump ? await startSshd() : undefined;
    if (jump) started.push(jump);
    const user = Deno.uid() === 0 ? "root" : (Deno.env.get("USER") ?? "root");

    const knownHosts = `${dir}/known_hosts`;
    await Deno.writeTextFile(
      knownHosts,
      [target, ...(jump ? [jump] : [])].map((s) =>
        knownHostsLine(s.port, s.hostKeyPub) + "\n"
      ).join(""),
    );
    const clientConfig = `${dir}/ssh_config`;
    await Deno.writeTextFile(
      clientConfig,
      [
        ...(jump
          ? [
            `Host ${JUMP_ALIAS}`,
            "  HostName 127.0.0.1",
            `  Port ${jump.port}`,
            `  User ${user}`,
            `  IdentityFile ${jump.clientKey}`,
          ]
          : []),
        "Host *",
        `  UserKnownHostsFile ${knownHosts}`,
        "  GlobalKnownHostsFile /dev/null",
        // Only the keys named (identityFile, the jump's key): a developer's own keys stay out.
        "  IdentitiesOnly yes",
        "",
      ].join("\n"),
    );
    const sshBinary = `${dir}/ssh`;
    await writeScript(sshBinary, [
      `exec ${sq(ssh)} -F ${sq(clientConfig)} "$@"`,
    ]);

    const state = `${dir}/pvesh-state`;
    await Deno.mkdir(state);
    const pveshBinary = `${dir}/pvesh`;
    await writeScript(pveshBinary, [
      `PVESH_SIM_URL=${sq(simUrl)}`,
      `PVESH_SIM_TOKEN=${sq(`${token.id}=${token.secret}`)}`,
      `PVESH_STATE_DIR=${sq(state)}`,
      "export PVESH_SIM_URL PVESH_SIM_TOKEN PVESH_STATE_DIR",
      // -I -S: no user site, no site module, no PYTHON* variables: a fast, predictable start.
      `exec ${sq(python)} -I -S ${sq(PVESH_SCRIPT)} "$@"`,
    ]);

    const pctBinary = `${dir}/pct`;
    await writeScript(pctBinary, [
      `PVESH_SIM_URL=${sq(simUrl)}`,
      `PVESH_SIM_TOKEN=${sq(`${token.id}=${token.secret}`)}`,
      `PVESH_STATE_DIR=${sq(state)}`,
      "PCT_NODE=pve1",
      "export PVESH_SIM_URL PVESH_SIM_TOKEN PVESH_STATE_DIR PCT_NODE",
      `exec ${sq(python)} -I -S ${sq(PCT_SCRIPT)} "$@"`,
    ]);

    let closing: Promise<void> | undefined;
    return {
      target,
      jump,
      dir,
      sshBinary,
      pveshBinary,
      pctBinary,
      knownHosts,
      user,
      transport: (extra = {}) => ({
        kind: "ssh",
        node: "pve1",
        host: "127.0.0.1",
        user,
        port: target.port,
        identityFile: target.clientKey,
        strictHostKeyChecking: "yes",
        connectTimeoutSec: 5,
        sshBinary,
        pveshBinary,
        pctBinary,
        ...(jump ? { proxyJump: JUMP_ALIAS } : {}),
        ...extra,
      }),
      calls: async () => {
        let text = "";
        try {
          text = await Deno.readTextFile(`${state}/calls.jsonl`);
        } catch {
          return [];
        }
        return text.split("\n").filter((l) => l !== "").map((l) =>
          (JSON.parse(l) as { argv: string[] }).argv
        );
      },
      pctCalls: async () => {
        const text = await Deno.readTextFile(`${state}/pct-calls.jsonl`).catch(
          () => "",
        );
        return text.split("\n").filter((l) => l !== "").map((l) =>
          (JSON.parse(l) as { argv: string[] }).argv
        );
      },
      setKnobs: (knobs) =>
        Deno.writeTextFile(`${state}/knobs.json`, JSON.stringify(knobs)),
      close: () => {
        closing ??= (async () => {
          await Promise.all(started.map((s) => s.stop()));
          await Deno.remove(dir, { recursive: true }).catch(() => {});
        })();
        return closing;
      },
    };
  } catch (error) {
    await Promise.all(started.map((s) => s.stop()));
    await Deno.remove(dir, { recursive: true }).catch(() => {});
    throw error;
  }
}

/** A fresh key no server accepts (for authentication-failure tests). */
export async function strangerKey(dir: string): Promise<string> {
  const path = `${dir}/stranger_key`;
  await generateKey(path, "swamp-test-stranger");
  return path;
}
