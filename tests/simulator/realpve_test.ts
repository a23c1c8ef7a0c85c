/**
 * The simulator answers as a real PVE 9.2.11 node did. Every request of the node's transcript
 * (`../shared/realpve/`, see realpve.ts) is replayed, in order, against a simulator set up like
 * that node — one node `pve1`, one `dir` storage `local`, no bridge, the VMs its lists showed — and
 * each answer must have the node's status, the node's shape (keys and value types) and, for an
 * error or a failed task, the node's wording. Values are compared too, except where they depend on
 * the run or the machine (ids, times, digests, usage counters, the node's hardware), which compare
 * by shape only.
 *
 * Where the node's machine made the answer, the replay cannot reproduce it and says so
 * ({@link MACHINE}): the node had no `lvs` (so `GET …/disks/list` failed), Debian's QEMU (so a full
 * clone failed: that task's failure is given to the simulator, its log compared by shape), and a
 * VM without an OS (so the shutdown timed out: the simulated guest ignores ACPI). Task timing also
 * differs: a status the node showed `running` may already be `stopped` in the simulator (then the
 * final fields are not compared); one the node showed `stopped` is polled until it is.
 */
import assert from "node:assert/strict";
import { tokenHeader } from "../../simulator/sim_client.ts";
import {
  type SimOptions,
  type Simulator,
  startSimulator,
} from "../../simulator/simulator.ts";
import {
  differences,
  type NodeExchange,
  parsePrefix,
  readTranscript,
  type Rule,
} from "./realpve.ts";

/** The node's token (an API token without privilege separation of root@pam). */
const TOKEN = { id: "root@pam!probe", secret: "probe-secret" };

/** The node as the transcript shows it: pve1, `local` (dir, every content type), no bridge. */
function nodeLike(): SimOptions {
  return {
    nodes: ["pve1"],
    tokens: [TOKEN],
    storages: [{
      storage: "local",
      type: "dir",
      content: ["backup", "images", "vztmpl", "snippets", "iso", "rootdir"],
      total: 270553174016,
      used: 18177142784,
    }],
    bridges: { pve1: [] },
    // The VMs its lists showed besides the run's own.
    guests: [
      vm(100, "t100", 128, "local:100/vm-100-disk-0.raw,size=1G"),
      vm(101, "a", 512),
      vm(104, "t104", 64, "local:104/vm-104-disk-0.raw,size=1G"),
    ],
    broadcastIntervalMs: 0,
    // Long enough that a status the node showed running is mostly running here too; the node's
    // shutdown ran for its whole timeout.
    taskDurationMs: (t) => t.type === "qmshutdown" ? 3000 : 300,
  };
}

function vm(vmid: number, name: string, memory: number, scsi0?: string) {
  return {
    vmid,
    node: "pve1",
    type: "qemu" as const,
    name,
    status: "stopped" as const,
    config: {
      memory: String(memory),
      cores: 1,
      ...(scsi0 ? { scsi0 } : {}),
    },
  };
}

/** What the node's machine made, that a replay cannot: by request, why, and what is done instead. */
const MACHINE: {
  matches: (e: NodeExchange) => boolean;
  why: string;
  before?: (sim: Simulator, e: NodeExchange, all: NodeExchange[]) => void;
  skip?: boolean;
  /** The task it starts logs what the node's machine did: its log compares by shape. */
  logByShape?: boolean;
}[] = [
  {
    matches: (e) => e.path.endsWith("/disks/list"),
    why: "the node had no lvs: its 500 is its machine's, not PVE's",
    skip: true,
  },
  {
    matches: (e) =>
      e.method === "POST" && /\/clone$/.test(e.path) &&
      /full=1/.test(e.body ?? ""),
    why:
      "the node's QEMU (Debian's) lacks `zeroinit:`: its full clone failed; the failure is given to the simulator",
    before: (sim, e, all) =>
      sim.nextTask({ exitstatus: taskEnd(e, all), noEffect: true }),
    logByShape: true,
  },
  {
    matches: (e) => e.method === "POST" && e.path.endsWith("/status/shutdown"),
    why: "the node's VM had no OS: it ignored ACPI until the timeout",
    before: (sim, e) => sim.setGuest(vmidIn(e.path), { ignoresShutdown: true }),
  },
];

/** The exit status the node's task (started by `e`) ended with. */
function taskEnd(e: NodeExchange, all: NodeExchange[]): string {
  const upid = (parsePrefix(e.answer ?? "") as { data: string }).data;
  const end = all.map((x) =>
    parsePrefix(x.answer ?? "") as {
      data?: { upid?: string; exitstatus?: string };
    }
  )
    .find((a) => a?.data?.upid === upid && a.data.exitstatus !== undefined);
  return end?.data?.exitstatus ?? "OK";
}

function vmidIn(path: string): number {
  return Number(/\/qemu\/(\d+)\//.exec(path)?.[1]);
}

/** Values that depend on the run or the machine: compared by shape only. */
const VARYING = new Set([
  "digest",
  "smbios1",
  "vmgenid",
  "meta",
  "ctime",
  "uptime",
  "cpu",
  "mem",
  "memhost",
  "disk",
  "netin",
  "netout",
  "diskread",
  "diskwrite",
  "pid",
  "pstart",
  "starttime",
  "used",
  "avail",
  "free",
  "total",
  "used_fraction",
  "repoid",
  "version",
  "release",
]);

/** How the value at `at` (its key `key`) of an answer to `e` compares. */
function ruleFor(e: NodeExchange, failedClone: Set<string>) {
  return (at: string, key: string): Rule => {
    if (/\/nodes\/pve1\/status$/.test(e.path)) {
      // The node's hardware; how it booted (EFI adds `secureboot`) is its machine's.
      return key === "boot-info" ? "machine" : "shape";
    }
    if (VARYING.has(key) || key.startsWith("pressure")) return "shape";
    if ([...VARYING].some((v) => at.includes(`[key=${v}]`))) return "shape";
    if (key === "content") return "set"; // PVE lists a storage's content types unordered
    if (key === "upid" || (at === ".data" && e.method !== "GET")) return "upid";
    if (failedClone.has(taskOf(e.path) ?? "")) return "shape";
    return "exact";
  };
}

/** The UPID a task path names. */
function taskOf(path: string): string | undefined {
  const m = /\/tasks\/([^/]+)\//.exec(path);
  return m ? decodeURIComponent(m[1]) : undefined;
}

/** The simulator's answer to the node's request `e`, its UPIDs swapped for the simulator's. */
async function send(
  sim: Simulator,
  e: NodeExchange,
  upids: Map<string, string>,
): Promise<{ status: number; text: string }> {
  const path = e.path.replace(/UPID%3A[^/?]+/g, (m) => {
    const upid = decodeURIComponent(m);
    return encodeURIComponent(upids.get(upid) ?? upid);
  });
  const headers: Record<string, string> = {
    authorization: tokenHeader(TOKEN.id, TOKEN.secret),
  };
  if (e.body !== null) {
    headers["content-type"] = "application/x-www-form-urlencoded";
  }
  const res = await fetch(`${sim.url}${path}`, {
    method: e.method,
    headers,
    body: e.body ?? undefined,
  });
  return { status: res.status, text: await res.text() };
}

/** A task status the node showed stopped is read until the simulator's task stopped too. */
async function answerTo(
  sim: Simulator,
  e: NodeExchange,
  node: unknown,
  upids: Map<string, string>,
): Promise<{ status: number; text: string }> {
  const stopped = (text: string) =>
    (JSON.parse(text) as { data?: { status?: string } }).data?.status ===
      "stopped";
  const waits = /\/tasks\/[^/]+\/status$/.test(e.path) &&
    (node as { data?: { status?: string } }).data?.status === "stopped";
  const deadline = Date.now() + 15_000;
  for (;;) {
    const got = await send(sim, e, upids);
    if (
      !waits || got.status !== 200 || stopped(got.text) || Date.now() > deadline
    ) {
      return got;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

Deno.test("the simulator answers every request of the real node's transcript as the node did", async (t) => {
  const transcript = await readTranscript();
  const sim = await startSimulator(nodeLike());
  const upids = new Map<string, string>();
  const failedClone = new Set<string>();
  try {
    for (const [index, e] of transcript.entries()) {
      const machine = MACHINE.find((m) => m.matches(e));
      const name = `#${index} ${e.step}: ${e.method} ${
        e.path.replace("/api2/json", "")
      }`;
      const unanswered = e.error !== undefined || e.status === undefined;
      if (unanswered || machine?.skip) {
        const why = unanswered
          ? "the package gave up on it: the node's answer is not known"
          : machine?.why;
        await t.step({
          name: `${name} — not replayed: ${why}`,
          ignore: true,
          fn: () => {},
        });
        continue;
      }
      machine?.before?.(sim, e, transcript);
      const node = parsePrefix(e.answer ?? "");
      await t.step(name, async () => {
        const got = await answerTo(sim, e, node, upids);
        assert.equal(got.status, e.status, `status: ${got.text.slice(0, 300)}`);
        let mine = JSON.parse(got.text) as Record<string, unknown>;
        const theirs = node as Record<string, unknown>;
        const nodeUpid = e.method !== "GET" && typeof theirs.data === "string"
          ? theirs.data
          : undefined;
        if (nodeUpid?.startsWith("UPID:") && typeof mine.data === "string") {
          upids.set(nodeUpid, mine.data);
          if (machine?.logByShape) failedClone.add(nodeUpid);
        }
        mine = qmpAside(timingAside(theirs, mine));
        const found = differences(theirs, mine, ruleFor(e, failedClone));
        assert.deepEqual(
          found,
          [],
          `${machine ? `(${machine.why}) ` : ""}${found.join("\n")}`,
        );
      });
    }
  } finally {
    await sim.close();
  }
});

/**
 * A task the node still showed running that already ended in the simulator: its status is read as
 * running, without the fields only an ended task has (the simulator's task is quicker).
 */
function timingAside(
  node: Record<string, unknown>,
  sim: Record<string, unknown>,
): Record<string, unknown> {
  const n = node.data as Record<string, unknown> | undefined;
  const s = sim.data as Record<string, unknown> | undefined;
  if (
    n?.upid === undefined || n.status !== "running" || s?.status !== "stopped"
  ) return sim;
  const { exitstatus: _, ...rest } = s;
  return { ...sim, data: { ...rest, status: "running" } };
}

/**
 * What QMP tells of a running VM (vmstatus `full`: block stats, machine, QEMU version): the node's
 * QEMU (Debian's) does not answer `query-proxmox-support`, and vmstatus drops the queries queued
 * after it, so the node never shows these; the simulator, like PVE's QEMU, does.
 */
function qmpAside(sim: Record<string, unknown>): Record<string, unknown> {
  const data = sim.data as Record<string, unknown> | undefined;
  if (data?.status !== "running" || data.qmpstatus === undefined) return sim;
  const { diskread: _r, diskwrite: _w, ...rest } = data;
  delete rest["running-qemu"];
  delete rest["running-machine"];
  return { ...sim, data: rest };
}
