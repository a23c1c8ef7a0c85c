/**
 * A real OpenSSH server (Debian's `openssh-server`, sshd 9.2) on loopback for tests: the ssh transport
 * then meets OpenSSH's own key exchange, host key checks, authentication and error texts instead of a
 * fake.
 *
 * Each server runs as `sshd -D -f <generated config> -E <log>` on 127.0.0.1 and a free port, with a
 * freshly generated host key and a throwaway client key (the only authorized key), `UsePAM no`,
 * `StrictModes no` and its PidFile in its own temp dir. It is stopped by its pid. sshd needs root
 * (privilege separation) and `/run/sshd`, which is created when missing.
 *
 * @module
 */

/** Where Debian installs the daemon; tried in order when no binary is given. */
const CANDIDATE_BINARIES = ["/usr/sbin/sshd", "/usr/bin/sshd"];

/** A running sshd. */
export interface Sshd {
  /** The listening daemon's pid (each connection is served by its descendants). */
  readonly pid: number;
  /** The TCP port on 127.0.0.1. */
  readonly port: number;
  /** The server's public host key, `ssh-ed25519 AAAA…` (type and key, no comment). */
  readonly hostKeyPub: string;
  /** Path of the client's private key (the only key the server accepts). */
  readonly clientKey: string;
  /** Path of a known_hosts file holding exactly this server's host key for `[127.0.0.1]:<port>`. */
  readonly knownHosts: string;
  /** The server's temp dir (config, keys, log); removed by stop(). */
  readonly dir: string;
  /** sshd's log so far (`-E`, LogLevel VERBOSE: accepted keys, sessions, refusals). */
  log(): string;
  /** Stops the server (SIGTERM to its pid, then waits for it) and removes its dir. Idempotent. */
  stop(): Promise<void>;
}

/** Options for {@link startSshd}. */
export interface SshdOptions {
  /** sshd binary; default: the first of /usr/sbin/sshd, /usr/bin/sshd. */
  binary?: string;
  /** Extra `sshd_config` lines (e.g. `SetEnv FOO=bar`). */
  extraConfig?: string[];
  /** How long to wait for "Server listening"; default 5000 ms. */
  startTimeoutMs?: number;
}

/** Generates an ed25519 key pair without passphrase at `path` (+ `.pub`); returns the public line. */
export async function generateKey(
  path: string,
  comment = "swamp-test",
): Promise<string> {
  const out = await new Deno.Command("ssh-keygen", {
    args: ["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", path],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(
      `ssh-keygen failed: ${new TextDecoder().decode(out.stderr).trim()} ` +
        "(install Debian's openssh-client: apt-get install openssh-client)",
    );
  }
  // Private keys must not be group/world readable, or ssh refuses to use them.
  await Deno.chmod(path, 0o600);
  const pub = (await Deno.readTextFile(`${path}.pub`)).trim().split(/\s+/);
  return `${pub[0]} ${pub[1]}`;
}

/** A known_hosts line for a server on 127.0.0.1:`port` (ssh's `[host]:port` form). */
export function knownHostsLine(port: number, hostKeyPub: string): string {
  return `[127.0.0.1]:${port} ${hostKeyPub}`;
}

/** A port on 127.0.0.1 that nothing listens on right now. */
export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

async function findBinary(given?: string): Promise<string> {
  for (const candidate of given ? [given] : CANDIDATE_BINARIES) {
    try {
      if ((await Deno.stat(candidate)).isFile) return candidate;
    } catch {
      // try the next one
    }
  }
  throw new Error(
    "sshd not found: install Debian's openssh-server (apt-get install openssh-server; " +
      "scripts/tools.sh ensure_test_services does it)",
  );
}

function configText(dir: string, port: number, extra: string[]): string {
  return [
    "ListenAddress 127.0.0.1",
    `Port ${port}`,
    `HostKey ${dir}/host_key`,
    `AuthorizedKeysFile ${dir}/authorized_keys`,
    `PidFile ${dir}/sshd.pid`,
    "UsePAM no",
    "StrictModes no",
    "PubkeyAuthentication yes",
    "PasswordAuthentication no",
    "KbdInteractiveAuthentication no",
    "PermitRootLogin prohibit-password",
    "AllowTcpForwarding yes",
    "UseDNS no",
    "LogLevel VERBOSE",
    ...extra,
    "",
  ].join("\n");
}

/** Starts sshd on 127.0.0.1 and a free port; retries once with another port if that one was taken. */
export async function startSshd(opts: SshdOptions = {}): Promise<Sshd> {
  const binary = await findBinary(opts.binary);
  // Privilege separation needs this directory; Debian creates it only when the service starts.
  await Deno.mkdir("/run/sshd", { recursive: true, mode: 0o755 });
  const dir = await Deno.makeTempDir({ prefix: "swamp-sshd-" });
  try {
    const hostKeyPub = await generateKey(`${dir}/host_key`, "swamp-test-host");
    const clientPub = await generateKey(
      `${dir}/client_key`,
      "swamp-test-client",
    );
    await Deno.writeTextFile(`${dir}/authorized_keys`, `${clientPub}\n`);
    let lastError: unknown;
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        return await launch(binary, dir, hostKeyPub, opts);
      } catch (error) {
        lastError = error;
        if (!(error instanceof PortTaken)) break;
      }
    }
    throw lastError;
  } catch (error) {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
    throw error;
  }
}

class PortTaken extends Error {}

async function launch(
  binary: string,
  dir: string,
  hostKeyPub: string,
  opts: SshdOptions,
): Promise<Sshd> {
  const port = freePort();
  const configPath = `${dir}/sshd_config`;
  const logPath = `${dir}/sshd.log`;
  await Deno.writeTextFile(
    configPath,
    configText(dir, port, opts.extraConfig ?? []),
  );
  await Deno.writeTextFile(logPath, "");
  const knownHosts = `${dir}/known_hosts`;
  await Deno.writeTextFile(knownHosts, `${knownHostsLine(port, hostKeyPub)}\n`);
  // -D: stay in the foreground, so the spawned pid IS the listening daemon; -E: log to a file.
  const child = new Deno.Command(binary, {
    args: ["-D", "-f", configPath, "-E", logPath],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const stderr = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  let stderrText = "";
  const drained = (async () => {
    for (;;) {
      const { value, done } = await stderr.read();
      if (done) return;
      stderrText += value;
    }
  })();
  let exited = false;
  const status = child.status.then((s) => {
    exited = true;
    return s;
  });
  const readLog = () => {
    try {
      return Deno.readTextFileSync(logPath);
    } catch {
      return "";
    }
  };
  const deadline = Date.now() + (opts.startTimeoutMs ?? 5000);
  while (!readLog().includes(`Server listening on 127.0.0.1 port ${port}`)) {
    if (exited || Date.now() > deadline) {
      if (!exited) child.kill("SIGKILL");
      await status;
      await drained;
      const said = `${readLog()}${stderrText}`.trim();
      if (/Address already in use/i.test(said)) throw new PortTaken(said);
      throw new Error(
        `sshd did not start on 127.0.0.1:${port}: ${said || "(no output)"}`,
      );
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  let stopping: Promise<void> | undefined;
  return {
    pid: child.pid,
    port,
    hostKeyPub,
    clientKey: `${dir}/client_key`,
    knownHosts,
    dir,
    log: readLog,
    stop: () => {
      stopping ??= (async () => {
        if (!exited) {
          try {
            // By its pid: SIGTERM to the listener only (sessions still open end on their own).
            Deno.kill(child.pid, "SIGTERM");
          } catch {
            // already gone
          }
        }
        await status;
        await drained;
        await Deno.remove(dir, { recursive: true }).catch(() => {});
      })();
      return stopping;
    },
  };
}
