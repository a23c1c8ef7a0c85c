/**
 * Transport parity: after assembly the core treats both transports alike, so every scenario of the
 * qemu end-to-end suites (qemu_guest_exec_test.ts, qemu_lookup_test.ts; a selection of the config, sync
 * and node-read ones) must end with the same verdict
 * and the same records over ssh (real OpenSSH to a loopback sshd, the pvesh fixture on the "node")
 * as over the HTTP API.
 *
 * Compared: each run's status, its error (the whole text, or only the scenario's pattern where the
 * error quotes the transport's own words), and every record written and its versions, with the fields
 * that differ from run to run removed (recordedAt, durationMs, pid, uptimeSec). The one expected
 * difference in words: an error PVE raises as a plain `die` arrives over HTTP as status 500 (shown as
 * "(HTTP 500)") and over pvesh as the bare message; it is removed before comparing.
 *
 * Left out, on purpose: "a guest the token may not audit" — pvesh runs as root@pam on the node and
 * sees every guest, so over ssh the guest is visible and the outcome rightly differs; the
 * tombstone scenario exercises the harness's lifecycle, not a transport.
 */
import assert from "node:assert/strict";
import type { RunResult } from "../../harness/swamp.ts";
import { type Env, withEnv } from "./env.ts";

/** One run of a scenario: the method, its arguments, and what its error must say (if it fails). */
interface Step {
  method: string;
  args: Record<string, unknown>;
  status: "succeeded" | "failed";
  error?: RegExp;
}

interface Scenario {
  name: string;
  /** Prepares the simulator (faults, guest changes) before the steps; `after` runs between steps. */
  setup?: (env: Env) => void;
  between?: (env: Env) => void;
  steps: Step[];
  /**
   * The error quotes the transport's own words (a dropped connection, an unreadable answer), so only
   * the scenario's pattern is compared, not the whole text.
   */
  transportWords?: boolean;
}

const exec = (
  command: string[],
  status: Step["status"],
  error?: RegExp,
  extra: Record<string, unknown> = {},
): Step => ({
  method: "guestExec",
  args: { vmid: 100, command, ...extra },
  status,
  error,
});

const SCENARIOS: Scenario[] = [
  {
    name: "guestExec: exit 42 fails with the code, stdout and stderr recorded",
    steps: [
      exec(
        ["bash", "-c", "echo out; echo err >&2; exit 42"],
        "failed",
        /exited with code 42/,
      ),
    ],
  },
  {
    name: "guestExec: exit 0 succeeds",
    steps: [exec(["bash", "-c", "printf hello"], "succeeded")],
  },
  {
    name: "guestExec: a signal fails",
    steps: [exec(["bash", "-c", "kill -9 $$"], "failed", /killed by signal 9/)],
  },
  {
    name: "guestExec: allowNonZeroExit accepts a code",
    steps: [
      exec(["bash", "-c", "exit 3"], "succeeded", undefined, {
        allowNonZeroExit: true,
      }),
    ],
  },
  {
    name: "guestExec: allowNonZeroExit does not accept a signal",
    steps: [
      exec(["bash", "-c", "kill -TERM $$"], "failed", /killed by signal 15/, {
        allowNonZeroExit: true,
      }),
    ],
  },
  {
    name: "guestExec: allowedExitCodes accepts only the listed codes",
    steps: [
      exec(["bash", "-c", "exit 1"], "succeeded", undefined, {
        allowedExitCodes: [1],
      }),
      exec(["bash", "-c", "exit 2"], "failed", /only exit codes 0, 1 counts/, {
        allowedExitCodes: [1],
      }),
    ],
  },
  {
    name: "guestExec: past timeoutSec fails with timedOut",
    steps: [
      exec(
        ["sleep", "5"],
        "failed",
        /did not finish within timeoutSec=1s/,
        { timeoutSec: 1 },
      ),
    ],
  },
  {
    name: "guestExec: agent not running",
    steps: [{
      method: "guestExec",
      args: { vmid: 103, command: ["true"] },
      status: "failed",
      error: /QEMU guest agent is not running/,
    }],
  },
  {
    name: "guestExec: agent not configured",
    steps: [{
      method: "guestExec",
      args: { vmid: 104, command: ["true"] },
      status: "failed",
      error: /No QEMU guest agent configured/,
    }],
  },
  {
    name: "guestExec: a stopped guest",
    steps: [{
      method: "guestExec",
      args: { vmid: 102, command: ["true"] },
      status: "failed",
      error: /VM 102 is not running/,
    }],
  },
  {
    name: "guestExec: exec disabled in the agent",
    steps: [{
      method: "guestExec",
      args: { vmid: 105, command: ["true"] },
      status: "failed",
      error: /guest-exec has been disabled/,
    }],
  },
  {
    name: "guestExec: a program that cannot be spawned",
    steps: [
      exec(["/nonexistent/program"], "failed", /did not start: Agent error/),
    ],
  },
  {
    name: "guestExec: a guest on another node",
    steps: [{
      method: "guestExec",
      args: { vmid: 101, command: ["true"] },
      status: "succeeded",
    }],
  },
  {
    name: "guestExec: stdin from inputData",
    steps: [exec(["cat"], "succeeded", undefined, { inputData: "piped in" })],
  },
  {
    name: "lookup: a running guest",
    steps: [{ method: "lookup", args: { vmid: 100 }, status: "succeeded" }],
  },
  {
    name: "lookup: two runs, two versions",
    steps: [
      { method: "lookup", args: { vmid: 100 }, status: "succeeded" },
      { method: "lookup", args: { vmid: 100 }, status: "succeeded" },
    ],
  },
  {
    name: "lookup: a guest on another node",
    steps: [{ method: "lookup", args: { vmid: 101 }, status: "succeeded" }],
  },
  {
    name: "lookup: an absent guest",
    steps: [{ method: "lookup", args: { vmid: 999 }, status: "succeeded" }],
  },
  {
    name: "lookup: a 403 on the status read",
    setup: (env) =>
      env.sim.fault({
        pathRegex: "/qemu/100/status/current$",
        kind: "status",
        status: 403,
        message: "Permission check failed (/vms/100, VM.Audit)",
      }),
    steps: [{
      method: "lookup",
      args: { vmid: 100 },
      status: "failed",
      error: /Permission check failed \(\/vms\/100, VM\.Audit\)/,
    }],
  },
  {
    name: "lookup: an unparsable answer",
    transportWords: true,
    setup: (env) =>
      env.sim.fault({
        pathRegex: "/qemu/100/status/current$",
        kind: "body",
        body: '{"data": {"status": ',
      }),
    steps: [{
      method: "lookup",
      args: { vmid: 100 },
      status: "failed",
      error: /status/,
    }],
  },
  {
    name: "lookup: a transport error",
    transportWords: true,
    setup: (env) =>
      env.sim.fault({
        pathRegex: "/qemu/100/status/current$",
        kind: "reset",
        times: Infinity,
      }),
    steps: [{
      method: "lookup",
      args: { vmid: 100 },
      status: "failed",
      error: /could not read the state of VM 100 on node pve1/,
    }],
  },
  {
    name:
      "lookup: a guest its node says is not there is looked up in the cluster and read where it lives",
    // Over ssh this is pvesh dying (exit 255 by default, like ssh's own failures): it must still be
    // read as PVE's "not on this node", not as a connection failure.
    setup: (env) =>
      env.sim.fault({
        pathRegex: "/qemu/100/status/current$",
        kind: "status",
        status: 500,
        message:
          "Configuration file 'nodes/pve1/qemu-server/100.conf' does not exist",
      }),
    steps: [{ method: "lookup", args: { vmid: 100 }, status: "succeeded" }],
  },
  {
    name: "lookup: a reused VMID is reported",
    between: (env) =>
      env.sim.setGuest(100, {
        config: { smbios1: "uuid=11111111-2222-4333-8444-555555555555" },
      }),
    steps: [
      { method: "lookup", args: { vmid: 100 }, status: "succeeded" },
      { method: "lookup", args: { vmid: 100 }, status: "succeeded" },
    ],
  },
  {
    name: "lookup: by vmName",
    steps: [{ method: "lookup", args: { vmName: "db" }, status: "succeeded" }],
  },
  {
    name: "lookup: a container's VMID is refused",
    steps: [{
      method: "lookup",
      args: { vmid: 200 },
      status: "failed",
      error: /is a lxc guest/,
    }],
  },
  {
    name:
      "setConfig: cloud-init keys, sshkeys URL-encoded through pvesh's quoting",
    steps: [{
      method: "setConfig",
      args: {
        vmid: 102,
        config: {
          ciuser: "ops",
          ipconfig0: "ip=10.0.0.5/24,gw=10.0.0.1",
          sshkeys: "ssh-ed25519 AAAAC3+/= o'brien@host\nssh-rsa AAAA== ci@x",
          description: "it's $HOME; `id`",
        },
      },
      status: "succeeded",
    }, { method: "getConfig", args: { vmid: 102 }, status: "succeeded" }],
  },
  {
    name: "setConfig: a change that needs a restart is pending",
    steps: [{
      method: "setConfig",
      args: { vmid: 100, config: { memory: 4096 } },
      status: "succeeded",
    }],
  },
  {
    name: "sync: the node's VMs, then a vanished one recorded absent",
    between: (env) => env.sim.removeGuest(102),
    steps: [
      { method: "sync", args: {}, status: "succeeded" },
      { method: "sync", args: {}, status: "succeeded" },
    ],
  },
  {
    name:
      "convertToTemplate: a stopped VM (forced past the gate), then a re-run without a task",
    steps: [
      {
        method: "convertToTemplate",
        args: { vmid: 102, force: true },
        status: "succeeded",
      },
      {
        method: "convertToTemplate",
        args: { vmid: 102 },
        status: "succeeded",
      },
    ],
  },
  {
    name: "convertToTemplate: a running VM is refused",
    steps: [{
      method: "convertToTemplate",
      args: { vmid: 100 },
      status: "failed",
      error: /PVE converts only a stopped guest/,
    }],
  },
  {
    name:
      "cloudInit: options set through pvesh's quoting, drive regenerated and its dump verified",
    setup: (env) => {
      const config = env.sim.guest(102)!.config;
      config.ide2 = "local-lvm:vm-102-cloudinit,media=cdrom";
      config.net0 = "virtio=BC:24:11:00:01:02,bridge=vmbr0";
    },
    steps: [{
      method: "cloudInit",
      args: {
        vmid: 102,
        ciuser: "o'brien",
        cipassword: "it's $HOME; `id`",
        sshkeys: "ssh-ed25519 AAAAC3+/= o'brien@host\nssh-rsa AAAA== ci@x",
        ipconfig0: "ip=10.0.0.5/24,gw=10.0.0.1",
        searchdomain: "lan",
      },
      status: "succeeded",
    }],
  },
  {
    name: "reboot: a running VM comes back with a new boot",
    steps: [{ method: "reboot", args: { vmid: 100 }, status: "succeeded" }],
  },
  {
    name: "reboot: a stopped VM has nothing to reboot",
    steps: [{
      method: "reboot",
      args: { vmid: 102, force: true },
      status: "failed",
      error: /is not running/,
    }],
  },
  {
    name: "waitReady: agent, IPv4 and cloud-init done, recorded",
    setup: (env) => env.sim.setGuest(100, { ips: ["10.0.0.5/24"] }),
    steps: [{
      method: "waitReady",
      args: { vmid: 100, cloudInit: true },
      status: "succeeded",
    }],
  },
  {
    name: "waitReady: no address fails after timeoutSec",
    setup: (env) => env.sim.setGuest(100, { ips: [] }),
    steps: [{
      method: "waitReady",
      args: { vmid: 100, timeoutSec: 1 },
      status: "failed",
      error: /no IPv4 address on any interface after 1 s/,
    }],
  },
  {
    name: "cloudInit: a VM without a cloud-init drive is refused",
    steps: [{
      method: "cloudInit",
      args: { vmid: 102, ciuser: "ops" },
      status: "failed",
      error: /has no cloud-init drive/,
    }],
  },
  {
    name:
      "clone without vmid: a range with no free VMID fails before any clone",
    steps: [{
      method: "clone",
      args: {
        templateId: 102,
        name: "c1",
        vmidRange: { min: 100, max: 101 },
      },
      status: "failed",
      error: /no free VMID in vmidRange 100–101/,
    }],
  },
  {
    name: "suspend to RAM, then resume: paused, then running again",
    steps: [
      { method: "suspend", args: { vmid: 100 }, status: "succeeded" },
      { method: "resume", args: { vmid: 100 }, status: "succeeded" },
    ],
  },
  {
    name:
      "suspend to disk on another node; start refuses it without resume, resumes it with",
    steps: [
      {
        method: "suspend",
        args: { vmid: 101, toDisk: true },
        status: "succeeded",
      },
      {
        method: "start",
        args: { vmid: 101 },
        status: "failed",
        error: /only with resume: true/,
      },
      {
        method: "start",
        args: { vmid: 101, resume: true },
        status: "succeeded",
      },
    ],
  },
  {
    name: "suspend: a stopped VM is refused with PVE's reason",
    steps: [{
      method: "suspend",
      args: { vmid: 102, force: true },
      status: "failed",
      error: /VM 102 not running/,
    }],
  },
  {
    name: "nodeStatus and nodeConfig",
    steps: [
      { method: "nodeStatus", args: {}, status: "succeeded" },
      { method: "nodeConfig", args: { node: "pve2" }, status: "succeeded" },
    ],
  },
];

/** Fields that differ between any two runs, whatever the transport (a task's UPID holds its pid and start). */
const VOLATILE = new Set([
  "recordedAt",
  "observedAt",
  "identityObservedAt",
  "durationMs",
  "pid",
  "uptimeSec",
  "lastTask",
  "waitedMs",
]);

/** A value with volatile fields removed and the HTTP-only status suffix of plain-die errors dropped. */
function normalize(value: unknown): unknown {
  if (typeof value === "string") return value.replaceAll(" (HTTP 500)", "");
  if (Array.isArray(value)) return value.map(normalize);
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>)
        .filter(([k]) => !VOLATILE.has(k))
        .map(([k, v]) => [k, normalize(v)]),
    );
  }
  return value;
}

interface Observed {
  status: string;
  error?: string;
  written: { instance: string; data: unknown }[];
  versions: Record<string, number[]>;
}

async function observe(
  via: "api" | "ssh",
  scenario: Scenario,
): Promise<Observed[]> {
  const observed: Observed[] = [];
  await withEnv({ via }, async (env) => {
    scenario.setup?.(env);
    for (const [i, step] of scenario.steps.entries()) {
      if (i > 0) scenario.between?.(env);
      const r: RunResult = await env.run(step.method, step.args);
      const where = `${via}, step ${i + 1} (${step.method})`;
      assert.equal(r.status, step.status, `${where}: ${r.error}`);
      if (step.error) assert.match(r.error ?? "", step.error, where);
      const instances = [...new Set(r.written.map((w) => w.instance))];
      observed.push({
        status: r.status,
        error: r.error === undefined ? undefined : String(normalize(r.error)),
        written: r.written.map((w) => ({
          instance: w.instance,
          data: normalize(w.data),
        })),
        versions: Object.fromEntries(
          instances.map((
            name,
          ) => [name, env.repo.versions(name).map((v) => v.version)]),
        ),
      });
    }
    if (via === "ssh") {
      assert.ok(
        (await env.ssh!.calls()).length > 0,
        "the ssh run went through pvesh on the node",
      );
    }
  });
  return observed;
}

for (const scenario of SCENARIOS) {
  Deno.test(`ssh parity: ${scenario.name}`, async () => {
    // Separate fixtures, so the two runs may overlap.
    const [api, ssh] = await Promise.all([
      observe("api", scenario),
      observe("ssh", scenario),
    ]);
    for (const [i, a] of api.entries()) {
      const s = ssh[i];
      assert.equal(s.status, a.status, `step ${i + 1}: the same verdict`);
      if (!scenario.transportWords) {
        assert.equal(s.error, a.error, `step ${i + 1}: the same error`);
      }
      assert.deepEqual(s.written, a.written, `step ${i + 1}: the same records`);
      assert.deepEqual(
        s.versions,
        a.versions,
        `step ${i + 1}: the same versions`,
      );
    }
  });
}
