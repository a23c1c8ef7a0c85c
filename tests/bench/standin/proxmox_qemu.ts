/**
 * A STAND-IN for the upstream `@stateless/proxmox` qemu model, written in this project for the
 * bench's own tests (`tests/bench/compare_test.ts`). It is not upstream's code. It reproduces, over
 * the api transport only, the false successes the upstream bug report documents
 * (`../shared/docs/upstream-report.md`) and the interface facts the bench relies on:
 *
 * - `guestExec` records the command's outcome in `vm-<vmid>-exec` and succeeds whatever the exit
 *   code (a non-zero exit or a signal included); it fails only when the command outlives
 *   `timeoutSec` or the call fails. It declares no `allowNonZeroExit`.
 * - `lookup` reads the guest's status once; when that read fails it writes nothing and succeeds.
 * - `start` succeeds once its task ends OK, never checking that the guest runs (so an HA start
 *   that only queues "succeeds").
 * - `sync` lists the node's guests with one request.
 *
 * To compare against the real upstream package instead, pass a folder of it that you fetched
 * yourself (never committed): `PROXMOX_BASELINE=<dir>` for the test, `--baseline <dir>` for
 * `deno task bench`.
 *
 * @module
 */
import { z } from "npm:zod@4";

const GlobalArgs = z.object({
  name: z.string().min(1),
  transport: z.object({
    kind: z.literal("api"),
    node: z.string().min(1),
    apiUrl: z.string().min(1),
    tokenId: z.string().min(1),
    tokenSecret: z.string().min(1),
  }),
  pollIntervalSec: z.number().int().positive().default(3),
});
type GlobalArgs = z.infer<typeof GlobalArgs>;

const Vmid = z.number().int().min(100);

interface Ctx {
  globalArgs: GlobalArgs;
  writeResource(
    spec: string,
    instance: string,
    data: Record<string, unknown>,
  ): Promise<unknown>;
}

type Answer = Record<string, unknown>;

/** One call below `/nodes/<node>`: its `data`; throws on an HTTP error. */
async function pve(
  g: GlobalArgs,
  method: "GET" | "POST",
  path: string,
  body?: Answer,
): Promise<unknown> {
  const t = g.transport;
  const url = `${t.apiUrl}/api2/json/nodes/${t.node}${path}`;
  const res = await fetch(url, {
    method,
    headers: {
      authorization: `PVEAPIToken=${t.tokenId}=${t.tokenSecret}`,
      "content-type": "application/json",
    },
    body: body && JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return (JSON.parse(text) as { data: unknown }).data;
}

const sleep = (sec: number) =>
  new Promise((done) => setTimeout(done, sec * 1000));

const Guest = z.object({
  vmid: z.number(),
  node: z.string(),
  status: z.string(),
  lastOperation: z.string(),
  recordedAt: z.string(),
});

const Exec = z.object({
  vmid: z.number(),
  node: z.string(),
  command: z.array(z.string()),
  exited: z.boolean(),
  exitCode: z.number().optional(),
  stdout: z.string().optional(),
  stderr: z.string().optional(),
  recordedAt: z.string(),
});

/** Writes the `vm-<vmid>` record. */
function writeGuest(ctx: Ctx, vmid: number, status: unknown, op: string) {
  return ctx.writeResource("guest", `vm-${vmid}`, {
    vmid,
    node: ctx.globalArgs.transport.node,
    status: String(status),
    lastOperation: op,
    recordedAt: new Date().toISOString(),
  });
}

/** One status read, recorded; a failed read writes nothing and still succeeds (the false success). */
async function record(ctx: Ctx, vmid: number, op: string) {
  const path = `/qemu/${vmid}/status/current`;
  let cur: Answer;
  try {
    cur = await pve(ctx.globalArgs, "GET", path) as Answer;
  } catch {
    return { dataHandles: [] };
  }
  return { dataHandles: [await writeGuest(ctx, vmid, cur.status, op)] };
}

/** The stand-in qemu model. */
export const model = {
  type: "@stateless/proxmox/qemu",
  version: "2026.06.10.1",
  globalArguments: GlobalArgs,
  resources: {
    guest: { schema: Guest, lifetime: "infinite", garbageCollection: 20 },
    exec: { schema: Exec, lifetime: "infinite", garbageCollection: 20 },
  },
  methods: {
    lookup: {
      description: "Read a guest's status (one read).",
      arguments: z.object({ vmid: Vmid }),
      execute: (args: { vmid: number }, ctx: Ctx) =>
        record(ctx, args.vmid, "lookup"),
    },
    sync: {
      description: "Record every qemu guest of the node (one list request).",
      arguments: z.object({}),
      execute: async (_args: unknown, ctx: Ctx) => {
        const list = await pve(ctx.globalArgs, "GET", "/qemu") as Answer[];
        const dataHandles = [];
        for (const guest of list) {
          dataHandles.push(
            await writeGuest(ctx, Number(guest.vmid), guest.status, "sync"),
          );
        }
        return { dataHandles };
      },
    },
    start: {
      description: "Start a guest; done when the task ends OK.",
      arguments: z.object({ vmid: Vmid }),
      execute: async (args: { vmid: number }, ctx: Ctx) => {
        const g = ctx.globalArgs;
        const upid = await pve(g, "POST", `/qemu/${args.vmid}/status/start`);
        const path = `/tasks/${encodeURIComponent(String(upid))}/status`;
        for (;;) {
          const task = await pve(g, "GET", path) as Answer;
          if (task.status === "stopped") {
            if (task.exitstatus !== "OK") {
              throw new Error(`start task failed: ${task.exitstatus}`);
            }
            // Whether the guest now runs is never asked: the recorded status is whatever it is.
            return record(ctx, args.vmid, "start");
          }
          await sleep(g.pollIntervalSec);
        }
      },
    },
    guestExec: {
      description:
        "Run a command in the guest; its exit code is recorded, not judged.",
      arguments: z.object({
        vmid: Vmid,
        command: z.array(z.string().min(1)).min(1),
        timeoutSec: z.number().int().positive().default(30),
      }),
      execute: async (
        args: { vmid: number; command: string[]; timeoutSec: number },
        ctx: Ctx,
      ) => {
        const g = ctx.globalArgs;
        const base = `/qemu/${args.vmid}/agent`;
        const { pid } = await pve(g, "POST", `${base}/exec`, {
          command: args.command,
        }) as { pid: number };
        const statusPath = `${base}/exec-status?pid=${pid}`;
        const deadline = Date.now() + args.timeoutSec * 1000;
        for (;;) {
          const st = await pve(g, "GET", statusPath) as Answer;
          if (st.exited) {
            // The false success: the exit code is stored (a signal not even that), never judged.
            const handle = await ctx.writeResource(
              "exec",
              `vm-${args.vmid}-exec`,
              {
                vmid: args.vmid,
                node: g.transport.node,
                command: args.command,
                exited: true,
                exitCode: st.exitcode,
                stdout: st["out-data"],
                stderr: st["err-data"],
                recordedAt: new Date().toISOString(),
              },
            );
            return { dataHandles: [handle] };
          }
          if (Date.now() > deadline) {
            throw new Error(
              `pid ${pid} still running after ${args.timeoutSec} s`,
            );
          }
          await sleep(g.pollIntervalSec);
        }
      },
    },
  },
};
