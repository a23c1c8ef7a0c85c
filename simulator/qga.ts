/**
 * A real qemu guest agent (Debian's `qemu-guest-agent`, qemu-ga 7.2) run on this
 * host for tests. Exec, exit codes, signals, captured output and "read a result
 * only once" then come from QEMU's own code instead of from a fake.
 *
 * The agent runs as `qemu-ga -m unix-listen -p <dir>/qga.sock -t <dir>/state`;
 * we hold ONE connection and send one command at a time, like PVE does through
 * the guest's virtio-serial channel.
 *
 * @module
 */

import { LineReader, writeAll } from "./lines.ts";

/** How long stop() lets qemu-ga handle SIGTERM before it sends SIGKILL. */
const TERM_GRACE_MS = 2000;

/** Where Debian installs qemu-ga; tried in order when no binary is given. */
const CANDIDATE_BINARIES = ["/usr/sbin/qemu-ga", "/usr/bin/qemu-ga"];

/** An error reply from the agent: `{"error": {"class": …, "desc": …}}`. */
export class QgaError extends Error {
  /** QGA's error class, e.g. `GenericError`, `CommandNotFound`. */
  readonly qgaClass: string;
  /** QGA's human text, e.g. `Invalid parameter 'pid'`; PVE shows it as `Agent error: <desc>`. */
  readonly desc: string;

  /** @param qgaClass the reply's `class`; @param desc the reply's `desc` */
  constructor(qgaClass: string, desc: string) {
    super(desc);
    this.name = "QgaError";
    this.qgaClass = qgaClass;
    this.desc = desc;
  }
}

/** The agent connection is gone (agent killed or stopped): no reply will come. */
export class QgaClosedError extends Error {
  /** @param message what was lost */
  constructor(message: string) {
    super(message);
    this.name = "QgaClosedError";
  }
}

/** A running qemu-ga process with one persistent, serialised connection. */
export interface GuestAgent {
  /** Host pid of the qemu-ga process. */
  readonly pid: number;
  /** Path of the agent's unix socket. */
  readonly socketPath: string;
  /**
   * Sends one QGA command and resolves to its `return` value. Calls queue up:
   * only one is on the wire at a time. Rejects with QgaError for an error
   * reply, QgaClosedError when the agent is gone.
   */
  call(command: string, args?: Record<string, unknown>): Promise<unknown>;
  /**
   * SIGKILLs the agent process only (a guest agent dying mid-command): commands
   * it started keep running, as they would in a guest. stop() still cleans up.
   */
  kill(): Promise<void>;
  /** Terminates the agent, closes the connection and removes the temp dir. Idempotent. */
  stop(): Promise<void>;
}

/** Options for startGuestAgent. */
export interface GuestAgentOptions {
  /** qemu-ga binary; default: the first of /usr/sbin/qemu-ga, /usr/bin/qemu-ga. */
  binary?: string;
  /** Commands the agent refuses (qemu-ga `-b`), e.g. `["guest-exec"]`. */
  blockRpcs?: string[];
  /** How long to wait for the socket to accept; default 5000 ms. */
  startTimeoutMs?: number;
}

/**
 * Starts qemu-ga in a fresh temp dir and connects to it.
 * Throws (with the `apt-get install` hint) when qemu-ga is not installed.
 */
export async function startGuestAgent(
  opts: GuestAgentOptions = {},
): Promise<GuestAgent> {
  const binary = await findBinary(opts.binary);
  const dir = await Deno.makeTempDir({ prefix: "sim-qga-" });
  const socketPath = `${dir}/qga.sock`;
  const stateDir = `${dir}/state`;
  const logPath = `${dir}/qga.log`;
  // qemu-ga exits at once when its state dir is missing.
  await Deno.mkdir(stateDir);
  const args = [
    "-m",
    "unix-listen",
    "-p",
    socketPath,
    "-t",
    stateDir,
    "-l",
    logPath,
  ];
  if (opts.blockRpcs?.length) args.push("-b", opts.blockRpcs.join(","));
  // stdout/stderr go nowhere: the log goes to a file (-l), and unread pipes
  // would trip Deno's resource sanitizer in tests. detached = own session, so
  // stop() can kill the whole process group, including commands still running
  // under guest-exec.
  const child = new Deno.Command(binary, {
    args,
    stdin: "null",
    stdout: "null",
    stderr: "null",
    detached: true,
  }).spawn();
  let exited = false;
  const status = child.status.then((s) => {
    exited = true;
    return s;
  });
  try {
    const conn = await waitForSocket(
      socketPath,
      () => exited,
      opts.startTimeoutMs ?? 5000,
    );
    return new RealGuestAgent(child, status, dir, socketPath, conn);
  } catch (err) {
    if (!exited) child.kill("SIGKILL");
    await status;
    const log = await Deno.readTextFile(logPath).catch(() => "");
    await Deno.remove(dir, { recursive: true }).catch(() => {});
    throw new Error(
      `qemu-ga did not start: ${(err as Error).message}${
        log ? `\n${log}` : ""
      }`,
    );
  }
}

async function findBinary(explicit?: string): Promise<string> {
  const candidates = explicit ? [explicit] : CANDIDATE_BINARIES;
  for (const path of candidates) {
    try {
      if ((await Deno.stat(path)).isFile) return path;
    } catch {
      // not there: try the next one
    }
  }
  throw new Error(
    `qemu-ga not found (looked at ${candidates.join(", ")}): ` +
      "run `apt-get install qemu-guest-agent` (Debian package, as root)",
  );
}

/** Polls until the agent's socket accepts; the first accepted connection is kept. */
async function waitForSocket(
  path: string,
  exited: () => boolean,
  timeoutMs: number,
): Promise<Deno.UnixConn> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await Deno.connect({ transport: "unix", path });
    } catch (err) {
      // NotFound: socket not created yet; ConnectionRefused: not listening yet.
      if (
        !(err instanceof Deno.errors.NotFound ||
          err instanceof Deno.errors.ConnectionRefused)
      ) {
        throw err;
      }
    }
    if (exited()) throw new Error("qemu-ga exited during startup");
    if (Date.now() > deadline) {
      throw new Error(`socket ${path} did not accept within ${timeoutMs} ms`);
    }
    await new Promise((r) => setTimeout(r, 10));
  }
}

class RealGuestAgent implements GuestAgent {
  readonly pid: number;
  readonly socketPath: string;
  readonly #child: Deno.ChildProcess;
  readonly #status: Promise<Deno.CommandStatus>;
  readonly #dir: string;
  readonly #conn: Deno.UnixConn;
  readonly #reader: LineReader;
  readonly #encoder = new TextEncoder();
  /** Tail of the call queue: each call starts when the previous one settled. */
  #tail: Promise<void> = Promise.resolve();
  #connClosed = false;
  #killed = false;
  #stopped = false;
  /**
   * Safety net for a process that ends without stop(): the agent runs in its
   * own session, so nothing else would end it. Fires on normal exit and
   * Deno.exit (not on an uncaught error or a fatal signal).
   */
  readonly #onUnload = () => {
    try {
      Deno.kill(-this.pid, "SIGKILL");
    } catch {
      // already gone
    }
    try {
      Deno.removeSync(this.#dir, { recursive: true });
    } catch {
      // already gone
    }
  };

  constructor(
    child: Deno.ChildProcess,
    status: Promise<Deno.CommandStatus>,
    dir: string,
    socketPath: string,
    conn: Deno.UnixConn,
  ) {
    this.#child = child;
    this.#status = status;
    this.#dir = dir;
    this.socketPath = socketPath;
    this.#conn = conn;
    this.#reader = new LineReader(conn);
    this.pid = child.pid;
    globalThis.addEventListener("unload", this.#onUnload);
  }

  call(command: string, args?: Record<string, unknown>): Promise<unknown> {
    const run = this.#tail.then(() => this.#roundTrip(command, args));
    this.#tail = run.then(() => {}, () => {});
    return run;
  }

  async #roundTrip(
    command: string,
    args?: Record<string, unknown>,
  ): Promise<unknown> {
    if (this.#connClosed || this.#killed) {
      throw new QgaClosedError(`guest agent is gone (${command} not sent)`);
    }
    const request = args === undefined
      ? { execute: command }
      : { execute: command, arguments: args };
    let line: string | null;
    try {
      await writeAll(
        this.#conn,
        this.#encoder.encode(JSON.stringify(request) + "\n"),
      );
      line = await this.#reader.readLine();
    } catch (err) {
      // A half-done exchange leaves the stream out of step: never reuse it.
      this.#closeConn();
      throw new QgaClosedError(
        `guest agent connection failed during ${command}: ${
          (err as Error).message
        }`,
      );
    }
    if (line === null) {
      this.#closeConn();
      throw new QgaClosedError(
        `guest agent closed the connection during ${command}`,
      );
    }
    const reply = JSON.parse(line) as {
      return?: unknown;
      error?: { class: string; desc: string };
    };
    if (reply.error) throw new QgaError(reply.error.class, reply.error.desc);
    if ("return" in reply) return reply.return;
    throw new Error(`unexpected qemu-ga reply to ${command}: ${line}`);
  }

  async kill(): Promise<void> {
    if (this.#killed || this.#stopped) return;
    this.#killed = true;
    try {
      this.#child.kill("SIGKILL");
    } catch {
      // already gone
    }
    await this.#status;
    this.#closeConn();
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    if (!this.#killed) {
      try {
        this.#child.kill("SIGTERM");
      } catch {
        // already gone
      }
      // qemu-ga (7.2) can deadlock in its own SIGTERM handling — seen as its main thread
      // parked in a futex with SIGTERM blocked, never exiting: give it a moment, then end it.
      let timer: ReturnType<typeof setTimeout> | undefined;
      const exited = await Promise.race([
        this.#status.then(() => true),
        new Promise<false>((resolve) => {
          timer = setTimeout(() => resolve(false), TERM_GRACE_MS);
        }),
      ]);
      clearTimeout(timer);
      if (!exited) {
        try {
          this.#child.kill("SIGKILL");
        } catch {
          // already gone
        }
      }
    }
    await this.#status;
    // Commands started by guest-exec outlive the agent (as in a real guest):
    // end them too so no process escapes the test.
    try {
      Deno.kill(-this.pid, "SIGKILL");
    } catch {
      // no process left in the group
    }
    this.#closeConn();
    // Let a queued call observe the closed connection before we return, so no
    // promise outlives the test.
    await this.#tail;
    await Deno.remove(this.#dir, { recursive: true }).catch(() => {});
    globalThis.removeEventListener("unload", this.#onUnload);
  }

  #closeConn(): void {
    if (this.#connClosed) return;
    this.#connClosed = true;
    try {
      this.#conn.close();
    } catch {
      // already closed
    }
  }
}
