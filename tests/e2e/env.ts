/**
 * The end-to-end fixture: a real qemu guest agent, the PVE simulator in front of it, and a swamp-like
 * repository running the package's model. Every end-to-end test goes through it.
 *
 * @module
 */
import { model as qemuModel } from "../../js/proxmox_qemu.ts";
import { SwampRepo } from "../../harness/swamp.ts";
import type { RunOptions, RunResult } from "../../harness/swamp.ts";
import type {
  Definition,
  ModelLike,
  StoredVersionLike,
} from "../../harness/types.ts";
import { type GuestAgent, startGuestAgent } from "../../simulator/qga.ts";
import { type Simulator, startSimulator } from "../../simulator/simulator.ts";
import { demoGuests } from "../../simulator/demo_cluster.ts";
import type { SimGuest, SimOptions } from "../../simulator/types.ts";
import { PVESH_TOKEN, type SshNode, startSshNode } from "../ssh/node.ts";
import { PACKAGE_FILES } from "../../harness/project_package.ts";

/** The token the fixture's package uses; recognisable, so leak scans can look for it. */
export const TOKEN_ID = "root@pam!swamp";
export const TOKEN_SECRET = "SECRET-7f3a9c-do-not-leak";

/** A running fixture. */
export interface Env {
  sim: Simulator;
  agent: GuestAgent;
  repo: SwampRepo;
  globalArgs: Record<string, unknown>;
  /** The node's sshd(s) and pvesh fixture, when the package reaches the simulator over ssh. */
  ssh?: SshNode;
  run(
    method: string,
    args?: Record<string, unknown>,
    opts?: RunOptions,
  ): Promise<RunResult>;
  close(): Promise<void>;
}

/** Options of {@link startEnv}. */
export interface EnvOptions {
  guests?: SimGuest[];
  /** VMIDs the package's token may not audit. Default: 150. */
  denyVmids?: number[];
  sim?: Partial<SimOptions>;
  globalArgs?: Record<string, unknown>;
  /** Fields merged into the transport (e.g. `caCert`, `skipTlsVerify`; `connectTimeoutSec`). */
  transport?: Record<string, unknown>;
  /**
   * How the package reaches the simulator: `api` (default, HTTP); `ssh`: its ssh transport to a real
   * loopback sshd whose pvesh is tests/ssh/pvesh.py; `ssh-jump`: the same through a second sshd as
   * proxyJump.
   */
  via?: "api" | "ssh" | "ssh-jump";
  /** The model under test; default the qemu model. */
  model?: ModelLike;
  /**
   * The definition the repository holds, given the simulator's URL and the token secret (e.g. one
   * read from a repository's files); default `fleet` over the transport `via` names.
   */
  definition?: (
    endpoint: { apiUrl: string; tokenSecret: string },
  ) => Definition;
  /** Records the repository's data store holds before the first run. */
  data?: readonly StoredVersionLike[];
  /** `false`: methods get no `ctx.createFileWriter`, as in a swamp that predates file outputs. */
  fileWriters?: boolean;
}

/** Starts qemu-ga, the simulator and a repository holding one qemu model definition. */
export async function startEnv(options: EnvOptions = {}): Promise<Env> {
  const agent = await startGuestAgent();
  let sim: Simulator;
  try {
    sim = await startSimulator({
      nodes: ["pve1", "pve2"],
      guests: options.guests ?? demoGuests(),
      tokens: [{
        id: TOKEN_ID,
        secret: TOKEN_SECRET,
        denyVmids: options.denyVmids ?? [150],
      }, ...(options.via?.startsWith("ssh") ? [PVESH_TOKEN] : [])],
      agent,
      // The package's requests: counted by the conformance layer.
      conformance: true,
      ...options.sim,
    });
  } catch (error) {
    await agent.stop();
    throw error;
  }
  let ssh: SshNode | undefined;
  if (options.via?.startsWith("ssh")) {
    try {
      ssh = await startSshNode(sim.url, { jump: options.via === "ssh-jump" });
    } catch (error) {
      await sim.close();
      await agent.stop();
      throw error;
    }
  }
  let repo: SwampRepo;
  let globalArgs: Record<string, unknown>;
  try {
    ({ repo, globalArgs } = makeRepo(options, sim, ssh));
  } catch (error) {
    await ssh?.close();
    await sim.close();
    await agent.stop();
    throw error;
  }
  return {
    sim,
    agent,
    repo,
    globalArgs,
    ssh,
    run: async (method, args, opts) => {
      const result = await repo.run(method, args, opts);
      assertNoSecret(`run of ${method}`, result);
      return result;
    },
    close: async () => {
      await ssh?.close();
      await sim.close();
      await agent.stop();
      assertNoSecret("the simulator's request log", sim.requests);
    },
  };
}

/** The repository of {@link startEnv}: the definition options name, or `fleet`, and its records. */
function makeRepo(options: EnvOptions, sim: Simulator, ssh?: SshNode) {
  const definition = options.definition?.({
    apiUrl: sim.url,
    tokenSecret: TOKEN_SECRET,
  });
  const globalArgs = definition?.globalArgs ?? {
    name: "fleet",
    transport: ssh ? ssh.transport(options.transport) : {
      kind: "api",
      node: "pve1",
      apiUrl: sim.url,
      tokenId: TOKEN_ID,
      tokenSecret: TOKEN_SECRET,
      ...options.transport,
    },
    pollIntervalSec: 1,
    ...options.globalArgs,
  };
  const repo = new SwampRepo(
    options.model ?? qemuModel,
    definition ?? { name: "fleet", globalArgs },
    {
      vault: true,
      extensionFiles: PACKAGE_FILES,
      data: options.data,
      fileWriters: options.fileWriters,
    },
  );
  return { repo, globalArgs };
}

/**
 * Whether a request (by its path) is one of swamp's pre-flight checks', which run before a mutating
 * method parses its arguments: `transport-reachable`'s `GET /version`, `permissions`'
 * `GET /access/permissions`.
 */
export function isCheckRequest(path: string): boolean {
  return path === "/api2/json/version" ||
    path === "/api2/json/access/permissions";
}

/** Runs `body` with a fresh fixture, closing it whatever happens. */
export async function withEnv(
  options: EnvOptions,
  body: (env: Env) => Promise<void>,
): Promise<void> {
  const env = await startEnv(options);
  try {
    await body(env);
  } finally {
    await env.close();
  }
}

/** The data of the last record this run wrote under `instance`. */
export function written(
  result: RunResult,
  instance: string,
): Record<string, unknown> {
  const found = result.written.filter((w) => w.instance === instance).at(-1);
  if (!found) {
    throw new Error(
      `run of ${result.method} wrote no ${instance} (wrote: ${
        result.written.map((w) => w.instance).join(", ") || "nothing"
      })`,
    );
  }
  return found.data as Record<string, unknown>;
}

/**
 * Every end-to-end run is scanned for the token secret: records, log lines, errors, console output
 * and (at close) the simulator's request log, which holds paths, queries and form bodies but never
 * the Authorization header. Any occurrence fails the test that caused it.
 */
export function assertNoSecret(where: string, value: unknown): void {
  const text = JSON.stringify(value);
  if (text.includes(TOKEN_SECRET)) {
    const at = text.indexOf(TOKEN_SECRET);
    throw new Error(
      `the token secret leaked into ${where}: …${
        text.slice(Math.max(0, at - 120), at)
      }<SECRET>…`,
    );
  }
}
