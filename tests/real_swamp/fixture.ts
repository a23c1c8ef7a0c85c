/**
 * The real-swamp fixture: a real qemu guest agent, the PVE simulator in front of it, and a fresh
 * swamp repository (the real CLI) with a package installed — copied in as a local extension, or
 * pushed to a fake registry and pulled back — and a model definition `fleet` created through
 * `swamp model create`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { type GuestAgent, startGuestAgent } from "../../simulator/qga.ts";
import { type Simulator, startSimulator } from "../../simulator/simulator.ts";
import { DEMO_NODES, demoGuests } from "../../simulator/demo_cluster.ts";
import type { SimGuest, SimOptions, SimToken } from "../../simulator/types.ts";
import { apiGlobalArgs, PROJECT_ROOT, SwampCli } from "./swamp_cli.ts";
import { PublishedPackage } from "./registry.ts";

/** This package, as it ships (js/ after ./build.sh). */
export const OUR_PACKAGE = join(PROJECT_ROOT, "js");

/** The token the definitions use. */
export const TOKEN = { id: "root@pam!swamp", secret: "SECRET-real-swamp-4b1e" };

/** A running real-swamp fixture. */
export interface RealSwamp {
  sim: Simulator;
  agent: GuestAgent;
  cli: SwampCli;
  /** The registry the package was pulled from (`install: "pull"`). */
  published?: PublishedPackage;
  /** `--global-arg` flags of a definition named `name` reaching the simulator. */
  globalArgs(name: string, extra?: Record<string, string | number>): string[];
}

/** Options of {@link withRealSwamp}. */
export interface RealSwampOptions {
  guests?: SimGuest[];
  /** The package installed first (default: ours). */
  packageDir?: string;
  /**
   * How the package reaches the repository: copied into `extensions/` as a local extension
   * ("local", the default), or published by `swamp extension push` to a fake registry and
   * installed by `swamp extension pull` ("pull"; it then lives in `.swamp/pulled-extensions/`).
   */
  install?: "local" | "pull";
  /** The model type of the `fleet` definition; none is created when null. */
  type?: string | null;
  /** Extra global arguments of the `fleet` definition. */
  fleetArgs?: Record<string, string | number>;
  /** Simulator options over the fixture's (e.g. a node's capacity, task lengths). */
  sim?: Partial<SimOptions>;
  /** Tokens the simulator accepts besides the definitions' (e.g. an ssh node's pvesh). */
  tokens?: SimToken[];
}

/** Runs `body` against a fresh fixture, closing everything whatever happens. */
export async function withRealSwamp(
  options: RealSwampOptions,
  body: (env: RealSwamp) => Promise<void>,
): Promise<void> {
  const agent = await startGuestAgent();
  let sim: Simulator | undefined;
  let cli: SwampCli | undefined;
  let published: PublishedPackage | undefined;
  try {
    sim = await startSimulator({
      nodes: DEMO_NODES,
      guests: options.guests ?? demoGuests(),
      tokens: [TOKEN, ...(options.tokens ?? [])],
      agent,
      ...options.sim,
    });
    cli = await SwampCli.init();
    const packageDir = options.packageDir ?? OUR_PACKAGE;
    if (options.install === "pull") {
      published = await PublishedPackage.push(packageDir);
      await published.pullInto(cli);
    } else {
      await cli.install(packageDir);
    }
    const url = sim.url;
    const globalArgs = (name: string, extra = {}) =>
      apiGlobalArgs(name, url, TOKEN, extra);
    const type = options.type === undefined
      ? "@stateless/proxmox/qemu"
      : options.type;
    if (type !== null) {
      await cli.json([
        "model",
        "create",
        type,
        "fleet",
        ...globalArgs("fleet", options.fleetArgs),
      ]);
    }
    await body({ sim, agent, cli, published, globalArgs });
  } finally {
    await cli?.close();
    await published?.close();
    await sim?.close();
    await agent.stop();
  }
}

/** `swamp model method run <definition> <method> --input …` with `--json`, expecting exit `expect`. */
export function runMethod(
  env: RealSwamp,
  method: string,
  args: Record<string, unknown> = {},
  expect = 0,
  definition = "fleet",
) {
  return env.cli.json(
    ["model", "method", "run", definition, method, ...inputs(args)],
    expect,
  );
}

/**
 * `lookup` of the demo cluster's VM 100 through the real CLI: it must succeed and store the live
 * state (running, present, named `web`) as `vm-100`.
 */
export async function assertLookupStoresVm100(env: RealSwamp): Promise<void> {
  const r = await runMethod(env, "lookup", { vmid: 100 });
  assert.equal(r.json.status, "succeeded");
  const record = r.json.dataArtifacts.find((a: { name: string }) =>
    a.name === "vm-100"
  );
  assert.equal(record.attributes.status, "running");
  assert.equal(record.attributes.present, true);
  assert.equal(record.attributes.name, "web");
}

/** `--input` flags from an object (non-strings as JSON, as swamp parses them). */
export function inputs(values: Record<string, unknown>): string[] {
  return Object.entries(values).flatMap(([k, v]) => [
    "--input",
    `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`,
  ]);
}

/** A guest beside the demo cluster (stopped, tagged swamp, on pve1). */
export function extraGuest(over: Partial<SimGuest>): SimGuest {
  return {
    vmid: 120,
    node: "pve1",
    type: "qemu",
    name: "extra",
    status: "stopped",
    agent: "running",
    tags: ["swamp"],
    config: { smbios1: "uuid=00000000-0000-4000-8000-000000000120" },
    ...over,
  };
}
