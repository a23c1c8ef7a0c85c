/**
 * The simulated cluster: nodes and guests, and the few state transitions every
 * route shares (start, stop). Routes read and change guests only through here.
 *
 * @module
 */

import { regenerate } from "./cloudinit.ts";
import { applyPending, parseTags } from "./config.ts";
import type { FwEntry, GuestFirewall } from "./firewall.ts";
import type { AgentMode, ConfigValue, GuestState, SimGuest } from "./types.ts";

/** Whether a `smbios1` value carries a uuid. */
function hasUuid(smbios1: unknown): boolean {
  return typeof smbios1 === "string" && /(^|,)uuid=/.test(smbios1);
}

/** `smbios1` with its uuid replaced by (or set to) `uuid`, other fields kept. */
export function withUuid(smbios1: unknown, uuid: string): string {
  const fields = typeof smbios1 === "string" && smbios1 !== ""
    ? smbios1.split(",").filter((f) => !f.startsWith("uuid="))
    : [];
  return [`uuid=${uuid}`, ...fields].join(",");
}

/** Turns a test's guest description into the simulator's live state (copies everything). */
export function normalizeGuest(g: SimGuest): GuestState {
  const config = { ...(g.config ?? {}) };
  // name/tags/lock live outside config (see GuestState); a test may still
  // pass them in config, as they appear in a real config file.
  const tags = g.tags ??
    (typeof config.tags === "string" ? parseTags(config.tags) : []);
  const lock = g.lock ??
    (typeof config.lock === "string" ? config.lock : undefined);
  delete config.tags;
  delete config.name;
  delete config.lock;
  const agent: AgentMode = g.agent ??
    (config.agent && !/^(0|enabled=0)/.test(String(config.agent))
      ? "running"
      : "none");
  // Every qemu guest PVE creates has an smbios1 uuid: tests that do not care
  // about identity still get one, random so that two guests never share it.
  if (g.type === "qemu" && !hasUuid(config.smbios1)) {
    config.smbios1 = withUuid(config.smbios1, crypto.randomUUID());
  }
  const state: GuestState = {
    ...g,
    tags: [...tags],
    lock,
    agent,
    config,
    pending: { ...(g.pending ?? {}) },
    pendingDelete: [],
    metrics: { ...(g.metrics ?? {}) },
    ips: [...(g.ips ?? [])],
    ha: g.ha ? { ...g.ha } : undefined,
    snapshots: structuredClone(g.snapshots ?? {}),
  };
  if (state.status === "running") {
    state.startedAt = Date.now();
    state.pid = fakePid();
  }
  return state;
}

let nextFakePid = 10000 + Math.floor(Math.random() * 20000);

/** A plausible host pid for a QEMU process or task worker. */
export function fakePid(): number {
  return nextFakePid++;
}

/** Guests and nodes of the simulated cluster. */
export class ClusterState {
  /** Node names; paths naming another node fail like an unknown host. */
  readonly nodes: readonly string[];
  readonly #guests = new Map<number, GuestState>();
  /** VMIDs a running clone task will create: taken, though not yet visible. */
  readonly #reserved = new Set<number>();
  /** Agent exec pid → VMID that started it (the agent is shared by all guests). */
  readonly #execOwner = new Map<number, number>();
  /** Exec pids whose guest stopped since: its agent restarted and knows them no more. */
  readonly #forgotten = new Set<number>();
  /**
   * The values of a `stores` fault on the request being handled (set around its dispatch): the
   * create or clone handler takes them for the config its worker writes (faults.ts `storedInstead`).
   */
  stores?: Record<string, ConfigValue>;
  /** Each guest's firewall config (`/etc/pve/firewall/<vmid>.fw`), by VMID; absent = no file. */
  readonly firewalls = new Map<number, GuestFirewall>();
  /** The cluster firewall's options (`cluster.fw` `[OPTIONS]`); `enable` absent = disabled. */
  clusterFirewall: FwEntry = {};
  /** The datacenter's aliases (`cluster.fw` `[ALIASES]`), by lower-cased name. */
  clusterAliases: Record<string, FwEntry> = {};

  /** Takes the request's `stores` values (once). */
  takeStores(): Record<string, ConfigValue> | undefined {
    const stores = this.stores;
    this.stores = undefined;
    return stores;
  }

  /** @param nodes cluster node names; @param guests initial guests */
  constructor(nodes: readonly string[], guests: readonly SimGuest[]) {
    this.nodes = [...nodes];
    for (const g of guests) this.add(g);
  }

  /** Whether `node` is a cluster node. */
  hasNode(node: string): boolean {
    return this.nodes.includes(node);
  }

  /** The live guest, or undefined. */
  get(vmid: number): GuestState | undefined {
    return this.#guests.get(vmid);
  }

  /** All guests, by VMID. */
  all(): GuestState[] {
    return [...this.#guests.values()].sort((a, b) => a.vmid - b.vmid);
  }

  /** Adds a guest; throws if its VMID exists or its node is unknown. */
  add(g: SimGuest): GuestState {
    if (this.#guests.has(g.vmid)) {
      throw new Error(`simulator: VMID ${g.vmid} already exists`);
    }
    if (!this.hasNode(g.node)) {
      throw new Error(`simulator: guest ${g.vmid} on unknown node ${g.node}`);
    }
    const state = normalizeGuest(g);
    this.#guests.set(g.vmid, state);
    return state;
  }

  /** Removes a guest (no-op when absent), its firewall config, and forgets its agent pids. */
  remove(vmid: number): void {
    this.#guests.delete(vmid);
    // Destroying a guest removes its firewall config too (pve-firewall
    // `src/PVE/Firewall/Helpers.pm` remove_vmfw_conf, called by the destroy handlers).
    this.firewalls.delete(vmid);
    this.#forgetExecPids(vmid);
  }

  /** Notes that guest `vmid` started agent exec `pid`. */
  recordExec(pid: number, vmid: number): void {
    this.#execOwner.set(pid, vmid);
    this.#forgotten.delete(pid);
  }

  /**
   * Whether guest `vmid`'s (simulated) agent cannot know `pid` although the real,
   * shared agent may: started by another guest, or before this guest stopped.
   */
  execPidForeign(pid: number, vmid: number): boolean {
    const owner = this.#execOwner.get(pid);
    return owner !== undefined && (owner !== vmid || this.#forgotten.has(pid));
  }

  /**
   * Applies a test's patch to a live guest. A change of `status` goes through
   * start/stop so uptime, pid and agent pids stay consistent.
   */
  patch(vmid: number, patch: Partial<SimGuest>): GuestState {
    const g = this.#guests.get(vmid);
    if (!g) throw new Error(`simulator: no guest ${vmid}`);
    const { status, ...rest } = patch;
    Object.assign(g, rest);
    if (status === "running" && g.status !== "running") this.start(g);
    if (status === "stopped" && g.status !== "stopped") this.stop(g);
    return g;
  }

  /** Whether a VMID is used by a guest or by a clone in progress. */
  isTaken(vmid: number): boolean {
    return this.#guests.has(vmid) || this.#reserved.has(vmid);
  }

  /** Holds a VMID for a clone task. */
  reserve(vmid: number): void {
    this.#reserved.add(vmid);
  }

  /** Releases a VMID held by reserve(). */
  release(vmid: number): void {
    this.#reserved.delete(vmid);
  }

  /** Boots a guest: running, fresh uptime and pid, pending changes applied (PVE applies them at start). */
  start(g: GuestState): void {
    g.status = "running";
    g.qmpstatus = undefined;
    g.startedAt = Date.now();
    g.metrics.uptime = 0;
    g.pid = fakePid();
    g.boots = (g.boots ?? 0) + 1;
    applyPending(g);
    // vm_start regenerates the cloud-init drive (apply_cloudinit_config).
    if (g.type === "qemu") {
      g.cloudinitBooted = regenerate(g) ? g.cloudinitGenerated : undefined;
    }
  }

  /** Powers a guest off; the agent inside forgets its exec results, as after a real reboot. */
  stop(g: GuestState): void {
    g.status = "stopped";
    g.qmpstatus = undefined;
    g.startedAt = undefined;
    g.pid = undefined;
    this.#forgetExecPids(g.vmid);
  }

  #forgetExecPids(vmid: number): void {
    for (const [pid, owner] of this.#execOwner) {
      if (owner === vmid) this.#forgotten.add(pid);
    }
  }
}
