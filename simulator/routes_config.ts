/**
 * Config endpoints of a qemu guest: read (current or with pending changes),
 * pending list, synchronous PUT, task-based POST, and disk resize.
 *
 * @module
 */

import {
  applyConfigChange,
  type ConfigChange,
  configDigest,
  configOptionSpec,
  configWithPending,
  currentConfig,
  pendingRows,
} from "./config.ts";
import {
  checkLock,
  type Ctx,
  lockedMessage,
  qemuGuest,
  type Route,
} from "./context.ts";
import {
  DISK_KEY,
  diskBytes,
  formatSize,
  isCdrom,
  RESIZE_SIZE,
  resizedBytes,
  withDiskOption,
} from "./disks.ts";
import { cloudinitSnapshot, hashedPassword } from "./cloudinit.ts";
import { ApiError } from "./http.ts";
import type { ParamSpec } from "./params.ts";
import { validateSshKeys } from "./routes_lxc.ts";
import { qemuConfigPerm } from "./perl_rules.ts";
import { pveConfigValues, pvePendingRows } from "./schema/values.ts";
import { TaskFailure } from "./tasks.ts";
import type { ConfigValue, GuestState } from "./types.ts";

/** Privileges of PUT/POST config: PVE accepts any of them ("any" check), and names them all on refusal. */
const CONFIG_PRIVS = [
  "VM.Config.Disk",
  "VM.Config.CDROM",
  "VM.Config.CPU",
  "VM.Config.Memory",
  "VM.Config.Network",
  "VM.Config.HWType",
  "VM.Config.Options",
  "VM.Config.Cloudinit",
].join("|");

/** Parameters of PUT/POST config besides the options themselves. */
const UPDATE_PARAMS: Record<string, ParamSpec> = {
  delete: { type: "string", optional: true },
  revert: { type: "string", optional: true },
  digest: { type: "string", optional: true, maxLength: 64 },
  skiplock: { type: "boolean", optional: true },
  force: { type: "boolean", optional: true },
  background_delay: {
    type: "integer",
    optional: true,
    minimum: 1,
    maximum: 30,
  },
};

const NOT_OPTIONS = new Set(["node", "vmid", ...Object.keys(UPDATE_PARAMS)]);

function splitList(v: unknown): string[] {
  return typeof v === "string"
    ? v.split(/[;,\s]+/).filter((k) => k !== "")
    : [];
}

/** Reads a config change from the parameters; 500 like qemu-server when it is empty. */
function changeFrom(ctx: Ctx): ConfigChange {
  const set: ConfigChange["set"] = {};
  for (const [k, v] of Object.entries(ctx.params)) {
    if (!NOT_OPTIONS.has(k)) set[k] = v as string | number | boolean;
  }
  const change = {
    set,
    delete: splitList(ctx.params.delete),
    revert: splitList(ctx.params.revert),
    typeOf: (id: string) => ctx.core.resources.config(id)?.type,
    volumeBytes: (volid: string) =>
      ctx.core.resources.volumeBytes(ctx.params.node as string, volid),
    force: ctx.params.force === true,
  };
  if (
    Object.keys(set).length + change.delete.length + change.revert.length === 0
  ) {
    throw new ApiError(500, "no options specified");
  }
  return change;
}

/**
 * What update_vm_api does to cloud-init values before it writes them: `sshkeys` arrives
 * URL-encoded and must decode to valid keys (PVE::Tools::validate_ssh_public_keys), `cipassword`
 * is stored hashed (PVE::Tools::encrypt_pw). The drive's last generation is remembered first, so
 * `GET …/cloudinit` can tell what changed since.
 */
export function cloudinitValues(
  g: GuestState,
  change: ConfigChange,
): void {
  const keys = change.set.sshkeys;
  if (typeof keys === "string") {
    let decoded: string;
    try {
      decoded = decodeURIComponent(keys);
    } catch {
      throw new ApiError(500, "SSH public key validation error");
    }
    validateSshKeys(decoded);
  }
  if (typeof change.set.cipassword === "string") {
    change.set.cipassword = hashedPassword(change.set.cipassword);
  }
  g.cloudinitGenerated ??= cloudinitSnapshot(g);
}

/** GET config never shows cipassword (PVE/API2/Qemu.pm `vm_config`). */
function masked(
  config: Record<string, ConfigValue>,
): Record<string, ConfigValue> {
  if (config.cipassword !== undefined) config.cipassword = "**********";
  return config;
}

/** The synchronous checks PVE makes before changing a config. */
async function checkUpdate(ctx: Ctx, g: GuestState): Promise<void> {
  const digest = ctx.params.digest as string | undefined;
  if (digest !== undefined && digest !== await configDigest(g)) {
    throw new ApiError(
      500,
      "detected modified configuration - file changed by other user? Try again.",
    );
  }
  checkLock(g, ctx.params.skiplock);
}

/** The config routes. */
export const configRoutes: Route[] = [
  {
    method: "GET",
    path: "/nodes/{node}/qemu/{vmid}/config",
    privilege: "VM.Audit",
    params: {
      current: { type: "boolean", optional: true },
      snapshot: { type: "string", optional: true },
    },
    handler: async (ctx) => {
      const g = qemuGuest(ctx);
      // PVE's default is the config WITH pending changes; current=1 gives what runs.
      const config = ctx.params.current === true
        ? currentConfig(g)
        : configWithPending(g);
      return {
        ...pveConfigValues("qemu", masked(config)),
        digest: await configDigest(g),
      };
    },
  },
  {
    method: "GET",
    path: "/nodes/{node}/qemu/{vmid}/pending",
    privilege: "VM.Audit",
    // vm_pending masks cipassword: '**********' as value, '********** ' (sic) as pending.
    // The config it reads carries its digest, listed as a row (pve-guest-common
    // `PVE/GuestHelpers.pm` config_with_pending_array).
    handler: async (ctx) => {
      const g = qemuGuest(ctx);
      const rows = pvePendingRows("qemu", pendingRows(g)).map((row) => {
        if (row.key !== "cipassword") return row;
        const out = { ...row };
        if (out.value !== undefined) out.value = "**********";
        if (out.pending !== undefined) out.pending = "********** ";
        return out;
      });
      return [...rows, { key: "digest", value: await configDigest(g) }];
    },
  },
  {
    method: "PUT",
    path: "/nodes/{node}/qemu/{vmid}/config",
    privilege: CONFIG_PRIVS,
    params: UPDATE_PARAMS,
    dynamic: configOptionSpec,
    rules: [qemuConfigPerm],
    handler: async (ctx) => {
      const g = qemuGuest(ctx);
      const change = changeFrom(ctx);
      await checkUpdate(ctx, g);
      cloudinitValues(g, change);
      applyConfigChange(g, change);
      return null;
    },
  },
  {
    method: "POST",
    path: "/nodes/{node}/qemu/{vmid}/config",
    privilege: CONFIG_PRIVS,
    params: UPDATE_PARAMS,
    dynamic: configOptionSpec,
    rules: [qemuConfigPerm],
    handler: async (ctx) => {
      const g = qemuGuest(ctx);
      const change = changeFrom(ctx);
      await checkUpdate(ctx, g);
      cloudinitValues(g, change);
      const { state, tasks } = ctx.core;
      return tasks.start({
        node: g.node,
        type: "qmconfig",
        id: String(g.vmid),
        user: ctx.user.tokenId,
        log: [
          `update VM ${g.vmid}: ${
            Object.keys(change.set).map((k) => `-${k}`).join(" ")
          }`.trim(),
        ],
        run: () => {
          const live = state.get(g.vmid);
          if (!live) {
            throw new TaskFailure(
              `Configuration file 'nodes/${g.node}/qemu-server/${g.vmid}.conf' does not exist`,
            );
          }
          applyConfigChange(live, change);
        },
      }).upid;
    },
  },
  {
    method: "PUT",
    path: "/nodes/{node}/qemu/{vmid}/resize",
    privilege: "VM.Config.Disk",
    params: {
      disk: { type: "string", pattern: DISK_KEY },
      size: { type: "string", pattern: RESIZE_SIZE },
      digest: { type: "string", optional: true, maxLength: 64 },
      skiplock: { type: "boolean", optional: true },
    },
    handler: async (ctx) => {
      const g = qemuGuest(ctx);
      const disk = ctx.params.disk as string;
      const size = ctx.params.size as string;
      await checkUpdate(ctx, g);
      // PVE 8+ runs these checks once before forking the task (so they answer
      // 500 synchronously) and again inside it.
      checkResize(g, disk, size);
      const { state, tasks } = ctx.core;
      return tasks.start({
        node: g.node,
        type: "resize",
        id: String(g.vmid),
        user: ctx.user.tokenId,
        log: [`update VM ${g.vmid}: resize --disk ${disk} --size ${size}`],
        run: () => {
          const live = state.get(g.vmid);
          if (!live) {
            throw new TaskFailure(
              `Configuration file 'nodes/${g.node}/qemu-server/${g.vmid}.conf' does not exist`,
            );
          }
          if (live.lock && ctx.params.skiplock !== true) {
            throw new TaskFailure(lockedMessage(live));
          }
          let bytes: number;
          try {
            bytes = checkResize(live, disk, size);
          } catch (err) {
            throw new TaskFailure((err as Error).message);
          }
          live.config[disk] = withDiskOption(
            String(live.config[disk]),
            "size",
            formatSize(bytes),
          );
        },
      }).upid;
    },
  },
];

/** The disk's new size in bytes, or qemu-server's error (500). */
function checkResize(g: GuestState, disk: string, size: string): number {
  const value = g.config[disk];
  if (value === undefined) {
    throw new ApiError(500, `disk '${disk}' does not exist`);
  }
  if (isCdrom(String(value))) {
    throw new ApiError(500, "you can't resize a cdrom");
  }
  const result = resizedBytes(diskBytes(String(value)), size);
  if (typeof result !== "number") throw new ApiError(500, result.error);
  return result;
}
