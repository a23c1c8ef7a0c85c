/**
 * A Proxmox VE API simulator for tests: `/api2/json` with PVE's answer shapes,
 * token auth and permissions, tasks, HA, faults and latency, and guest agent
 * calls served by a real qemu-ga (see qga.ts).
 *
 * Layout: a Deno.serve server on an internal port does the HTTP work; the
 * public port (sim.url) is a byte relay in front of it (frontdoor.ts) that also
 * terminates TLS and can drop a client connection for "reset" faults.
 *
 * @module
 */

import { TokenTable } from "./auth.ts";
import type { SimCore } from "./context.ts";
import {
  echoResponse,
  echoText,
  FaultQueue,
  withEchoedLine,
} from "./faults.ts";
import { FrontDoor } from "./frontdoor.ts";
import { errorResponse, JSON_TYPE } from "./http.ts";
import { mergeParams, parseBody } from "./params.ts";
import { Router } from "./router.ts";
import { Broadcast, PVESTATD_INTERVAL_MS } from "./broadcast.ts";
import { ConformanceLog } from "./schema/conformance.ts";
import { accessRoutes } from "./routes_access.ts";
import { firewallRoutes } from "./routes_firewall.ts";
import { haRoutes } from "./routes_ha.ts";
import { groupsOf, rulesOf, type SimGroup, type SimRule } from "./ha.ts";
import type { GuestFirewall } from "./firewall.ts";
import { agentRoutes } from "./routes_agent.ts";
import { clusterRoutes } from "./routes_cluster.ts";
import { configRoutes } from "./routes_config.ts";
import { lifecycleRoutes } from "./routes_lifecycle.ts";
import { moveRoutes } from "./routes_move.ts";
import { nodeRoutes } from "./routes_node.ts";
import { nodeFactRoutes } from "./routes_node_facts.ts";
import { containerSetupOf, lxcRoutes } from "./routes_lxc.ts";
import { powerRoutes } from "./routes_power.ts";
import { suspendRoutes } from "./routes_suspend.ts";
import { snapshotRoutes } from "./routes_snapshot.ts";
import { migrateRoutes } from "./routes_migrate.ts";
import { agentFileRoutes } from "./routes_agent_files.ts";
import { storageRoutes } from "./routes_storage.ts";
import { downloadRoutes } from "./routes_download.ts";
import { qemuCreateRoutes } from "./routes_qemu_create.ts";
import { taskListRoutes } from "./routes_tasklist.ts";
import { taskRoutes } from "./routes_tasks.ts";
import { RealGuests } from "./real_guests.ts";
import type { RealVm } from "./real_vm.ts";
import { templateRoutes } from "./routes_template.ts";
import { rebootRoutes } from "./routes_reboot.ts";
import { cloudinitRoutes } from "./routes_cloudinit.ts";
import { backupRoutes } from "./routes_backup.ts";
import { ClusterState } from "./state.ts";
import { NodeResources, type StorageState } from "./storage.ts";
import { TaskManager, type TaskRecord } from "./tasks.ts";
import { Timers } from "./timers.ts";
import type { ContainerSetup, SimBridge } from "./node_types.ts";
import type {
  GuestState,
  RequestRecord,
  SimFault,
  SimGuest,
  SimOptions,
  TaskOverride,
} from "./types.ts";

/**
 * The reads whose answers the request log keeps (`RequestRecord.answer`): a guest's state, config
 * (and pending changes) and snapshot list, and a storage's content, so a test can tell what PVE
 * showed at each read (the fault matrix's record check).
 */
const KEPT_ANSWER =
  /\/(qemu|lxc)\/\d+\/(status\/current|snapshot|config|pending)$|\/storage\/[^/]+\/content$/;

/** The `data` of an answer, when it is JSON (a copy; the response itself is untouched). */
async function keptAnswer(res: Response): Promise<unknown> {
  try {
    return (JSON.parse(await res.clone().text()) as { data?: unknown }).data;
  } catch {
    return undefined;
  }
}

export type * from "./types.ts";
export type * from "./node_types.ts";
export type { StorageState } from "./storage.ts";

/** A running simulator. */
export interface Simulator {
  /** Base URL, e.g. `http://127.0.0.1:40123` (append `/api2/json/...`). */
  readonly url: string;
  /** Every request so far, in arrival order (Authorization never recorded). */
  readonly requests: RequestRecord[];
  /** How each routed request and its answer held against PVE's schema. */
  readonly conformance: ConformanceLog;
  /** Client connections accepted so far (each one a handshake the node served). */
  connections(): number;
  /** The live state of a guest (mutable), or undefined. */
  guest(vmid: number): GuestState | undefined;
  /**
   * Guest `vmid`'s firewall config as PVE last wrote it (options, rules, aliases, IP sets), or
   * undefined when it has none (no `.fw` file).
   */
  firewall(vmid: number): GuestFirewall | undefined;
  /** HA rule `id` as rules.cfg holds it (PVE 9), or undefined. */
  haRule(id: string): SimRule | undefined;
  /** HA group `id` as groups.cfg holds it (PVE 8), or undefined. */
  haGroup(id: string): SimGroup | undefined;
  /** Adds a guest (throws if the VMID exists). */
  addGuest(g: SimGuest): GuestState;
  /** Removes a guest; no-op when absent. */
  removeGuest(vmid: number): void;
  /** Changes a guest; a `status` change behaves like a start/stop (uptime, pid, agent pids). */
  setGuest(vmid: number, patch: Partial<SimGuest>): GuestState;
  /** Queues an outcome for the next task created. */
  nextTask(override: TaskOverride): void;
  /** A task the simulator created, by UPID. */
  task(upid: string): TaskRecord | undefined;
  /** Every task the simulator created, in creation order. */
  tasks(): TaskRecord[];
  /**
   * Storage `storage` as node `node` sees it (mutable: `total`, `used`,
   * `active`, `disabled`, `content`, `templates`…), or undefined when it is not
   * available there. A shared storage is the same object on every node.
   */
  storage(node: string, storage: string): StorageState | undefined;
  /** The bridges of `node` (the live list: push, remove or set `active: false`). */
  bridges(node: string): SimBridge[];
  /** The bytes an import wrote into guest volume `volid` (qemu create's `import-from`), if any. */
  volumeData(volid: string): Uint8Array | undefined;
  /** What container `vmid`'s OS received when the simulator created it (ssh keys, password). */
  containerSetup(vmid: number): ContainerSetup | undefined;
  /** The running QEMU VM of a guest marked `real` (its pid, QMP, agent), or undefined. */
  realVm(vmid: number): RealVm | undefined;
  /** Adds a fault for the next matching requests. */
  fault(fault: SimFault): void;
  /** Sets the delay added to every request from now on. */
  setLatency(ms: number): void;
  /** Stops serving and frees every socket and timer, and kills real VMs (the agent stays the caller's). */
  close(): Promise<void>;
}

const ROUTES = [
  ...clusterRoutes,
  ...powerRoutes,
  ...suspendRoutes,
  ...configRoutes,
  ...lifecycleRoutes,
  ...moveRoutes,
  ...agentRoutes,
  ...taskRoutes,
  ...nodeRoutes,
  ...nodeFactRoutes,
  ...lxcRoutes,
  ...storageRoutes,
  ...downloadRoutes,
  ...qemuCreateRoutes,
  ...templateRoutes,
  ...rebootRoutes,
  ...cloudinitRoutes,
  ...taskListRoutes,
  ...snapshotRoutes,
  ...backupRoutes,
  ...migrateRoutes,
  ...agentFileRoutes,
  ...accessRoutes,
  ...firewallRoutes,
  ...haRoutes,
];

/** Every endpoint the simulator serves, as `"<METHOD> <template>"`. */
export function simulatorEndpoints(): string[] {
  return new Router(ROUTES).endpoints();
}

/** Starts a simulator on 127.0.0.1, a free port; real guests declared running are booted first. */
export async function startSimulator(opts: SimOptions): Promise<Simulator> {
  const timers = new Timers();
  const state = new ClusterState(opts.nodes, opts.guests ?? []);
  if (opts.clusterFirewall) state.clusterFirewall = { enable: 1 };
  for (const alias of opts.clusterAliases ?? []) {
    state.clusterAliases[alias.name.toLowerCase()] = { ...alias };
  }
  const tasks = new TaskManager(timers, opts.taskDurationMs ?? 50);
  tasks.listLagMs = opts.taskListLagMs ?? 0;
  tasks.guestOf = (vmid) => state.get(vmid);
  const workers = opts.capacity && new Workers(opts.capacity.workers);
  const resources = new NodeResources(state, opts.storages, opts.bridges);
  if (!opts.realGuests && opts.guests?.some((g) => g.real)) {
    throw new Error(
      "simulator: a guest is marked real but no realGuests image was given",
    );
  }
  const real = opts.realGuests && new RealGuests(opts.realGuests, state, tasks);
  try {
    await real?.bootDeclared();
  } catch (err) {
    await real?.close();
    throw err;
  }
  const core: SimCore = {
    state,
    tasks,
    timers,
    agent: opts.agent,
    real,
    resources,
    broadcast: new Broadcast(
      state,
      opts.broadcastIntervalMs ?? PVESTATD_INTERVAL_MS,
    ),
    conformance: new ConformanceLog(opts.conformance ?? false),
    nodeFacts: opts.nodeFacts,
    major: opts.pveVersion ?? 9,
  };
  const router = new Router(ROUTES);
  const tokens = new TokenTable(opts.tokens, core.major);
  const faults = new FaultQueue();
  const requests: RequestRecord[] = [];
  let latencyMs = opts.latencyMs ?? 0;

  async function handle(
    req: Request,
    info: Deno.ServeHandlerInfo<Deno.NetAddr>,
  ): Promise<Response> {
    const url = new URL(req.url);
    const segments = url.pathname.split("/").slice(1).map(decodeSegment);
    while (segments.length > 0 && segments[segments.length - 1] === "") {
      segments.pop();
    }
    const path = "/" + segments.join("/");
    const body = await req.text();
    // The whole request is in: without keep-alive it is this connection's last.
    if (!opts.keepAlive) front.finish(info.remoteAddr.port, info.completed);
    let form: [string, string][] = [];
    let badBody = false;
    try {
      form = parseBody(body, req.headers.get("content-type"));
    } catch {
      badBody = true;
    }
    const user = tokens.authenticate(req.headers.get("authorization"));
    const record: RequestRecord = {
      method: req.method,
      path,
      query: Object.fromEntries(url.searchParams),
      form,
      authorized: user !== undefined,
      status: 0,
      at: performance.now(),
    };
    requests.push(record);
    if (!await timers.sleep(latencyMs)) return dropped(info);
    // A node serves a few requests at once; the rest wait for a worker, in arrival order.
    const worker = workers && await workers.take();
    try {
      if (worker) {
        record.queuedMs = performance.now() - record.at - latencyMs;
        if (!await timers.sleep(opts.capacity!.serviceMs)) {
          return dropped(info);
        }
      }
      return await serve(req, info, record, {
        url,
        segments,
        path,
        form,
        badBody,
        user,
      });
    } finally {
      worker?.();
    }
  }

  /** Answers one request that a worker took up. */
  async function serve(
    req: Request,
    info: Deno.ServeHandlerInfo<Deno.NetAddr>,
    record: RequestRecord,
    { url, segments, path, form, badBody, user }: Parsed,
  ): Promise<Response> {
    const fault = faults.take(req.method, path);
    const late = fault && (fault.kind === "reset" || fault.kind === "hang") &&
      fault.afterHandler;
    const authorization = req.headers.get("authorization") ?? "";
    const echo = fault?.kind === "echo"
      ? echoText(fault, authorization, requests)
      : undefined;
    const echoLine = fault?.kind === "echo" && fault.into === "log";
    if (fault?.kind === "echo" && !echoLine) {
      const res = echoResponse(fault, echo ?? "");
      record.status = res.status;
      return res;
    }
    if (
      fault && !late && fault.kind !== "echo" && fault.kind !== "stores"
    ) {
      if (fault.kind === "reset") return dropped(info);
      if (fault.kind === "hang") {
        await timers.untilClosed();
        return dropped(info);
      }
      const res = fault.kind === "status"
        ? errorResponse(fault.status, fault.message)
        : new Response(fault.body, {
          status: fault.kind === "body" ? fault.status ?? 200 : 200,
          headers: { "content-type": fault.contentType ?? JSON_TYPE },
        });
      record.status = res.status;
      return res;
    }
    let res: Response;
    if (segments[0] !== "api2" || segments[1] !== "json") {
      res = errorResponse(
        501,
        `Method '${req.method} ${path}' not implemented`,
      );
    } else if (!user) {
      // PVE authenticates before it even looks the path up.
      res = errorResponse(401, "authentication failure");
    } else if (badBody) {
      res = errorResponse(
        400,
        "Parameter verification failed - invalid JSON body",
      );
    } else {
      // A `stores` fault is taken by the handler that writes a new guest's config (dropped if
      // the request never reached one).
      const stores = fault?.kind === "stores" ? fault.config : undefined;
      if (stores) state.stores = stores;
      try {
        res = await router.dispatch(
          core,
          user,
          req.method,
          segments.slice(2),
          mergeParams(url.searchParams, form),
        );
      } finally {
        if (stores && state.stores === stores) state.stores = undefined;
      }
    }
    if (late) {
      // The handler ran (its effect happened); only its answer is lost.
      await res.body?.cancel();
      if (fault.kind === "hang") await timers.untilClosed();
      return dropped(info);
    }
    if (echoLine) res = await withEchoedLine(res, echo ?? "");
    record.status = res.status;
    if (req.method === "GET" && res.status === 200 && KEPT_ANSWER.test(path)) {
      record.answer = await keptAnswer(res);
    }
    return res;
  }

  /** Drops the client's connection; the returned response goes nowhere. */
  function dropped(info: Deno.ServeHandlerInfo<Deno.NetAddr>): Response {
    front.reset(info.remoteAddr.port);
    return new Response(null, { status: 503 });
  }

  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    onListen: () => {},
  }, async (req, info) => {
    try {
      return await handle(req, info);
    } catch (err) {
      return errorResponse(
        500,
        `simulator internal error: ${(err as Error).stack ?? err}`,
      );
    }
  });
  // Declared after the server because it needs its port; the handlers above
  // only touch it once a client connected through it.
  const front = new FrontDoor(server.addr.port, opts.tls);
  let closing: Promise<void> | undefined;

  const sim: Simulator = {
    url: `${opts.tls ? "https" : "http"}://127.0.0.1:${front.port}`,
    requests,
    connections: () => front.accepted,
    conformance: core.conformance,
    guest: (vmid) => state.get(vmid),
    firewall: (vmid) => state.firewalls.get(vmid),
    haRule: (id) => rulesOf(core).get(id),
    haGroup: (id) => groupsOf(core).get(id),
    addGuest: (g) => {
      if (g.real && !real) {
        throw new Error(
          `simulator: guest ${g.vmid} is marked real but no realGuests image was given`,
        );
      }
      return state.add(g);
    },
    removeGuest: (vmid) => state.remove(vmid),
    setGuest: (vmid, patch) => {
      const g = state.get(vmid);
      if (g && real?.isReal(g) && patch.status !== undefined) {
        throw new Error(
          `simulator: guest ${vmid} is real: change its power state through the API`,
        );
      }
      return state.patch(vmid, patch);
    },
    nextTask: (override) => tasks.enqueueOverride(override),
    task: (upid) => tasks.find(upid),
    tasks: () => tasks.all(),
    storage: (node, storage) => resources.get(node, storage),
    bridges: (node) => resources.bridges(node),
    volumeData: (volid) => resources.volumeData.get(volid),
    containerSetup: (vmid) => containerSetupOf(state, vmid),
    realVm: (vmid) => real?.vm(vmid),
    fault: (fault) => faults.add(fault),
    setLatency: (ms) => {
      latencyMs = ms;
    },
    close: () => {
      closing ??= (async () => {
        // Order matters: wake sleepers and hangs, drop clients, then let the
        // server finish its (now answer-less) handlers.
        timers.close();
        await front.close();
        await server.shutdown();
        await real?.close();
      })();
      return closing;
    },
  };
  return sim;
}

/** A request as the front of the node read it. */
interface Parsed {
  url: URL;
  segments: string[];
  path: string;
  form: [string, string][];
  badBody: boolean;
  user: ReturnType<TokenTable["authenticate"]>;
}

/** A node's API workers: `take` resolves, in arrival order, with the function that frees one. */
class Workers {
  #free: number;
  readonly #waiting: (() => void)[] = [];

  /** @param count workers serving at once */
  constructor(count: number) {
    this.#free = Math.max(1, count);
  }

  async take(): Promise<() => void> {
    if (this.#free > 0) this.#free--;
    else await new Promise<void>((resolve) => this.#waiting.push(resolve));
    let freed = false;
    return () => {
      if (freed) return;
      freed = true;
      const next = this.#waiting.shift();
      if (next) next();
      else this.#free++;
    };
  }
}

function decodeSegment(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
