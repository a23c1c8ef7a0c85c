/**
 * Guest agent endpoints, served by the REAL qemu-ga (opts.agent): exec,
 * exec-status, network-get-interfaces, ping. All guests share that one agent;
 * exec pids are the agent's own. A guest marked `real` has its own agent inside
 * its own VM (real_guests.ts): every call goes there, and what that agent says
 * (pids, interfaces, addresses) is passed through whole.
 *
 * What is PVE's and simulated here: the checks before any agent call (in PVE's
 * order), decoding exec-status output, booleans as 0/1, `Agent error: <desc>`,
 * and an agent forgetting its pids when its guest stops. What is the agent's and
 * passed through: pids, exit codes, signals, captured bytes, truncation flags,
 * "a result can be read only once", spawn failures.
 *
 * @module
 */

import type { Ctx, Route } from "./context.ts";
import { qemuGuest } from "./context.ts";
import { ApiError } from "./http.ts";
import { type GuestAgent, QgaError } from "./qga.ts";
import type { GuestState } from "./types.ts";

/** PVE 9 privileges (VM.Monitor is gone): running commands is "Unrestricted". */
const EXEC_PRIV = "VM.GuestAgent.Unrestricted";
const AUDIT_PRIV = "VM.GuestAgent.Audit|VM.GuestAgent.Unrestricted";

/** What the routes need of an agent: the host's shared qemu-ga or a real VM's own. */
export type AgentLink = Pick<GuestAgent, "call">;

/** The agent a guest's calls go to: its VM's own when it is real, else the shared one. */
function agentOf(ctx: Ctx, g: GuestState): AgentLink | undefined {
  if (ctx.core.real?.isReal(g)) return ctx.core.real.agentOf(g);
  return g.agent === "configured" ? undefined : ctx.core.agent;
}

/** PVE's agent_available + the ping qga_check_running does, in PVE's order. */
export async function readyAgent(ctx: Ctx, g: GuestState): Promise<AgentLink> {
  if (g.agent === "none") {
    throw new ApiError(500, "No QEMU guest agent configured");
  }
  if (g.status !== "running") {
    throw new ApiError(500, `VM ${g.vmid} is not running`);
  }
  const agent = agentOf(ctx, g);
  if (!agent) {
    throw new ApiError(500, "QEMU guest agent is not running");
  }
  try {
    await agent.call("guest-ping");
  } catch {
    // The agent was killed (agent.kill()), or a real guest's is not up (yet): PVE's ping times out.
    throw new ApiError(500, "QEMU guest agent is not running");
  }
  return agent;
}

/** 500 for a guest whose agent blocks exec (qemu-ga `-b`; the agent's exact text). */
function checkExecAllowed(g: GuestState, command: string): void {
  if (g.agent === "exec-disabled") {
    throw new ApiError(
      500,
      `Agent error: Command ${command} has been disabled`,
    );
  }
}

/** One agent command; an error reply becomes `Agent error: <desc>`. */
export async function agentCall(
  g: GuestState,
  agent: AgentLink,
  command: string,
  args?: Record<string, unknown>,
) {
  try {
    return await agent.call(command, args);
  } catch (err) {
    if (err instanceof QgaError) {
      throw new ApiError(500, `Agent error: ${err.desc}`);
    }
    // Agent died mid-command: in a VM the virtio-serial socket stays open, so PVE sees a timeout.
    throw new ApiError(
      500,
      `VM ${g.vmid} qmp command '${command}' failed - got timeout`,
    );
  }
}

/**
 * qemu-server PVE/QemuServer/Agent.pm qemu_exec: `encode_base64($input_data)`
 * on the decoded form string. encode_base64 takes each character as one byte,
 * so U+0080–U+00FF reach the guest as single Latin-1 bytes, and a character
 * above U+00FF makes Perl die (a 500; nothing runs). A client that wants the
 * guest to receive UTF-8 bytes sends each byte as the character of that code.
 */
function perlBase64(text: string): string {
  let bin = "";
  for (const ch of text) {
    const code = ch.codePointAt(0)!;
    if (code > 0xff) {
      throw new ApiError(
        500,
        "Wide character in subroutine entry at /usr/share/perl5/PVE/QemuServer/Agent.pm line 135.",
      );
    }
    bin += String.fromCharCode(code);
  }
  return btoa(bin);
}

/**
 * qemu-server PVE/QemuServer/Agent.pm qemu_exec_status: `decode_base64` gives
 * raw bytes, which PVE's JSON encoder then writes as if each byte were a
 * character. So the answer holds one character per guest byte (U+0000–U+00FF):
 * UTF-8 output from the guest arrives double-encoded (`ü` as `Ã¼`).
 */
function bytesAsCharacters(b64: string): string {
  return atob(b64);
}

/** PVE's exec-status: out/err base64 decoded (only when non-empty), booleans as 0/1, rest as the agent said. */
function pveExecStatus(res: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(res)) {
    if (
      (k === "out-data" || k === "err-data") && typeof v === "string" &&
      v !== ""
    ) out[k] = bytesAsCharacters(v);
    else if (typeof v === "boolean") out[k] = v ? 1 : 0;
    else out[k] = v;
  }
  return out;
}

/** eth0 of a guest: its `ips` and the MAC of its net0. */
/**
 * The simulated guest's own programs. Every guest shares one real qemu-ga on this machine, which has
 * no cloud-init; a guest's `cloud-init` is a stand-in that prints what `cloud-init status` prints
 * for the guest's `cloudInit` state and exits with cloud-init's status codes (0 done, 1 error,
 * 2 degraded — cloud-init ≥ 23.4). Any other program runs for real.
 */
function guestProgram(g: GuestState, argv: string[]): string[] {
  if (argv[0] !== "cloud-init" || argv[1] !== "status") return argv;
  const state = g.cloudInit ?? "done";
  const code = { done: 0, error: 1, degraded: 2 }[state];
  const shown = state === "degraded" ? "done" : state;
  return ["sh", "-c", `echo 'status: ${shown}'; exit ${code}`];
}

/**
 * eth0's addresses: the test's `ips`; else the static ones the guest's cloud-init configured from
 * the drive it booted with (`ipconfig0`'s ip=/ip6=), as a cloud image does at boot.
 */
function guestAddresses(g: GuestState): string[] {
  if (g.ips.length > 0) return g.ips;
  const ipconfig = String(g.cloudinitBooted?.ipconfig0 ?? "");
  return ipconfig.split(",").map((p) => p.split("=", 2))
    .filter(([k, v]) => (k === "ip" || k === "ip6") && v?.includes("/"))
    .map(([, v]) => v);
}

function eth0(g: GuestState): Record<string, unknown> {
  const mac =
    /=([0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5})/.exec(String(g.config.net0 ?? ""))
      ?.[1]?.toLowerCase() ??
      `bc:24:11:${
        [g.vmid >> 16, g.vmid >> 8, g.vmid].map((n) =>
          (n & 255).toString(16).padStart(2, "0")
        ).join(":")
      }`;
  const iface: Record<string, unknown> = {
    name: "eth0",
    "hardware-address": mac,
  };
  // No address yet (e.g. DHCP pending): the key is absent, as qemu-ga sends it.
  const ips = guestAddresses(g);
  if (ips.length > 0) {
    iface["ip-addresses"] = ips.map((ip) => {
      const [address, prefix] = ip.split("/");
      const v6 = address.includes(":");
      return {
        "ip-address": address,
        "ip-address-type": v6 ? "ipv6" : "ipv4",
        prefix: prefix ? Number(prefix) : v6 ? 64 : 24,
      };
    });
  }
  iface.statistics = {
    "rx-bytes": 0,
    "rx-packets": 0,
    "rx-errs": 0,
    "rx-dropped": 0,
    "tx-bytes": 0,
    "tx-packets": 0,
    "tx-errs": 0,
    "tx-dropped": 0,
  };
  return iface;
}

/** The agent routes. */
export const agentRoutes: Route[] = [
  {
    method: "POST",
    path: "/nodes/{node}/qemu/{vmid}/agent/exec",
    privilege: EXEC_PRIV,
    params: {
      command: { type: "array" },
      "input-data": { type: "string", optional: true, maxLength: 64 * 1024 },
    },
    handler: async (ctx) => {
      const g = qemuGuest(ctx);
      const command = ctx.params.command as string[];
      // A real guest runs its own programs (its image has no cloud-init).
      const argv = ctx.core.real?.isReal(g)
        ? command
        : guestProgram(g, command);
      const input = ctx.params["input-data"] as string | undefined;
      // PVE: argv[0] is the program (no shell), the rest its arguments, output always captured.
      const args: Record<string, unknown> = {
        path: argv[0],
        arg: argv.slice(1),
        "capture-output": true,
      };
      // qemu_exec encodes the input before agent_cmd looks at the agent.
      if (input !== undefined) args["input-data"] = perlBase64(input);
      const agent = await readyAgent(ctx, g);
      checkExecAllowed(g, "guest-exec");
      const res = await agentCall(g, agent, "guest-exec", args) as {
        pid: number;
      };
      // A real guest's agent is its own: it alone knows its pids.
      if (!ctx.core.real?.isReal(g)) ctx.core.state.recordExec(res.pid, g.vmid);
      return { pid: res.pid };
    },
  },
  {
    method: "GET",
    path: "/nodes/{node}/qemu/{vmid}/agent/exec-status",
    privilege: EXEC_PRIV,
    params: { pid: { type: "integer" } },
    handler: async (ctx) => {
      const g = qemuGuest(ctx);
      const agent = await readyAgent(ctx, g);
      checkExecAllowed(g, "guest-exec-status");
      const pid = ctx.params.pid as number;
      // Simulated per-guest agents over one real agent: another guest's pid, or
      // one from before this guest stopped, is unknown to "this" agent. Anything
      // else (including a re-read after the final answer) the real agent judges.
      if (
        !ctx.core.real?.isReal(g) && ctx.core.state.execPidForeign(pid, g.vmid)
      ) {
        throw new ApiError(500, "Agent error: Invalid parameter 'pid'");
      }
      const res = await agentCall(g, agent, "guest-exec-status", {
        pid,
      }) as Record<string, unknown>;
      return pveExecStatus(res);
    },
  },
  {
    method: "GET",
    path: "/nodes/{node}/qemu/{vmid}/agent/network-get-interfaces",
    privilege: AUDIT_PRIV,
    handler: async (ctx) => {
      const g = qemuGuest(ctx);
      const agent = await readyAgent(ctx, g);
      // Asked for real so a dead agent shows; only the host's `lo` is kept,
      // eth0 is the guest's own (from `ips`).
      const real = await agentCall(
        g,
        agent,
        "guest-network-get-interfaces",
      ) as { name: string }[];
      if (ctx.core.real?.isReal(g)) return { result: real };
      const lo = real.find((i) => i.name === "lo") ?? {
        name: "lo",
        "hardware-address": "00:00:00:00:00:00",
        "ip-addresses": [{
          "ip-address": "127.0.0.1",
          "ip-address-type": "ipv4",
          prefix: 8,
        }],
      };
      return { result: [lo, eth0(g)] };
    },
  },
  {
    method: "GET",
    path: "/nodes/{node}/qemu/{vmid}/agent/info",
    privilege: AUDIT_PRIV,
    handler: async (ctx) => {
      const g = qemuGuest(ctx);
      const agent = await readyAgent(ctx, g);
      return { result: await agentCall(g, agent, "guest-info") };
    },
  },
  {
    method: "POST",
    path: "/nodes/{node}/qemu/{vmid}/agent/ping",
    privilege: AUDIT_PRIV,
    handler: async (ctx) => {
      const g = qemuGuest(ctx);
      const agent = await readyAgent(ctx, g);
      return { result: await agentCall(g, agent, "guest-ping") };
    },
  },
];
