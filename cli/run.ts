/**
 * The main job: runs a method of the package the way `swamp model method run <method> --input k=v …`
 * does — through the swamp-faithful harness — and prints the outcome as swamp would.
 *
 * - Against a real PVE when one is configured (flags, or PVE_API_URL, PVE_NODE, PVE_TOKEN_ID,
 *   PVE_TOKEN_SECRET, PVE_CA_CERT_FILE in the environment).
 * - Otherwise against the embedded default: the PVE simulator in front of a real qemu guest agent.
 * - With no method, runs a demo on the embedded default (cli/demos.ts) and exits 0 when each
 *   verdict is the one the contract requires. Where this machine can run a real QEMU guest
 *   (scripts/guest_image.sh builds the image): `provision` (the default) downloads a cloud image
 *   served from this process, creates VM 120 from it, boots it, waits for its agent, runs `cat` of
 *   the image's marker (its stdout must be the marker) and `exit 42` inside it, and stops it;
 *   `real-guest` does the same on the existing VM 110 without the download and create. Otherwise
 *   it says why and falls back to VM 100, answered by this host's qemu-ga: lookup, guestExec 0
 *   and 42.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { model as lxcModel } from "../js/proxmox_lxc.ts";
import { model as qemuModel } from "../js/proxmox_qemu.ts";
import { formatRun, type RunResult, SwampRepo } from "../harness/swamp.ts";
import {
  DEMO_NODES,
  demoGuests,
  REAL_DEMO_VMID,
  realDemoGuest,
} from "../simulator/demo_cluster.ts";
import { ensureGuestImage } from "../simulator/guest_image.ts";
import { serveCloudImage } from "../simulator/cloud_image.ts";
import { defaultStorages } from "../simulator/storage.ts";
import type { SimStorage } from "../simulator/node_types.ts";
import {
  type DemoStep,
  hostAgentSteps,
  provisionSteps,
  realGuestSteps,
  recordedStdout,
} from "./demos.ts";
import type { RealGuestOptions } from "../simulator/real_guests.ts";
import { startGuestAgent } from "../simulator/qga.ts";
import { startSimulator } from "../simulator/simulator.ts";
import { PACKAGE_FILES } from "../harness/project_package.ts";
import { parseInputPairs } from "../harness/cli_inputs.ts";

const USAGE =
  `usage: run.sh [<method>] [--model qemu|lxc] [--input key=value]… [--json]
            [--api-url URL --node NODE --token-id ID --token-secret SECRET [--ca-cert-file PEM]]
  no <method>, or provision: on the embedded simulator, a cloud image downloaded (downloadUrl), VM 120
               created from it (create), started, waitReady, guestExec cat of the image's marker and exit 42
               inside it, stopped — a real QEMU guest when this machine can run one
  real-guest:  start, waitReady, lookup, guestExec exit 0 / exit 42, stop on the existing real VM 110
  (without a real guest, either falls back to lookup and guestExec exit 0 / exit 42 on VM 100, answered by
  this host's qemu-ga)
  methods of @stateless/proxmox/qemu: ${
    Object.keys(qemuModel.methods).join(", ")
  }`;

const { values, positionals } = parseArgs({
  args: Deno.args,
  allowPositionals: true,
  options: {
    input: { type: "string", multiple: true, short: "i" },
    json: { type: "boolean", default: false },
    model: { type: "string", default: "qemu" },
    "api-url": { type: "string" },
    node: { type: "string" },
    "token-id": { type: "string" },
    "token-secret": { type: "string" },
    "ca-cert-file": { type: "string" },
    help: { type: "boolean", short: "h", default: false },
  },
});

if (values.help || positionals.length > 1) {
  console.log(USAGE);
  Deno.exit(values.help ? 0 : 2);
}

/** `--input` pairs as swamp reads them (dotted keys, `:json`); a bad pair exits 2. */
function parseInputs(pairs: string[]): Record<string, unknown> {
  try {
    return parseInputPairs(pairs);
  } catch (err) {
    console.error(`--input: ${(err as Error).message}`);
    Deno.exit(2);
  }
}

function print(result: RunResult, repo: SwampRepo): void {
  console.log(formatRun(result));
  for (const w of result.written) {
    const data = values.json
      ? JSON.stringify(w.data, null, 2)
      : JSON.stringify(w.data);
    console.log(`    ${w.instance} = ${data}`);
  }
  void repo;
}

function realPveGlobalArgs(): Record<string, unknown> | undefined {
  const env = (name: string) => Deno.env.get(name) || undefined;
  const apiUrl = values["api-url"] ?? env("PVE_API_URL");
  if (!apiUrl) return undefined;
  const caFile = values["ca-cert-file"] ?? env("PVE_CA_CERT_FILE");
  return {
    name: "pve",
    transport: {
      kind: "api",
      apiUrl,
      node: values.node ?? env("PVE_NODE"),
      tokenId: values["token-id"] ?? env("PVE_TOKEN_ID"),
      tokenSecret: values["token-secret"] ?? env("PVE_TOKEN_SECRET"),
      ...(caFile ? { caCert: Deno.readTextFileSync(caFile) } : {}),
    },
  };
}

/**
 * The real-guest image when this machine can build and boot one (`PROXMOX_SWAMP_REAL_GUEST=0`
 * opts out); otherwise says why and returns undefined.
 */
async function realGuestsIfPossible(): Promise<RealGuestOptions | undefined> {
  if (Deno.env.get("PROXMOX_SWAMP_REAL_GUEST") === "0") {
    console.log("real guest: off (PROXMOX_SWAMP_REAL_GUEST=0)");
    return undefined;
  }
  console.log("real guest: preparing the image (built once per machine)…");
  try {
    return { image: await ensureGuestImage() };
  } catch (err) {
    console.log(
      `real guest: not available on this machine, falling back to the host's qemu-ga — ${
        (err as Error).message
      }`,
    );
    return undefined;
  }
}

/** What the embedded default needs for a demo. */
interface SimulatorWish {
  /** The real-guest image, when this machine can run one (VM 110 is then a real QEMU VM). */
  realGuests?: RealGuestOptions;
  /** `local` also takes `import` content (downloadUrl of a cloud image). */
  imports?: boolean;
}

/** `local` with `import` content beside PVE's defaults (a cloud image goes there). */
function storagesTakingImports(): SimStorage[] {
  return defaultStorages().map((s) =>
    s.storage === "local"
      ? { ...s, content: [...s.content, "import" as const] }
      : s
  );
}

async function withSimulator<T>(
  body: (globalArgs: Record<string, unknown>) => Promise<T>,
  wish: SimulatorWish = {},
): Promise<T> {
  const { realGuests } = wish;
  const agent = await startGuestAgent();
  const token = { id: "root@pam!demo", secret: crypto.randomUUID() };
  const sim = await startSimulator({
    nodes: DEMO_NODES,
    guests: [...demoGuests(), ...(realGuests ? [realDemoGuest()] : [])],
    tokens: [token],
    agent,
    realGuests,
    ...(wish.imports ? { storages: storagesTakingImports() } : {}),
  });
  try {
    console.log(
      `embedded default: PVE simulator at ${sim.url} (nodes ${
        DEMO_NODES.join(", ")
      }), real qemu-ga pid ${agent.pid}${
        realGuests
          ? `; real QEMU VMs (TCG) boot the kernel of ${realGuests.image.dir}`
          : ""
      }\n`,
    );
    return await body({
      name: "demo",
      transport: {
        kind: "api",
        node: "pve1",
        apiUrl: sim.url,
        tokenId: token.id,
        tokenSecret: token.secret,
      },
      pollIntervalSec: 1,
    });
  } finally {
    await sim.close();
    await agent.stop();
  }
}

const models = { qemu: qemuModel, lxc: lxcModel };
if (!(values.model in models)) {
  console.error(`--model ${values.model}: expected qemu or lxc`);
  Deno.exit(2);
}
// Both models share one argument and record shape for what the runner touches.
const chosen = models[values.model as keyof typeof models] as typeof qemuModel;

async function runOne(
  method: string,
  inputs: Record<string, unknown>,
  globalArgs: Record<string, unknown>,
) {
  const repo = new SwampRepo(chosen, {
    name: String(globalArgs.name),
    globalArgs,
  }, { vault: true, extensionFiles: PACKAGE_FILES });
  const result = await repo.run(method, inputs);
  print(result, repo);
  return result;
}

/** The demos `./run.sh <demo>` runs on the embedded simulator. */
const DEMOS = ["provision", "real-guest"] as const;
type DemoName = typeof DEMOS[number];
/** `./run.sh` alone. */
const DEFAULT_DEMO: DemoName = "provision";
/** The VM the provision demo creates. */
const PROVISION_VMID = 120;

/** Runs the steps in order; true when every verdict (and asked stdout) is the contract's. */
async function demo(
  globalArgs: Record<string, unknown>,
  steps: DemoStep[],
): Promise<boolean> {
  const repo = new SwampRepo(qemuModel, { name: "demo", globalArgs }, {
    vault: true,
    extensionFiles: PACKAGE_FILES,
  });
  const began = performance.now();
  let asContracted = true;
  for (const step of steps) {
    console.log(
      `$ swamp model @stateless/proxmox/qemu method run ${step.method} demo ${
        Object.entries(step.inputs).map(([k, v]) => `--input '${k}=${v}'`)
          .join(" ")
      }   # ${step.title}`,
    );
    const result = await repo.run(
      step.method,
      parseInputs(
        Object.entries(step.inputs).map(([k, v]) => `${k}=${v}`),
      ),
    );
    print(result, repo);
    const out = step.stdout === undefined
      ? undefined
      : recordedStdout(result, step.inputs.vmid);
    const ok = result.status === step.expected &&
      (step.stdout === undefined || out === step.stdout);
    asContracted &&= ok;
    console.log(
      `  → ${result.status}${
        step.stdout === undefined
          ? ""
          : `, stdout ${out === step.stdout ? "is" : "is NOT"} ${
            JSON.stringify(step.stdout)
          }`
      }, as the contract requires: ${ok ? "yes" : "NO"}\n`,
    );
  }
  console.log(
    `demo: ${steps.length} steps in ${
      ((performance.now() - began) / 1000).toFixed(1)
    } s`,
  );
  return asContracted;
}

/** The provision demo on the embedded default (needs a real guest), serving its cloud image. */
async function provisionDemo(realGuests: RealGuestOptions): Promise<boolean> {
  const image = await serveCloudImage();
  try {
    console.log(
      `cloud image: ${image.url} (sha256 ${image.sha256}), holding ${image.markerPath}\n`,
    );
    return await withSimulator(
      (g) => demo(g, provisionSteps(PROVISION_VMID, image)),
      { realGuests, imports: true },
    );
  } finally {
    await image.close();
  }
}

/** The demo named (or the default) on the embedded simulator. */
async function embeddedDemo(name: DemoName): Promise<boolean> {
  const realGuests = await realGuestsIfPossible();
  if (!realGuests) {
    return await withSimulator((g) => demo(g, hostAgentSteps()));
  }
  if (name === "real-guest") {
    return await withSimulator(
      (g) => demo(g, realGuestSteps(REAL_DEMO_VMID)),
      { realGuests },
    );
  }
  return await provisionDemo(realGuests);
}

const method = positionals[0];
const inputs = parseInputs(values.input ?? []);
const real = realPveGlobalArgs();
if (method === undefined || DEMOS.includes(method as DemoName)) {
  if (real && method !== undefined) {
    console.error(
      `the ${method} demo runs on the embedded simulator only (it serves its own cloud image and guest); against a real PVE, run the methods one by one`,
    );
    Deno.exit(2);
  }
  const ok = real
    ? await demo(real, hostAgentSteps())
    : await embeddedDemo((method ?? DEFAULT_DEMO) as DemoName);
  console.log(
    ok
      ? "demo: every verdict matched the contract"
      : "demo: a verdict did NOT match the contract",
  );
  Deno.exit(ok ? 0 : 1);
}
const result = real
  ? await runOne(method, inputs, real)
  : await withSimulator((g) => runOne(method, inputs, g));
Deno.exit(result.status === "succeeded" ? 0 : 1);
