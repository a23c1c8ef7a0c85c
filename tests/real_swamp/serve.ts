/**
 * `swamp serve` of a test repository, and remote workers dialling into it (`swamp worker
 * connect`): the real CLI's remote execution. The server binds 127.0.0.1 on a free port with
 * `--auth-mode none` (loopback only) and `--no-schedule`; clients reach it with `--server <url>`.
 * A worker runs in its own empty directory (workers are repo-less: the server hands them the
 * bundles) and takes the workflow steps whose `labels` match its own.
 *
 * @module
 */
import { swampBinary, type SwampCli } from "./swamp_cli.ts";

/** A child `swamp …` process whose output is kept. */
class Child {
  private output = "";
  private readonly done: Promise<unknown>;

  constructor(readonly process: Deno.ChildProcess) {
    const keep = async (stream: ReadableStream<Uint8Array>) => {
      for await (const text of stream.pipeThrough(new TextDecoderStream())) {
        this.output += text;
      }
    };
    this.done = Promise.all([
      keep(process.stdout),
      keep(process.stderr),
      process.status,
    ]);
  }

  /** Everything printed so far (stdout and stderr interleaved by arrival). */
  get log(): string {
    return this.output;
  }

  /** SIGTERM (SIGKILL after 15 s), then waits for the exit and the end of its output. */
  async stop(): Promise<void> {
    try {
      this.process.kill("SIGTERM");
    } catch {
      return; // already exited
    }
    const timer = setTimeout(() => {
      try {
        this.process.kill("SIGKILL");
      } catch { /* exited meanwhile */ }
    }, 15_000);
    await this.done;
    clearTimeout(timer);
  }
}

/** A running `swamp serve` of one repository, with the workers connected to it. */
export class SwampServe {
  private readonly workers: { child: Child; dir: string }[] = [];

  private constructor(
    /** The server's WebSocket URL (`--server`). */
    readonly url: string,
    private readonly server: Child,
    private readonly cli: SwampCli,
    private readonly swamp: string,
  ) {}

  /** Starts `swamp serve` in `cli`'s repository (with its environment) and waits until ready. */
  static async start(cli: SwampCli): Promise<SwampServe> {
    const swamp = await swampBinary();
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = listener.addr.port;
    listener.close();
    const server = new Child(
      new Deno.Command(swamp, {
        args: ["serve", "--port", String(port), "--no-schedule", "--no-color"],
        cwd: cli.dir,
        env: { NO_COLOR: "1", ...cli.env },
        stdout: "piped",
        stderr: "piped",
      }).spawn(),
    );
    const serve = new SwampServe(`ws://127.0.0.1:${port}`, server, cli, swamp);
    try {
      await until(async () => {
        const r = await fetch(`http://127.0.0.1:${port}/ready`).catch(() =>
          undefined
        );
        await r?.body?.cancel();
        return r?.ok === true;
      }, `swamp serve ready\n${server.log}`);
    } catch (e) {
      await serve.close();
      throw e;
    }
    return serve;
  }

  /** The server's output so far. */
  get log(): string {
    return this.server.log;
  }

  /**
   * Mints an enrollment token `name` through the server and connects a worker with it, carrying
   * `labels`; resolves once the worker reports it enrolled. Returns the worker's output so far.
   */
  async connectWorker(
    name: string,
    labels: Record<string, string>,
  ): Promise<() => string> {
    const minted = await this.cli.json([
      "worker",
      "token",
      "create",
      name,
      "--duration",
      "1h",
      "--server",
      this.url,
    ]);
    const dir = await Deno.makeTempDir({ prefix: "real-swamp-worker-" });
    const child = new Child(
      new Deno.Command(this.swamp, {
        args: [
          "worker",
          "connect",
          this.url,
          "--token",
          minted.json.token,
          "--cache-dir",
          dir,
          ...Object.entries(labels).flatMap((
            [k, v],
          ) => ["--label", `${k}=${v}`]),
          "--no-color",
        ],
        cwd: dir,
        env: { NO_COLOR: "1", ...this.cli.env },
        stdout: "piped",
        stderr: "piped",
      }).spawn(),
    );
    this.workers.push({ child, dir });
    await until(
      () => Promise.resolve(/Enrolled as/.test(child.log)),
      `worker ${name} enrolled\n${child.log}`,
    );
    return () => child.log;
  }

  /** Stops the workers, then the server. */
  async close(): Promise<void> {
    for (const { child, dir } of this.workers) {
      await child.stop();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
    await this.server.stop();
  }
}

/** Polls `check` every 250 ms for up to 60 s. */
async function until(
  check: () => Promise<boolean>,
  what: string,
): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
