/**
 * Runs a command on an {@link SshNode} the way the package's ssh transport does: real `ssh` with the
 * transport's options, the remote command as ONE string of single-quoted words, argv only (no local
 * shell). For tests of the node side itself (pvesh, sshd), without the package in between.
 *
 * @module
 */

import type { SshNode } from "./node.ts";

/** What came back from one ssh run. */
export interface RemoteResult {
  code: number;
  stdout: string;
  stderr: string;
  ms: number;
}

/** POSIX single quoting, as the core does it (`'` → `'\''`). */
export function singleQuote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

/** Runs `words` (each single-quoted) on the node through ssh; `pvesh` as the first word means the fixture. */
export async function remote(
  node: SshNode,
  words: string[],
  transport: Record<string, unknown> = {},
): Promise<RemoteResult> {
  const t = node.transport(transport);
  const command = words.map((w, i) =>
    singleQuote(i === 0 && w === "pvesh" ? node.pveshBinary : w)
  ).join(" ");
  const args = [
    "-o",
    "BatchMode=yes",
    "-o",
    `ConnectTimeout=${t.connectTimeoutSec}`,
    "-o",
    `IdentityFile=${t.identityFile}`,
    "-o",
    `StrictHostKeyChecking=${t.strictHostKeyChecking}`,
    ...(t.proxyJump ? ["-o", `ProxyJump=${t.proxyJump}`] : []),
    "-p",
    String(t.port),
    "-l",
    String(t.user),
    "--",
    String(t.host),
    command,
  ];
  const started = performance.now();
  const out = await new Deno.Command(String(t.sshBinary), {
    args,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  return {
    code: out.code,
    stdout: decoder.decode(out.stdout),
    stderr: decoder.decode(out.stderr),
    ms: performance.now() - started,
  };
}
