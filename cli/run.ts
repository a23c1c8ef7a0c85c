/**
 * The main job: runs a method of the package the way `swamp model method run <method> --input k=v …`
 * does — through the swamp-faithful harness — and prints the outcome as swamp would.
 *
 * - Against a real PVE when one is configured (flags, or PVE_API_URL, PVE_NODE, PVE_TOKEN_ID,
 *   PVE_TOKEN_SECRET, PVE_CA_CERT_FILE in the environment).
 * - Otherwise against the embedded default: the PVE simulator in front of a real qemu guest agent.
 * - With no method, runs the demo on the embedded default and exits 0 when each verdict is the one
 *   the contract requires. Where this machine can run one (scripts/guest_image.sh builds the image),
 *   the demo's guest is a real QEMU VM: start (its agent comes up seconds after the start task
 *   ended), waitReady (agent, IPv4 and IPv6 on net0), lookup, guestExec of `exit 0` and of `exit 42` inside it, stop. Otherwise it
 *   says why and falls back to VM 100, answered by this host's qemu-ga: lookup, guestExec 0 and 42.
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
import type { RealGuestOptions } from "../simulator/real_guests.ts";
import { startGuestAgent } from "../simulator/qga.ts";
import { startSimulator } from "../simulator/simulator.ts";
import { PACKAGE_FILES } from "../harness/project_package.ts";

const USAGE =
  `usage: run.sh [<method>] [--model qemu|lxc] [--input key=value]… [--json]
            [--api-url URL --node NODE --token-id ID --token-secret SECRET [--ca-cert-file PEM]]
  no <method>: the demo on the embedded simulator: a real QEMU guest when this machine can run one
               (start, waitReady, lookup, guestExec exit 0 and exit 42 inside it, stop), else lookup and
               guestExec exit 0 / exit 42 answered by this host's qemu-ga
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

/** `key=value` pairs; values stay strings: swamp (and the harness) coerce `--input` values. */
function parseInputs(pairs: string[]): Record<string, string> {
  const inputs: Record<string, string> = {};
  for (const pair of pairs) {
    const at = pair.indexOf("=");
    if (at <= 0) {
      console.error(`--input ${JSON.stringify(pair)}: expected key=value`);
      Deno.exit(2);
    }
    inputs[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return inputs;
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

async function withSimulator<T>(
  body: (globalArgs: Record<string, unknown>, realVmid?: number) => Promise<T>,
  wantRealGuest = false,
): Promise<T> {
  const realGuests = wantRealGuest ? await realGuestsIfPossible() : undefined;
  const agent = await startGuestAgent();
  const token = { id: "root@pam!demo", secret: crypto.randomUUID() };
  const sim = await startSimulator({
    nodes: DEMO_NODES,
    guests: [...demoGuests(), ...(realGuests ? [realDemoGuest()] : [])],
    tokens: [token],
    agent,
    realGuests,
  });
  try {
    console.log(
      `embedded default: PVE simulator at ${sim.url} (nodes ${
        DEMO_NODES.join(", ")
      }), real qemu-ga pid ${agent.pid}${
        realGuests
          ? `; VM ${REAL_DEMO_VMID} is a real QEMU VM (TCG) booting ${realGuests.image.dir}`
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
    }, realGuests ? REAL_DEMO_VMID : undefined);
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
  inputs: Record<string, string>,
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

type DemoStep = [
  string,
  string,
  Record<string, string>,
  "succeeded" | "failed",
];

/** The demo on a real guest: boot it, wait for its agent, run commands inside it, stop it. */
function realGuestSteps(vmid: number): DemoStep[] {
  const id = String(vmid);
  return [
    [`start real VM ${vmid} (the task ends while the guest boots)`, "start", {
      vmid: id,
    }, "succeeded"],
    [`waitReady: its agent, IPv4 and IPv6 on net0`, "waitReady", {
      vmid: id,
      ipv6: "true",
      nic: "net0",
      timeoutSec: "120",
    }, "succeeded"],
    [`lookup of real VM ${vmid}`, "lookup", { vmid: id }, "succeeded"],
    ["guestExec exit 0 inside the guest", "guestExec", {
      vmid: id,
      command: '["sh","-c","echo ready on $(hostname), kernel $(uname -r)"]',
    }, "succeeded"],
    ["guestExec exit 42 inside the guest", "guestExec", {
      vmid: id,
      command: '["sh","-c","echo failing >&2; exit 42"]',
    }, "failed"],
    [`stop real VM ${vmid}`, "stop", { vmid: id }, "succeeded"],
  ];
}

async function demo(
  globalArgs: Record<string, unknown>,
  realVmid?: number,
): Promise<boolean> {
  const repo = new SwampRepo(qemuModel, { name: "demo", globalArgs }, {
    vault: true,
    extensionFiles: PACKAGE_FILES,
  });
  const steps: DemoStep[] = realVmid !== undefined
    ? realGuestSteps(realVmid)
    : [
      ["lookup of running VM 100", "lookup", { vmid: "100" }, "succeeded"],
      ["guestExec exit 0", "guestExec", {
        vmid: "100",
        command: '["bash","-c","echo ready"]',
      }, "succeeded"],
      ["guestExec exit 42", "guestExec", {
        vmid: "100",
        command: '["bash","-c","echo failing >&2; exit 42"]',
      }, "failed"],
    ];
  let asContracted = true;
  for (const [title, method, inputs, expected] of steps) {
    console.log(
      `$ swamp model @stateless/proxmox/qemu method run ${method} demo ${
        Object.entries(inputs).map(([k, v]) => `--input '${k}=${v}'`).join(" ")
      }   # ${title}`,
    );
    const result = await repo.run(method, inputs);
    print(result, repo);
    const ok = result.status === expected;
    asContracted &&= ok;
    console.log(
      `  → ${result.status}, as the contract requires: ${ok ? "yes" : "NO"}\n`,
    );
  }
  return asContracted;
}

const method = positionals[0];
const inputs = parseInputs(values.input ?? []);
const real = realPveGlobalArgs();
if (method === undefined) {
  const ok = real ? await demo(real) : await withSimulator(demo, true);
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
