/**
 * The package against a REAL guest: the simulator's VM 110 is a QEMU virtual machine (Debian
 * kernel, busybox, Debian's qemu-ga inside; scripts/guest_image.sh) booted under TCG. One VM
 * serves the whole file, so the tests run in order and share it: each test is one behaviour, and
 * the VM spans tests by design (the sanitizers would count it as a leak of every single test).
 *
 * Boots and timings are printed as `real guest: …` lines (test.sh shows them with the layer).
 *
 * @module
 */
import assert from "node:assert/strict";
import { ensureGuestImage } from "../../simulator/guest_image.ts";
import { realDemoGuest } from "../../simulator/demo_cluster.ts";
import {
  type Env,
  startEnv,
  TOKEN_ID,
  TOKEN_SECRET,
  written,
} from "../e2e/env.ts";
import { note, runGuarded, secondsSince, step } from "./steps.ts";

const GUEST = realDemoGuest();
const VMID = GUEST.vmid;
const UUID = String(GUEST.config?.smbios1).replace(/^uuid=/, "");
const MAC = /=([0-9A-Fa-f:]{17})/.exec(String(GUEST.config?.net0))?.[1]
  .toLowerCase();
/** A method on a real guest that takes longer than this is hung: the test fails instead of waiting. */
const HANG_GUARD_MS = 90_000;

let env: Env;
const began = performance.now();
/** What the guest said about itself at its first boot. */
let firstBootId = "";
let firstPid = 0;

/** Runs a method on the one VM's simulator, guarded against hanging. */
function run(method: string, args: Record<string, unknown>) {
  return runGuarded(env, method, args, HANG_GUARD_MS);
}

async function exec(command: string[]) {
  return await run("guestExec", { vmid: VMID, command });
}

/** The guest's stdout of a command that must succeed. */
async function guestSays(script: string): Promise<string> {
  const r = await exec(["sh", "-c", script]);
  assert.equal(r.status, "succeeded", r.error);
  return String(written(r, `vm-${VMID}-exec`).stdout);
}

/** Agent requests the simulator answered, in order: true = answered 200. */
function agentAnswers(since: number): boolean[] {
  return env.sim.requests.slice(since)
    .filter((r) => r.path.includes(`/qemu/${VMID}/agent/`))
    .map((r) => r.status === 200);
}

/** Starts the VM with waitForIp and notes how long the boot took. */
async function startAndWaitForAgent(label: string) {
  const since = env.sim.requests.length;
  const t0 = performance.now();
  const r = await run("start", { vmid: VMID, waitForIp: true });
  assert.equal(r.status, "succeeded", r.error);
  note(
    `${label}: start with waitForIp succeeded ${
      ((performance.now() - t0) / 1000).toFixed(1)
    } s after it was sent (QEMU pid ${env.sim.realVm(VMID)?.pid})`,
  );
  return { r, since };
}

/** Asks the simulator's agent/ping route until the guest's agent no longer answers. */
async function untilAgentSilent(): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const res = await api("POST", `/nodes/pve1/qemu/${VMID}/agent/ping`);
    await res.body?.cancel();
    if (res.status !== 200) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(
    "the guest's agent still answers 20 s after it was told to stop",
  );
}

/** One request to the simulator with the fixture's token. */
function api(method: string, path: string): Promise<Response> {
  return fetch(`${env.sim.url}/api2/json${path}`, {
    method,
    headers: { authorization: `PVEAPIToken=${TOKEN_ID}=${TOKEN_SECRET}` },
  });
}

/** The SLAAC interface id of a MAC (`bc:24:11:00:00:6e` → `be24:11ff:fe00:6e`). */
function eui64(mac: string): string {
  const b = mac.split(":").map((h) => parseInt(h, 16));
  const words = [
    ((b[0] ^ 2) << 8) | b[1],
    (b[2] << 8) | 0xff,
    0xfe00 | b[3],
    (b[4] << 8) | b[5],
  ];
  return words.map((w) => w.toString(16)).join(":");
}

function processExists(pid: number): boolean {
  try {
    Deno.kill(pid, "SIGCONT");
    return true;
  } catch {
    return false;
  }
}

step(
  "setup: the guest image is built and the simulator holds the stopped real VM",
  async () => {
    const t0 = performance.now();
    const image = await ensureGuestImage();
    note(
      `image ready in ${
        ((performance.now() - t0) / 1000).toFixed(1)
      } s (${image.dir})`,
    );
    env = await startEnv({
      guests: [GUEST],
      sim: { realGuests: { image } },
      globalArgs: { taskTimeoutSec: 60 },
    });
    assert.equal(env.sim.guest(VMID)?.status, "stopped");
    assert.equal(env.sim.realVm(VMID), undefined);
  },
);

step(
  "start ends while the guest boots; waitReady waits for its agent and the guest's own IPv4 and IPv6 on net0",
  async () => {
    const since = env.sim.requests.length;
    const t0 = performance.now();
    const started = await run("start", { vmid: VMID });
    assert.equal(started.status, "succeeded", started.error);
    const r = await run("waitReady", {
      vmid: VMID,
      ipv4: true,
      ipv6: true,
      nic: "net0",
      timeoutSec: 60,
    });
    assert.equal(r.status, "succeeded", r.error);
    note(
      `boot 1: start + waitReady succeeded ${
        ((performance.now() - t0) / 1000).toFixed(1)
      } s after start was sent (QEMU pid ${env.sim.realVm(VMID)?.pid})`,
    );
    firstPid = env.sim.realVm(VMID)?.pid ?? 0;
    const answers = agentAnswers(since);
    // Whether the agent was still down at waitReady's first ask depends on how long start took on
    // this machine: reported, not asserted (a timing-dependent assertion would be a flaky test).
    note(
      answers[0] === false
        ? `waitReady's first agent calls found no agent (${
          answers.indexOf(true)
        } unanswered before it came up)`
        : "the agent was already up when waitReady first asked",
    );
    assert.equal(answers.at(-1), true);
    // slirp's DHCP lease and SLAAC address, as the guest's own agent reads its own eth0, found by
    // the MAC of net0 in the config.
    const ready = written(r, `vm-${VMID}-ready`);
    assert.equal(ready.ipv4, "10.0.2.15");
    // SLAAC: the network's prefix and an interface id made from the MAC (EUI-64).
    assert.equal(ready.ipv6, `2001:db8:5a:0:${eui64(MAC ?? "")}`);
    firstPid = env.sim.realVm(VMID)?.pid ?? 0;
    assert.ok(processExists(firstPid), "QEMU runs");
  },
);

step("status/current reports QEMU's pid and QMP's run state", async () => {
  const res = await api("GET", `/nodes/pve1/qemu/${VMID}/status/current`);
  const { data } = await res.json();
  assert.equal(data.status, "running");
  assert.equal(data.qmpstatus, "running");
  assert.equal(data.pid, firstPid);
});

step(
  "guestExec exit 0 runs inside the guest: its hostname, SMBIOS uuid and MAC are the config's",
  async () => {
    const out = await guestSays(
      "hostname; cat /sys/class/dmi/id/product_uuid; cat /sys/class/net/eth0/address; cat /proc/sys/kernel/random/boot_id",
    );
    const [hostname, uuid, mac, bootId] = out.trim().split("\n");
    assert.equal(hostname, "real-guest");
    assert.equal(uuid.toLowerCase(), UUID);
    assert.equal(mac, MAC);
    firstBootId = bootId;
  },
);

step(
  "guestExec exit 42 fails with 42 and the guest's stderr recorded",
  async () => {
    const r = await exec(["sh", "-c", "echo from-guest >&2; exit 42"]);
    assert.equal(r.status, "failed");
    const rec = written(r, `vm-${VMID}-exec`);
    assert.equal(rec.outcome, "exited");
    assert.equal(rec.exitCode, 42);
    assert.equal(rec.stderr, "from-guest\n");
  },
);

step(
  "guestExec of a command killed by a signal fails with the signal recorded",
  async () => {
    const r = await exec(["sh", "-c", "kill -9 $$"]);
    assert.equal(r.status, "failed");
    const rec = written(r, `vm-${VMID}-exec`);
    assert.equal(rec.outcome, "signaled");
    assert.equal(rec.signal, 9);
  },
);

step(
  "guestExec records non-ASCII output exactly as the guest wrote it",
  async () => {
    assert.equal(await guestSays("printf 'grüße ✓ 日本'"), "grüße ✓ 日本");
  },
);

step("a file written on the guest's disk reads back", async () => {
  await guestSays("printf 'kept on disk' > /data/note.txt && sync");
  assert.equal(await guestSays("cat /data/note.txt"), "kept on disk");
});

step(
  "waitReady fails, and does not hang, when the agent never answers",
  async () => {
    // Inside the guest: keep the agent down until the next boot, then end it.
    await guestSays(
      "(sleep 1; touch /run/qga.off; killall qemu-ga) >/dev/null 2>&1 &",
    );
    await untilAgentSilent();
    const t0 = performance.now();
    const r = await run("waitReady", { vmid: VMID, timeoutSec: 8 });
    note(
      `waitReady with no agent failed after ${
        ((performance.now() - t0) / 1000).toFixed(1)
      } s (timeoutSec 8)`,
    );
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /agent/);
  },
);

step(
  "shutdown without an agent goes through ACPI: the guest powers off and QEMU exits",
  async () => {
    const vm = env.sim.realVm(VMID);
    const r = await run("shutdown", { vmid: VMID, timeoutSec: 60 });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(written(r, `vm-${VMID}`).status, "stopped");
    assert.equal(env.sim.realVm(VMID), undefined);
    assert.equal(processExists(firstPid), false, "QEMU is gone");
    const consoleLog = await Deno.readTextFile(vm?.consolePath ?? "");
    assert.match(consoleLog, /acpi: power button pressed/);
    assert.doesNotMatch(consoleLog, /asked by the guest agent/);
  },
);

step(
  "start again boots anew: a new QEMU pid, a new boot id, and the disk kept its file",
  async () => {
    await startAndWaitForAgent("boot 2");
    const pid = env.sim.realVm(VMID)?.pid;
    assert.notEqual(pid, firstPid);
    const bootId = (await guestSays("cat /proc/sys/kernel/random/boot_id"))
      .trim();
    assert.notEqual(bootId, firstBootId);
    assert.equal(await guestSays("cat /data/note.txt"), "kept on disk");
  },
);

step("a shutdown the guest performs itself shows as stopped", async () => {
  const pid = env.sim.realVm(VMID)?.pid ?? 0;
  await guestSays("(sleep 1; poweroff) >/dev/null 2>&1 &");
  let status = "running";
  const deadline = Date.now() + 30_000;
  while (status !== "stopped" && Date.now() < deadline) {
    const r = await run("lookup", { vmid: VMID });
    assert.equal(r.status, "succeeded", r.error);
    status = String(written(r, `vm-${VMID}`).status);
    if (status !== "stopped") await new Promise((res) => setTimeout(res, 500));
  }
  assert.equal(status, "stopped");
  assert.equal(processExists(pid), false, "QEMU exited with the guest");
});

step(
  "shutdown with the agent up asks the agent (guest-shutdown) and the VM stops",
  async () => {
    await startAndWaitForAgent("boot 3");
    const vm = env.sim.realVm(VMID);
    const r = await run("shutdown", { vmid: VMID, timeoutSec: 60 });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(processExists(vm?.pid ?? 0), false);
    const consoleLog = await Deno.readTextFile(vm?.consolePath ?? "");
    assert.match(consoleLog, /shutdown: asked by the guest agent \(.*-P \+0 /);
  },
);

step(
  "reboot shuts the guest down and boots a new QEMU: new pid, new boot id",
  async () => {
    await startAndWaitForAgent("boot 4");
    const pid = env.sim.realVm(VMID)?.pid ?? 0;
    const bootId = (await guestSays("cat /proc/sys/kernel/random/boot_id"))
      .trim();
    const t0 = performance.now();
    const r = await run("reboot", { vmid: VMID, timeoutSec: 60 });
    assert.equal(r.status, "succeeded", r.error);
    note(
      `boot 5: reboot succeeded ${
        ((performance.now() - t0) / 1000).toFixed(1)
      } s after it was sent (QEMU pid ${env.sim.realVm(VMID)?.pid})`,
    );
    assert.equal(processExists(pid), false, "the old QEMU is gone");
    const newPid = env.sim.realVm(VMID)?.pid ?? 0;
    assert.notEqual(newPid, pid);
    assert.ok(processExists(newPid));
    // PVE's order: the qmreboot task ends with the VM down, then qm cleanup's qmstart boots it again.
    const kinds = env.sim.tasks().slice(-2).map((t) => `${t.type} ${t.user}`);
    assert.deepEqual(kinds, ["qmreboot root@pam!swamp", "qmstart root@pam"]);
    const r2 = await run("start", { vmid: VMID, waitForIp: true });
    assert.equal(r2.status, "succeeded", r2.error);
    const newBootId = (await guestSays("cat /proc/sys/kernel/random/boot_id"))
      .trim();
    assert.notEqual(newBootId, bootId);
  },
);

step(
  "suspend to RAM pauses QEMU (QMP query-status paused); resume runs the same boot on",
  async () => {
    const vm = env.sim.realVm(VMID)!;
    const bootId = await guestSays("cat /proc/sys/kernel/random/boot_id");
    const t0 = performance.now();
    const down = await run("suspend", { vmid: VMID });
    assert.equal(down.status, "succeeded", down.error);
    assert.equal(written(down, `vm-${VMID}`).qmpStatus, "paused");
    const qmp = await vm.qmp("query-status") as { status: string };
    assert.equal(qmp.status, "paused");
    const up = await run("resume", { vmid: VMID });
    assert.equal(up.status, "succeeded", up.error);
    assert.equal(written(up, `vm-${VMID}`).qmpStatus, "running");
    note(
      `suspend to RAM and resume: ${
        ((performance.now() - t0) / 1000).toFixed(1)
      } s (QEMU pid ${vm.pid} throughout)`,
    );
    assert.equal(env.sim.realVm(VMID)?.pid, vm.pid, "the same QEMU");
    assert.equal(
      await guestSays("cat /proc/sys/kernel/random/boot_id"),
      bootId,
    );
  },
);

step(
  "suspend to disk saves the state and quits QEMU; resume loads it into a new QEMU: the same boot",
  async () => {
    const pid = env.sim.realVm(VMID)?.pid ?? 0;
    const bootId = await guestSays(
      "echo kept > /tmp/hibernated; cat /proc/sys/kernel/random/boot_id",
    );
    const t0 = performance.now();
    const down = await run("suspend", {
      vmid: VMID,
      toDisk: true,
      stateStorage: "local-lvm",
    });
    assert.equal(down.status, "succeeded", down.error);
    const saved = written(down, `vm-${VMID}`);
    assert.equal(saved.status, "stopped");
    assert.equal(saved.lock, "suspended");
    assert.equal(processExists(pid), false, "QEMU quit after saving");
    assert.match(
      String(env.sim.guest(VMID)?.config.vmstate),
      new RegExp(`^local-lvm:vm-${VMID}-state-suspend-`),
    );
    const t1 = performance.now();
    const up = await run("resume", { vmid: VMID });
    assert.equal(up.status, "succeeded", up.error);
    note(
      `suspend to disk ${((t1 - t0) / 1000).toFixed(1)} s, resume from it ${
        ((performance.now() - t1) / 1000).toFixed(1)
      } s (QEMU pid ${pid} → ${env.sim.realVm(VMID)?.pid})`,
    );
    const resumed = written(up, `vm-${VMID}`);
    assert.equal(resumed.qmpStatus, "running");
    assert.equal(resumed.lock, undefined);
    assert.notEqual(env.sim.realVm(VMID)?.pid, pid);
    // What lived only in the guest's RAM (tmpfs) is there again: it resumed, it did not boot.
    assert.equal(
      await guestSays(
        "cat /tmp/hibernated; cat /proc/sys/kernel/random/boot_id",
      ),
      `kept\n${bootId}`,
    );
  },
);

step(
  "moveDisk mirrors the running VM's disk to another storage: the same QEMU runs on from the new file, the old one is gone",
  async () => {
    const vm = env.sim.realVm(VMID)!;
    const file = async () => {
      const blocks = await vm.qmp("query-block") as {
        device: string;
        inserted?: { file: string };
      }[];
      return blocks.find((b) => b.device === "drive-virtio0")?.inserted?.file;
    };
    const before = await file();
    const t0 = performance.now();
    const r = await run("moveDisk", {
      vmid: VMID,
      disk: "virtio0",
      storage: "local-zfs",
      delete: true,
    });
    assert.equal(r.status, "succeeded", r.error);
    note(
      `moveDisk of the running VM's virtio0 to local-zfs (drive-mirror, delete): ${
        secondsSince(t0)
      } s`,
    );
    assert.match(
      String(env.sim.guest(VMID)?.config.virtio0),
      new RegExp(`^local-zfs:vm-${VMID}-disk-\\d+,`),
    );
    assert.equal(env.sim.realVm(VMID)?.pid, vm.pid, "the same QEMU");
    const after = await file();
    assert.match(after ?? "", /\/local-zfs\//);
    assert.notEqual(after, before);
    await assert.rejects(Deno.stat(String(before)), Deno.errors.NotFound);
    // What the guest wrote before the move reads back from the new file, past its page cache.
    assert.equal(
      await guestSays("echo 3 > /proc/sys/vm/drop_caches; cat /data/note.txt"),
      "kept on disk",
    );
  },
);

step("stop quits QEMU (QMP quit) and the VM is recorded stopped", async () => {
  const pid = env.sim.realVm(VMID)?.pid ?? 0;
  const r = await run("stop", { vmid: VMID });
  assert.equal(r.status, "succeeded", r.error);
  assert.equal(written(r, `vm-${VMID}`).status, "stopped");
  assert.equal(processExists(pid), false);
});

step("teardown: the simulator closes with no QEMU left behind", async () => {
  await env.close();
  note(`layer total ${((performance.now() - began) / 1000).toFixed(1)} s`);
});
