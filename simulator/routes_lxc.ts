import { ctConfigPerm, ctCreatePerm } from "./perl_rules.ts";
/**
 * LXC container endpoints (`/nodes/{node}/lxc/...`): list, create, status,
 * start/stop/shutdown, config (GET/PUT, pending), resize, delete, interfaces.
 *
 * What follows pve-container (src/PVE/API2/LXC.pm, API2/LXC/Status.pm,
 * API2/LXC/Config.pm; PVE 8/9) and differs from qemu:
 * - start of a running CT and stop/shutdown of a stopped one are refused
 *   synchronously (500 `CT <n> already running` / `CT <n> not running`), before
 *   the HA check. Start does not load the config first: a CT that does not
 *   exist on the node (or lives on another one) gets a UPID whose task fails
 *   `Configuration file 'nodes/<node>/lxc/<n>.conf' does not exist`.
 * - create locks a new config at once (`lock: create`, visible in lists and
 *   status) before forking `vzcreate`; the task fills the config and drops the
 *   lock, or removes the CT when it fails (`unable to create CT <n> - <why>`).
 *   With `start=1` the create task ends OK and a SEPARATE `vzstart` task starts
 *   the CT (pve-container calls vm_start, which forks its own worker).
 * - a missing/down bridge is not checked at create: the start task fails
 *   `startup for container '<n>' failed` (its log names the bridge), and a
 *   hotplugged netN on a running CT is refused 400 `unable to hotplug netN:
 *   bridge '<b>' does not exist`.
 * - `skiplock` is root@pam only: every API token gets 400.
 * - no guest agent: the qemu agent paths do not exist for containers (501).
 *
 * @module
 */

import { pveConfigValues, pvePendingRows } from "./schema/values.ts";
import { checkVmPerm, type Ctx, type Route } from "./context.ts";
import {
  diskBytes,
  formatSize,
  RESIZE_SIZE,
  resizedBytes,
  withDiskOption,
} from "./disks.ts";
import { parseTags } from "./config.ts";
import { storedInstead } from "./faults.ts";
import { ApiError, paramError } from "./http.ts";
import {
  applyCtChange,
  type CtChange,
  ctConfigWithPending,
  ctDigest,
  ctOptionSpec,
  ctPendingRows,
  ctStatus,
  ctValue,
  currentCtConfig,
  isCtOption,
  parseNet,
  printNet,
} from "./lxc.ts";
import type { ContainerSetup } from "./node_types.ts";
import { type ParamSpec, VMID_SPEC } from "./params.ts";
import type { ClusterState } from "./state.ts";
import {
  checkTemplateVolid,
  findTemplate,
  outOfSpaceError,
  type StorageState,
  templatePath,
} from "./storage.ts";
import { haRequest } from "./routes_power.ts";
import { restoreGuest } from "./routes_backup.ts";
import { TaskFailure, type TaskRecord } from "./tasks.ts";
import type { ConfigValue, GuestState } from "./types.ts";

const OPT_BOOL: ParamSpec = { type: "boolean", optional: true };
const OPT_STRING: ParamSpec = { type: "string", optional: true };
const STORAGE_ID = /^[a-z][a-z0-9\-_.]*[a-z0-9]$/i;
const MOUNT_KEY = /^(rootfs|mp(\d|[1-9]\d|1\d\d|2[0-4]\d|25[0-5]))$/;

/** What created containers' OS received, per cluster (see Simulator.containerSetup). */
const setups = new WeakMap<ClusterState, Map<number, ContainerSetup>>();

/** The setup container `vmid` received at create, if the simulator created it. */
export function containerSetupOf(
  state: ClusterState,
  vmid: number,
): ContainerSetup | undefined {
  return setups.get(state)?.get(vmid);
}

function missingConfig(node: string, vmid: number): string {
  return `Configuration file 'nodes/${node}/lxc/${vmid}.conf' does not exist`;
}

/** The container `vmid` on `node`: anything else (absent, qemu, another node) is PVE's 500. */
function ctOn(state: ClusterState, node: string, vmid: number): GuestState {
  const g = state.get(vmid);
  if (!g || g.type !== "lxc" || g.node !== node) {
    throw new ApiError(500, missingConfig(node, vmid));
  }
  return g;
}

/** The container of the request path. */
export function ctGuest(ctx: Ctx): GuestState {
  return ctOn(
    ctx.core.state,
    ctx.params.node as string,
    ctx.params.vmid as number,
  );
}

/** The container again inside a task (it may be gone); failures become the task's error. */
export function liveCt(ctx: Ctx, node: string, vmid: number): GuestState {
  const live = ctx.core.state.get(vmid);
  if (!live || live.type !== "lxc" || live.node !== node) {
    throw new TaskFailure(missingConfig(node, vmid));
  }
  return live;
}

/** PVE::AbstractConfig::check_lock for a container. */
export function ctLockedMessage(g: GuestState): string {
  return `CT is locked (${g.lock})`;
}

/** Whether the container runs on the path's node (PVE::LXC::check_running is local). */
function runningHere(ctx: Ctx): GuestState | undefined {
  const g = ctx.core.state.get(ctx.params.vmid as number);
  return g && g.type === "lxc" && g.node === ctx.params.node &&
      g.status === "running"
    ? g
    : undefined;
}

/** `skiplock` is for root@pam only; an API token never is root@pam. */
function refuseSkiplock(ctx: Ctx): void {
  if (ctx.params.skiplock === true) {
    throw paramError({ skiplock: "Only root may use this option." });
  }
}

/** Bridges of the CT's netN that do not exist (or are down) on its node. */
function missingBridges(ctx: Ctx, g: GuestState): [string, string][] {
  const out: [string, string][] = [];
  for (const [key, value] of Object.entries(g.config)) {
    const m = /^net(\d+)$/.exec(key);
    if (!m) continue;
    const bridge = parseNet(String(value)).net?.bridge;
    if (bridge && !ctx.core.resources.activeBridge(g.node, bridge)) {
      out.push([m[1], bridge]);
    }
  }
  return out;
}

/** Starts a `vzstart` task for the CT `vmid` on `node` (also used after create with start=1). */
function startTask(ctx: Ctx, node: string, vmid: number): TaskRecord {
  const { state, tasks } = ctx.core;
  const task: TaskRecord = tasks.start({
    node,
    type: "vzstart",
    id: String(vmid),
    user: ctx.user.tokenId,
    run: () => {
      const live = liveCt(ctx, node, vmid);
      if (live.config.template) {
        throw new TaskFailure("you can't start a CT if it's a template");
      }
      if (live.lock && live.lock !== "mounted") {
        throw new TaskFailure(ctLockedMessage(live));
      }
      if (live.status === "running") {
        throw new TaskFailure(`CT ${vmid} already running`);
      }
      const missing = missingBridges(ctx, live);
      if (missing.length > 0) {
        // lxc-start runs PVE's lxcnetaddbr for each veth: it dies on the
        // missing bridge, lxc aborts, and the monitor reports the failure.
        const [n, bridge] = missing[0];
        task.log.push(
          `run_buffer: 571 Script exited with status 1`,
          `netdev_configure_server_veth: 711 Script exec /usr/share/lxc/lxcnetaddbr ${vmid} net up veth veth${vmid}i${n} produced output: bridge '${bridge}' does not exist`,
          `lxc_create_network_priv: 3419 Failed to create network device`,
          `lxc_spawn: 1840 Failed to create the network`,
          `__lxc_start: 2107 Failed to spawn container "${vmid}"`,
        );
        throw new TaskFailure(`startup for container '${vmid}' failed`);
      }
      state.start(live);
    },
  });
  return task;
}

/** The addresses `interfaces` reports for eth0: the test's `ips`, else a static `ip=` of net0. */
function eth0Addresses(g: GuestState): string[] {
  if (g.ips.length > 0) return g.ips;
  const net = parseNet(String(g.config.net0 ?? "")).net;
  const out: string[] = [];
  if (net?.ip && /\//.test(net.ip)) out.push(net.ip);
  if (net?.ip6 && /\//.test(net.ip6)) out.push(net.ip6);
  return out;
}

/** Create parameters besides container options (pve-container create_vm). */
const CREATE_PARAMS: Record<string, ParamSpec> = {
  vmid: VMID_SPEC,
  ostemplate: { type: "string", maxLength: 255 },
  password: { type: "string", optional: true, pattern: /^[\s\S]{5,}$/ },
  storage: { type: "string", optional: true, pattern: STORAGE_ID },
  force: OPT_BOOL,
  restore: OPT_BOOL,
  unique: OPT_BOOL,
  pool: OPT_STRING,
  "ignore-unpack-errors": OPT_BOOL,
  "ssh-public-keys": OPT_STRING,
  bwlimit: { type: "string", optional: true, pattern: /^\d+(\.\d+)?$/ },
  start: OPT_BOOL,
  "ha-managed": OPT_BOOL,
};

/** An OpenSSH public key line (what `ssh-keygen -l` accepts, roughly). */
const SSH_KEY =
  /^(ssh-(rsa|dss|ed25519)|ecdsa-sha2-nistp(256|384|521)|sk-(ssh-ed25519|ecdsa-sha2-nistp256)@openssh\.com) [A-Za-z0-9+/]+={0,3}( .*)?$/;

/** PVE::Tools::validate_ssh_public_keys: every non-blank line must be a key. */
export function validateSshKeys(keys: string): void {
  for (const line of keys.split("\n")) {
    if (line.trim() === "") continue;
    if (!SSH_KEY.test(line.trim())) {
      throw new ApiError(500, "SSH public key validation error");
    }
  }
}

/** The OS type PVE detects from the unpacked template (here: from its name). */
function detectOstype(file: string): string {
  const m = /^([a-z]+)/.exec(file)?.[1] ?? "";
  const known: Record<string, string> = {
    debian: "debian",
    devuan: "devuan",
    ubuntu: "ubuntu",
    centos: "centos",
    rockylinux: "centos",
    almalinux: "centos",
    fedora: "fedora",
    opensuse: "opensuse",
    archlinux: "archlinux",
    alpine: "alpine",
    gentoo: "gentoo",
    nixos: "nixos",
  };
  return known[m] ?? "unmanaged";
}

/** A mount point to allocate at create: key, storage, GiB, options after the volume. */
interface NewVolume {
  key: string;
  storage: string;
  gib: number;
  rest: string;
}

/** The synchronous part of create_vm, in PVE's order; returns what the task needs. */
function checkCreate(ctx: Ctx) {
  const { state, resources } = ctx.core;
  const node = ctx.params.node as string;
  const vmid = ctx.params.vmid as number;
  // check_vmid_unused comes BEFORE the permission check.
  const existing = state.get(vmid);
  if (existing) {
    throw new ApiError(
      500,
      `${
        existing.type === "qemu" ? "VM" : "CT"
      } ${vmid} already exists on node '${existing.node}'`,
    );
  }
  if (state.isTaken(vmid)) {
    // Held by a qemu clone in progress: its config file already exists.
    throw new ApiError(500, `VM ${vmid} already exists on node '${node}'`);
  }
  const keys = ctx.params["ssh-public-keys"] as string | undefined;
  if (keys !== undefined) validateSshKeys(keys);
  // vm_start is called from the create worker, so create checks its privilege first.
  if (ctx.params.start === true) checkVmPerm(ctx.user, vmid, "VM.PowerMgmt");
  // pve-container PVE/API2/LXC.pm create_vm: VM.Allocate on the VMID, else raise_perm_exc.
  if (!ctx.user.privilegesOn(`/vms/${vmid}`).has("VM.Allocate")) {
    throw new ApiError(403, "Permission check failed");
  }
  const ostemplate = ctx.params.ostemplate as string;
  const template = checkTemplateVolid(resources, ostemplate);
  const storage = (ctx.params.storage as string | undefined) ?? "local";

  const options: Record<string, string | number | boolean> = {};
  const mounts: Record<string, string> = {};
  for (const [k, v] of Object.entries(ctx.params)) {
    if (k in CREATE_PARAMS || k === "node") continue;
    if (MOUNT_KEY.test(k)) {
      // A bare number means "<default storage>:<GiB>".
      mounts[k] = /^\d+(\.\d+)?$/.test(String(v))
        ? `${storage}:${v}`
        : String(v);
    } else if (/^unused\d+$/.test(k)) {
      continue; // PVE warns "ignoring 'unusedN', cannot create/restore with unused volume"
    } else options[k] = v as string | number | boolean;
  }
  if (Object.keys(mounts).length > 0 && mounts.rootfs === undefined) {
    throw new ApiError(
      500,
      "mount points configured, but 'rootfs' not set - aborting",
    );
  }
  const checkStorage = (sid: string): StorageState => {
    const store = resources.enabled(node, sid);
    if (!store.content.includes("rootdir")) {
      throw paramError({
        storage: `storage '${sid}' does not support container directories`,
      });
    }
    return resources.online(store);
  };
  const volumes: NewVolume[] = [];
  const fixed: Record<string, string> = {};
  for (const [key, value] of Object.entries(mounts).sort()) {
    const volume = value.split(",")[0];
    if (volume.startsWith("/")) {
      // Bind mounts and devices: root@pam only, and no token is root@pam.
      throw new ApiError(500, "Only root can pass arbitrary filesystem paths.");
    }
    const m = /^([^:\s]+):(.+)$/.exec(volume);
    if (!m) throw new ApiError(500, `unable to parse volume ID '${volume}'`);
    checkStorage(m[1]);
    if (/^\d+(\.\d+)?$/.test(m[2])) {
      volumes.push({
        key,
        storage: m[1],
        gib: Number(m[2]),
        rest: value.slice(volume.length),
      });
    } else fixed[key] = value;
  }
  if (mounts.rootfs === undefined) {
    checkStorage(storage);
    volumes.push({ key: "rootfs", storage, gib: 4, rest: "" }); // PVE's default: 4 GiB
  }
  // update_pct_config on the new config: network strings are validated here.
  const config: Record<string, ConfigValue> = {};
  for (const [key, raw] of Object.entries(options).sort()) {
    if (key === "unprivileged") continue;
    let value = ctValue(key, raw);
    if (/^net\d+$/.test(key)) {
      const { net, error } = parseNet(String(value));
      if (error !== undefined) throw paramError({ [key]: error });
      if (net.mtu !== undefined && net.bridge !== undefined) {
        // read_bridge_mtu runs only when an MTU is given.
        if (!resources.activeBridge(node, net.bridge)) {
          throw new ApiError(500, `bridge '${net.bridge}' does not exist`);
        }
      }
      value = printNet(net);
    }
    config[key] = value;
  }
  // PVE 8+: containers are unprivileged unless asked otherwise.
  const unprivileged = ctx.params.unprivileged !== false;
  return {
    node,
    vmid,
    ostemplate,
    template,
    volumes,
    fixed,
    config,
    unprivileged,
  };
}

/** The container routes. */
export const lxcRoutes: Route[] = [
  {
    method: "GET",
    path: "/nodes/{node}/lxc",
    handler: (ctx) =>
      ctx.core.state.all()
        .filter((g) =>
          g.type === "lxc" && g.node === ctx.params.node &&
          !ctx.user.deny.has(g.vmid)
        )
        .map((g) => ctStatus(g, false)),
  },
  {
    method: "POST",
    path: "/nodes/{node}/lxc",
    params: CREATE_PARAMS,
    dynamic: ctOptionSpec,
    rules: [ctCreatePerm],
    handler: (ctx) => {
      if (ctx.params.restore === true) {
        return restoreGuest(ctx, "lxc", ctx.params.ostemplate as string);
      }
      const c = checkCreate(ctx);
      const { state, tasks, resources } = ctx.core;
      // create_and_lock_config: the CT exists from now on, locked. pve-container
      // PVE/API2/LXC.pm create_vm then writes the config (hostname, tags, …) under
      // `lock: create` once the archive is extracted, long before the worker removes the
      // lock; the simulator shows them from the start (the first seconds, with only the
      // lock in the file, are not simulated).
      const requested = { ...c.config, ...c.fixed };
      const stores = state.takeStores();
      state.add({
        vmid: c.vmid,
        node: c.node,
        type: "lxc",
        name: String(requested.hostname ?? `CT${c.vmid}`),
        tags: requested.tags === undefined
          ? []
          : parseTags(String(requested.tags)),
        status: "stopped",
        lock: "create",
      });
      const isOurs = () => {
        const g = state.get(c.vmid);
        return g && g.type === "lxc" && g.node === c.node &&
            g.lock === "create"
          ? g
          : undefined;
      };
      const start = ctx.params.start === true;
      const task: TaskRecord = tasks.start({
        node: c.node,
        type: "vzcreate",
        id: String(c.vmid),
        user: ctx.user.tokenId,
        run: () => {
          const live = isOurs();
          if (!live) {
            throw new TaskFailure(
              `unable to create CT ${c.vmid} - ${
                missingConfig(c.node, c.vmid)
              }`,
            );
          }
          const fail = (why: string) =>
            new TaskFailure(`unable to create CT ${c.vmid} - ${why}`);
          // create_disks: allocate every new volume (space is checked as if thick-provisioned).
          const config: Record<string, ConfigValue> = { ...c.config };
          for (const [key, value] of Object.entries(c.fixed)) {
            config[key] = value;
          }
          for (const v of c.volumes) {
            const store = resources.get(c.node, v.storage);
            if (!store) {
              throw fail(
                `storage '${v.storage}' is not available on node '${c.node}'`,
              );
            }
            const bytes = Math.floor(v.gib * 2 ** 30);
            const name = resources.nextVolname(c.node, store, c.vmid);
            const avail = resources.availBytes(c.node, store);
            if (bytes > avail) {
              throw fail(outOfSpaceError(store, name, bytes, avail));
            }
            if (store.type === "lvmthin" || store.type === "lvm") {
              task.log.push(`  Logical volume "${name}" created.`);
            }
            if (!name.startsWith("subvol-")) {
              task.log.push(
                `Creating filesystem with ${
                  Math.floor(bytes / 4096)
                } 4k blocks and ${Math.floor(bytes / 16384)} inodes`,
              );
            }
            // Placed in the config now, so the next volume gets the next number.
            live.config[v.key] = withDiskOption(
              `${v.storage}:${name}${v.rest}`,
              "size",
              formatSize(bytes),
            );
            config[v.key] = live.config[v.key];
          }
          const tstore = resources.get(c.node, c.template.storage);
          if (!tstore || !findTemplate(tstore, c.ostemplate)) {
            throw fail(`can't find file '${c.ostemplate}'`);
          }
          const tmpl = findTemplate(tstore, c.ostemplate)!;
          const size = tmpl.size ?? 126 * 2 ** 20;
          task.log.push(
            `extracting archive '${templatePath(tstore, c.template.file)}'`,
            `Total bytes read: ${size * 4} (${
              Math.round(size * 4 / 2 ** 20)
            }MiB, 254MiB/s)`,
            `Detected container architecture: ${config.arch ?? "amd64"}`,
            "Creating SSH host key 'ssh_host_ed25519_key' - this may take some time ...",
          );
          // Defaults set at the end of the create worker.
          config.arch ??= "amd64";
          config.ostype ??= detectOstype(c.template.file);
          config.memory ??= 512;
          config.swap ??= 512;
          if (c.unprivileged) config.unprivileged = 1;
          const { hostname, tags, ...rest } = config;
          live.name = String(hostname ?? `CT${c.vmid}`);
          live.tags = [];
          live.config = storedInstead(rest, stores);
          live.lock = undefined;
          if (tags !== undefined) live.tags = parseTags(String(tags));
          let perState = setups.get(state);
          if (!perState) {
            perState = new Map();
            setups.set(state, perState);
          }
          perState.set(c.vmid, {
            ostemplate: c.ostemplate,
            sshPublicKeys: ctx.params["ssh-public-keys"] as string | undefined,
            password: ctx.params.password as string | undefined,
          });
          if (ctx.params["ha-managed"] === true) {
            task.log.push("Add as HA resource");
            live.ha = { managed: true, state: start ? "started" : "stopped" };
          }
          // vm_start forks its own worker: this task ends, a vzstart task follows.
          if (start) startTask(ctx, c.node, c.vmid);
        },
        onFailure: () => {
          if (isOurs()) state.remove(c.vmid);
        },
      });
      return task.upid;
    },
  },
  {
    method: "GET",
    path: "/nodes/{node}/lxc/{vmid}",
    privilege: "VM.Audit",
    handler: (ctx) => {
      ctGuest(ctx);
      return [
        "config",
        "pending",
        "status",
        "vncproxy",
        "termproxy",
        "vncwebsocket",
        "spiceproxy",
        "migrate",
        "clone",
        "rrd",
        "rrddata",
        "firewall",
        "snapshot",
        "resize",
        "interfaces",
      ].map((subdir) => ({ subdir }));
    },
  },
  {
    method: "GET",
    path: "/nodes/{node}/lxc/{vmid}/status/current",
    privilege: "VM.Audit",
    handler: (ctx) => ctStatus(ctGuest(ctx), true),
  },
  {
    method: "POST",
    path: "/nodes/{node}/lxc/{vmid}/status/start",
    privilege: "VM.PowerMgmt",
    params: { skiplock: OPT_BOOL, debug: OPT_BOOL },
    handler: (ctx) => {
      refuseSkiplock(ctx);
      const vmid = ctx.params.vmid as number;
      const node = ctx.params.node as string;
      if (runningHere(ctx)) {
        throw new ApiError(500, `CT ${vmid} already running`);
      }
      const g = ctx.core.state.get(vmid);
      if (g?.type === "lxc" && g.node === node && g.ha?.managed) {
        return haRequest(ctx, g, "started", "CT");
      }
      return startTask(ctx, node, vmid).upid;
    },
  },
  {
    method: "POST",
    path: "/nodes/{node}/lxc/{vmid}/status/stop",
    privilege: "VM.PowerMgmt",
    params: {
      skiplock: OPT_BOOL,
      "overrule-shutdown": OPT_BOOL,
    },
    handler: (ctx) => {
      refuseSkiplock(ctx);
      const vmid = ctx.params.vmid as number;
      const node = ctx.params.node as string;
      const g = runningHere(ctx);
      if (!g) throw new ApiError(500, `CT ${vmid} not running`);
      if (g.ha?.managed) return haRequest(ctx, g, "stopped", "CT");
      return ctx.core.tasks.start({
        node,
        type: "vzstop",
        id: String(vmid),
        user: ctx.user.tokenId,
        run: () => {
          const live = liveCt(ctx, node, vmid);
          if (live.lock && live.lock !== "mounted") {
            throw new TaskFailure(ctLockedMessage(live));
          }
          if (live.status === "running") ctx.core.state.stop(live);
        },
      }).upid;
    },
  },
  {
    method: "POST",
    path: "/nodes/{node}/lxc/{vmid}/status/shutdown",
    privilege: "VM.PowerMgmt",
    params: {
      timeout: { type: "integer", optional: true, minimum: 0 },
      forceStop: OPT_BOOL,
    },
    handler: (ctx) => {
      const vmid = ctx.params.vmid as number;
      const node = ctx.params.node as string;
      const g = runningHere(ctx);
      if (!g) throw new ApiError(500, `CT ${vmid} not running`);
      if (g.ha?.managed) return haRequest(ctx, g, "stopped", "CT");
      const timeout = (ctx.params.timeout as number | undefined) ?? 60;
      return ctx.core.tasks.start({
        node,
        type: "vzshutdown",
        id: String(vmid),
        user: ctx.user.tokenId,
        run: () => {
          const live = liveCt(ctx, node, vmid);
          if (live.lock) throw new TaskFailure(ctLockedMessage(live));
          if (live.status !== "running") return;
          if (live.ignoresShutdown && ctx.params.forceStop !== true) {
            // lxc-stop --nokill gives up after the timeout (text inferred).
            throw new TaskFailure(
              `command 'lxc-stop -n ${vmid} --nokill --timeout ${timeout}' failed: exit code 1`,
            );
          }
          ctx.core.state.stop(live);
        },
      }).upid;
    },
  },
  {
    method: "GET",
    path: "/nodes/{node}/lxc/{vmid}/config",
    privilege: "VM.Audit",
    params: {
      current: OPT_BOOL,
      snapshot: { type: "string", optional: true, maxLength: 40 },
    },
    handler: async (ctx) => {
      const snapshot = ctx.params.snapshot as string | undefined;
      if (snapshot !== undefined && ctx.params.current === true) {
        const msg = "cannot use 'snapshot' parameter with 'current'";
        throw paramError({ snapshot: msg, current: msg });
      }
      const g = ctGuest(ctx);
      if (snapshot !== undefined) {
        throw new ApiError(500, `snapshot '${snapshot}' does not exist`);
      }
      const config = ctx.params.current === true
        ? currentCtConfig(g)
        : ctConfigWithPending(g);
      return {
        ...pveConfigValues("lxc", config),
        digest: await ctDigest(g),
      };
    },
  },
  {
    method: "GET",
    path: "/nodes/{node}/lxc/{vmid}/pending",
    privilege: "VM.Audit",
    // With the config's digest as a row (pve-guest-common config_with_pending_array).
    handler: async (ctx) => {
      const g = ctGuest(ctx);
      return [...pvePendingRows("lxc", ctPendingRows(g)), {
        key: "digest",
        value: await ctDigest(g),
      }];
    },
  },
  {
    method: "PUT",
    path: "/nodes/{node}/lxc/{vmid}/config",
    privilege: [
      "VM.Config.Disk",
      "VM.Config.CPU",
      "VM.Config.Memory",
      "VM.Config.Network",
      "VM.Config.Options",
    ].join("|"),
    params: {
      delete: OPT_STRING,
      revert: OPT_STRING,
      digest: { type: "string", optional: true, maxLength: 40 },
    },
    dynamic: ctOptionSpec,
    rules: [ctConfigPerm],
    handler: async (ctx) => {
      const change = changeFrom(ctx);
      const g = ctGuest(ctx);
      if (g.lock) throw new ApiError(500, ctLockedMessage(g));
      await checkDigest(ctx, g);
      for (const key of change.revert) {
        if (!isCtOption(key)) {
          throw paramError({ revert: `unknown option '${key}'` });
        }
        if (key in change.set) {
          throw paramError({
            revert:
              `you can't use '-${key}' and '-revert ${key}' at the same time`,
          });
        }
      }
      for (const key of change.delete) {
        if (!isCtOption(key)) {
          throw paramError({ delete: `unknown option '${key}'` });
        }
        if (key in change.set) {
          throw paramError({
            delete:
              `you can't use '-${key}' and -delete ${key}' at the same time`,
          });
        }
        if (change.revert.includes(key)) {
          throw paramError({
            delete:
              `you can't use '-delete ${key}' and '-revert ${key}' at the same time`,
          });
        }
      }
      applyCtChange(g, change, ctx.core.resources);
      return null;
    },
  },
  {
    method: "PUT",
    path: "/nodes/{node}/lxc/{vmid}/resize",
    privilege: "VM.Config.Disk",
    params: {
      disk: { type: "string", pattern: MOUNT_KEY },
      size: { type: "string", pattern: RESIZE_SIZE },
      digest: { type: "string", optional: true, maxLength: 40 },
    },
    handler: async (ctx) => {
      const g = ctGuest(ctx);
      const disk = ctx.params.disk as string;
      const size = ctx.params.size as string;
      // resize_vm's load_and_check runs before the fork and again in the task.
      if (g.lock) throw new ApiError(500, ctLockedMessage(g));
      await checkDigest(ctx, g);
      checkCtResize(g, disk, size);
      const { tasks } = ctx.core;
      const node = g.node;
      const task: TaskRecord = tasks.start({
        node,
        type: "resize",
        id: String(g.vmid),
        user: ctx.user.tokenId,
        run: () => {
          const live = liveCt(ctx, node, g.vmid);
          if (live.lock) throw new TaskFailure(ctLockedMessage(live));
          let bytes: number;
          try {
            bytes = checkCtResize(live, disk, size);
          } catch (err) {
            throw new TaskFailure((err as Error).message);
          }
          const value = String(live.config[disk]);
          live.config[disk] = withDiskOption(value, "size", formatSize(bytes));
          const volname = value.split(",")[0].split(":")[1] ?? "";
          if (!volname.startsWith("subvol-")) {
            // Raw volumes get their ext4 grown (resize2fs output in the task log).
            const blocks = Math.floor(bytes / 4096);
            task.log.push(
              "resize2fs 1.47.2 (1-Jan-2025)",
              `Resizing the filesystem on /dev/loop0 to ${blocks} (4k) blocks.`,
              `The filesystem on /dev/loop0 is now ${blocks} (4k) blocks long.`,
            );
          }
        },
      });
      return task.upid;
    },
  },
  {
    method: "DELETE",
    path: "/nodes/{node}/lxc/{vmid}",
    privilege: "VM.Allocate",
    params: {
      force: OPT_BOOL,
      purge: OPT_BOOL,
      "destroy-unreferenced-disks": OPT_BOOL,
    },
    handler: (ctx) => {
      const g = ctGuest(ctx);
      const force = ctx.params.force === true;
      const purge = ctx.params.purge === true;
      // destroy_vm's early checks, before the task and again inside it.
      const early = (live: GuestState): string | undefined => {
        if (live.config.protection) {
          return `can't remove CT ${live.vmid} - protection mode enabled`;
        }
        if (live.lock) return ctLockedMessage(live);
        if (live.ha?.managed && !purge) {
          return `unable to remove CT ${live.vmid} - used in HA resources and purge parameter not set.`;
        }
        return undefined;
      };
      const refused = early(g);
      if (refused) throw new ApiError(500, refused);
      const runningMsg =
        `unable to destroy CT ${g.vmid} - container is running`;
      if (g.status === "running" && !force) {
        throw new ApiError(500, runningMsg);
      }
      const { state, tasks, resources } = ctx.core;
      const node = g.node;
      const task: TaskRecord = tasks.start({
        node,
        type: "vzdestroy",
        id: String(g.vmid),
        user: ctx.user.tokenId,
        run: () => {
          const live = liveCt(ctx, node, g.vmid);
          const again = early(live);
          if (again) throw new TaskFailure(again);
          if (live.status === "running") {
            if (!force) throw new TaskFailure(runningMsg);
            task.log.push(`forced to stop CT ${live.vmid} before destroying!`);
            state.stop(live);
          }
          for (const [key, value] of Object.entries(live.config)) {
            if (!/^(rootfs|mp\d+|unused\d+)$/.test(key)) continue;
            const volid = String(value).split(",")[0];
            const sid = volid.split(":")[0];
            const store = resources.config(sid);
            if (store?.type === "lvmthin" || store?.type === "lvm") {
              task.log.push(
                `  Logical volume "${
                  volid.split(":")[1]
                }" successfully removed.`,
              );
            }
          }
          if (purge) {
            task.log.push(
              `purging CT ${live.vmid} from related configurations..`,
            );
            if (live.ha?.managed) {
              task.log.push(
                `NOTE: removed CT ${live.vmid} from HA resource configuration.`,
              );
            }
          }
          state.remove(live.vmid);
          setups.get(state)?.delete(live.vmid);
        },
      });
      return task.upid;
    },
  },
  {
    method: "GET",
    path: "/nodes/{node}/lxc/{vmid}/interfaces",
    privilege: "VM.Audit",
    handler: (ctx) => {
      // PVE::LXC::get_interfaces returns nothing when the CT is not running here.
      const g = runningHere(ctx);
      if (!g) return null;
      const mac = parseNet(String(g.config.net0 ?? "")).net?.hwaddr ??
        "BC:24:11:00:00:01";
      const entry = (
        name: string,
        hwaddr: string,
        addrs: string[],
      ): Record<string, unknown> => {
        const out: Record<string, unknown> = {
          name,
          hwaddr,
          "hardware-address": hwaddr,
          "ip-addresses": addrs.map((a) => {
            const [ip, prefix] = a.split("/");
            const v6 = ip.includes(":");
            return {
              "ip-address": ip,
              "ip-address-type": v6 ? "inet6" : "inet",
              prefix: Number(prefix ?? (v6 ? 64 : 24)),
            };
          }),
        };
        const v4 = addrs.find((a) => !a.includes(":"));
        const v6 = addrs.find((a) => a.includes(":"));
        if (v4) out.inet = v4.includes("/") ? v4 : `${v4}/24`;
        if (v6) out.inet6 = v6.includes("/") ? v6 : `${v6}/64`;
        return out;
      };
      return [
        entry("lo", "00:00:00:00:00:00", ["127.0.0.1/8", "::1/128"]),
        entry("eth0", mac.toLowerCase(), eth0Addresses(g)),
      ];
    },
  },
];

/** Reads a PUT config change; 500 "no options specified" when empty (checked before the CT is loaded). */
function changeFrom(ctx: Ctx): CtChange {
  const skip = new Set(["node", "vmid", "delete", "revert", "digest"]);
  const set: CtChange["set"] = {};
  for (const [k, v] of Object.entries(ctx.params)) {
    if (!skip.has(k)) set[k] = v as string | number | boolean;
  }
  const split = (v: unknown) =>
    typeof v === "string" ? v.split(/[;,\s]+/).filter((k) => k !== "") : [];
  const change = {
    set,
    delete: split(ctx.params.delete),
    revert: split(ctx.params.revert),
  };
  if (
    Object.keys(set).length + change.delete.length + change.revert.length === 0
  ) {
    throw new ApiError(500, "no options specified");
  }
  return change;
}

async function checkDigest(ctx: Ctx, g: GuestState): Promise<void> {
  const digest = ctx.params.digest as string | undefined;
  if (digest !== undefined && digest !== await ctDigest(g)) {
    throw new ApiError(
      500,
      "detected modified configuration - file changed by other user? Try again.",
    );
  }
}

/** resize_vm's checks: the new size in bytes, or pve-container's error (500). */
function checkCtResize(g: GuestState, disk: string, size: string): number {
  const value = g.config[disk];
  if (value === undefined) {
    // parse_volume on an unset key: the property string lacks its volume.
    throw new ApiError(500, "format error", {
      volume: "property is missing and it is not optional",
    });
  }
  const volid = String(value).split(",")[0];
  if (volid.startsWith("/")) {
    throw new ApiError(500, `unable to parse volume ID '${volid}'`);
  }
  const owner = /-(\d+)-disk-\d+/.exec(volid)?.[1];
  if (owner !== undefined && Number(owner) !== g.vmid) {
    throw new ApiError(
      500,
      `can't resize mount point owned by another container (${owner})`,
    );
  }
  const current = diskBytes(String(value));
  if (current === 0) {
    throw new ApiError(
      500,
      `Could not determine current size of volume '${volid}'`,
    );
  }
  const result = resizedBytes(current, size);
  if (typeof result !== "number") {
    throw new ApiError(500, "unable to shrink disk size");
  }
  if (result === current) {
    throw new ApiError(500, "disk is already at specified size");
  }
  return result;
}
