/**
 * The guest agent of a real VM, reached the way PVE reaches it: through the unix socket QEMU
 * serves for the guest's virtio-serial port `org.qemu.guest_agent.0`.
 *
 * Unlike the host-side agent (qga.ts), nothing guarantees anyone listens at the other end: the
 * guest may still be booting, its agent may be down, a reply may belong to an earlier request
 * that timed out. So every call is PVE's exchange (qemu-server `PVE/QMPClient.pm`): connect,
 * send `guest-sync-delimited` with a fresh id followed by the command, skip everything up to the
 * agent's `0xFF` delimiter and the sync reply carrying *that* id (older ids are replies to calls
 * that gave up), then read the command's reply — all within a timeout. One call at a time per VM:
 * QEMU serves one client on the socket.
 *
 * @module
 */

import { LineReader, writeAll } from "./lines.ts";
import { QgaClosedError, QgaError } from "./qga.ts";

/** PVE QMPClient's default timeout for an agent command it has no special value for. */
const DEFAULT_TIMEOUT_MS = 5_000;
/**
 * Commands PVE gives another timeout: guest-ping as qga_check_running sends it
 * (`PVE/QemuServer/Agent.pm`), guest-shutdown 10 min (QMPClient.pm).
 */
const TIMEOUT_MS: Record<string, number> = {
  "guest-ping": 3_000,
  "guest-shutdown": 600_000,
};
/** What QEMU's agent socket looks like after the 0xFF delimiter when decoded as UTF-8. */
const DELIMITER = "\uFFFD";

/** Options of one agent call. */
export interface AgentCallOptions {
  /** How long the whole exchange may take; default PVE's for the command (5 s for most). */
  timeoutMs?: number;
  /**
   * The command does not answer when it succeeds (guest-shutdown): resolve once the agent has
   * confirmed the sync and the connection closed or `noReplyWaitMs` passed without an error.
   */
  noReply?: boolean;
  /** With `noReply`: how long to wait for an error reply; default 1 s. */
  noReplyWaitMs?: number;
}

/** A real VM's agent channel (what the simulator's agent routes call). */
export class VirtioAgent {
  readonly #socketPath: string;
  /** Sync ids grow across calls, so a late reply to a call that gave up is recognisable. */
  #nextId = Math.floor(Date.now() / 1000) * 1000;
  #tail: Promise<void> = Promise.resolve();

  /** @param socketPath the chardev socket QEMU serves for the port */
  constructor(socketPath: string) {
    this.#socketPath = socketPath;
  }

  /**
   * Sends one agent command; resolves to its `return`. Rejects with QgaError for an agent error
   * reply and QgaClosedError when no (matching) reply came in time or the channel is gone.
   */
  call(
    command: string,
    args?: Record<string, unknown>,
    opts: AgentCallOptions = {},
  ): Promise<unknown> {
    const run = this.#tail.then(() => this.#exchange(command, args, opts));
    this.#tail = run.then(() => {}, () => {});
    return run;
  }

  async #exchange(
    command: string,
    args: Record<string, unknown> | undefined,
    opts: AgentCallOptions,
  ): Promise<unknown> {
    const id = ++this.#nextId;
    const timeoutMs = opts.timeoutMs ?? TIMEOUT_MS[command] ??
      DEFAULT_TIMEOUT_MS;
    let conn: Deno.UnixConn;
    try {
      conn = await Deno.connect({ transport: "unix", path: this.#socketPath });
    } catch (err) {
      throw new QgaClosedError(
        `agent socket ${this.#socketPath}: ${(err as Error).message}`,
      );
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    let timedOut = false;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        timedOut = true;
        closeQuietly(conn);
        reject(new QgaClosedError(`${command}: got timeout`));
      }, timeoutMs);
    });
    try {
      return await Promise.race([
        this.#talk(conn, id, command, args, opts),
        deadline,
      ]);
    } catch (err) {
      if (timedOut && !(err instanceof QgaError)) {
        throw new QgaClosedError(`${command}: got timeout`);
      }
      throw err;
    } finally {
      clearTimeout(timer);
      closeQuietly(conn);
    }
  }

  async #talk(
    conn: Deno.UnixConn,
    id: number,
    command: string,
    args: Record<string, unknown> | undefined,
    opts: AgentCallOptions,
  ): Promise<unknown> {
    const request = JSON.stringify({
      execute: "guest-sync-delimited",
      arguments: { id },
    }) + "\n" +
      JSON.stringify(
        args === undefined
          ? { execute: command }
          : { execute: command, arguments: args },
      ) + "\n";
    await writeAll(conn, new TextEncoder().encode(request));
    const reader = new LineReader(conn);
    await awaitSync(reader, id, command);
    const line = opts.noReply
      ? await lineWithin(reader, opts.noReplyWaitMs ?? 1000)
      : await reader.readLine();
    if (line === null) {
      if (opts.noReply) return undefined;
      throw new QgaClosedError(`agent closed the channel during ${command}`);
    }
    const reply = JSON.parse(line) as {
      return?: unknown;
      error?: { class: string; desc: string };
    };
    if (reply.error) throw new QgaError(reply.error.class, reply.error.desc);
    return reply.return;
  }
}

/** Reads until the agent's delimited sync reply for `id`; stale replies are skipped. */
async function awaitSync(
  reader: LineReader,
  id: number,
  command: string,
): Promise<void> {
  for (;;) {
    const line = await reader.readLine();
    if (line === null) {
      throw new QgaClosedError(`agent channel closed before ${command}`);
    }
    const at = line.lastIndexOf(DELIMITER);
    if (at < 0) continue; // a reply to an earlier, abandoned call
    let synced: unknown;
    try {
      synced = (JSON.parse(line.slice(at + 1)) as { return?: unknown }).return;
    } catch {
      continue;
    }
    if (synced === id) return;
  }
}

/** The next line, or null when none came within `ms` (or the channel closed). */
async function lineWithin(
  reader: LineReader,
  ms: number,
): Promise<string | null> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      reader.readLine().catch(() => null),
      new Promise<null>((resolve) => {
        timer = setTimeout(() => resolve(null), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

function closeQuietly(conn: Deno.UnixConn): void {
  try {
    conn.close();
  } catch {
    // already closed
  }
}
