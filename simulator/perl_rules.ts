/**
 * Rules PVE enforces in its Perl rather than in its API schema, for the
 * identity a request carries. A route lists the ones that apply in
 * `Route.rules`; the router runs them after the schema check and before the
 * handler, where PVE's API code runs them (before it loads or locks the
 * guest's config).
 *
 * The identity: an API token is never root@pam to these checks, even
 * `root@pam!ci` (`$rpcenv->get_user()` is the token id); pvesh over ssh runs
 * as root@pam itself, and every `return 1 if $authuser eq 'root@pam'` passes.
 *
 * @module
 */

import { type Ctx, isRootPam } from "./context.ts";
import { ApiError, paramError } from "./http.ts";
import type { GuestState } from "./types.ts";

/** A rule a route declares: throws PVE's refusal, or returns when PVE goes on. */
export type PerlRule = (ctx: Ctx) => void;

/** Parameters of the config endpoints that are not config options. */
const QEMU_UPDATE_PARAMS = new Set([
  "node",
  "vmid",
  "digest",
  "skiplock",
  "delete",
  "revert",
  "force",
  "background_delay",
  "skip_cloud_init",
  "import-working-storage",
]);

/** Option families `$check_vm_modify_config_perm` maps to a privilege (all others are root@pam's). */
const QEMU_OPTION_GROUPS: readonly (ReadonlySet<string>)[] = [
  // $cpuoptions
  new Set([
    "cores",
    "cpu",
    "runningcpu",
    "cpulimit",
    "cpuunits",
    "numa",
    "smp",
    "sockets",
    "vcpus",
  ]),
  // $memoryoptions
  new Set(["memory", "balloon", "shares", "allow-ksm"]),
  // $hwtypeoptions
  new Set([
    "acpi",
    "hotplug",
    "kvm",
    "machine",
    "runningmachine",
    "scsihw",
    "smbios1",
    "tablet",
    "vga",
    "watchdog",
    "audio0",
    "rng0",
  ]),
  // $generaloptions
  new Set([
    "agent",
    "autostart",
    "bios",
    "description",
    "keyboard",
    "localtime",
    "migrate_downtime",
    "migrate_speed",
    "name",
    "onboot",
    "ostype",
    "protection",
    "reboot",
    "startdate",
    "startup",
    "tdf",
    "template",
  ]),
  // $vmpoweroptions, $diskoptions, $cloudinitoptions
  new Set(["freeze", "boot", "bootdisk", "vmstatestorage"]),
  new Set([
    "cicustom",
    "cipassword",
    "citype",
    "ciuser",
    "ciupgrade",
    "nameserver",
    "searchdomain",
    "sshkeys",
  ]),
  new Set(["tags", "cdrom", "vmstate", "running-nets-host-mtu"]),
];

/** Numbered options with a privilege of their own: drives, nets, cloud-init ip configs, devices. */
const QEMU_NUMBERED =
  /^(?:ide\d+|sata\d+|scsi\d+|virtio\d+|efidisk0|tpmstate0|unused\d+|serial\d+|usb\d+|hostpci\d+|virtiofs\d+|numa\d+|net\d+|ipconfig\d+)$/;

/** Whether an API token may set qemu option `key` at all (qemu-server `$check_vm_modify_config_perm`). */
export function qemuOptionAllowsToken(key: string): boolean {
  return QEMU_NUMBERED.test(key) ||
    QEMU_OPTION_GROUPS.some((group) => group.has(key));
}

function splitKeys(value: unknown): string[] {
  return typeof value === "string"
    ? value.split(/[,;\0\s]+/).filter((k) => k !== "")
    : [];
}

/**
 * qemu-server PVE/API2/Qemu.pm `$update_vm_api`: `skiplock` is root@pam's
 * (400), then `$check_vm_modify_config_perm` on the deleted keys and on the
 * set keys: an option none of its privilege groups holds (args, hookscript,
 * arch, affinity, hugepages, vmgenid, lock, …) dies "only root can set".
 */
export const qemuConfigPerm: PerlRule = (ctx) => {
  if (isRootPam(ctx.user)) return;
  if (ctx.params.skiplock === true) {
    throw paramError({ skiplock: "Only root may use this option." });
  }
  const keys = [
    ...splitKeys(ctx.params.delete),
    ...Object.keys(ctx.params).filter((k) => !QEMU_UPDATE_PARAMS.has(k)),
  ];
  for (const key of keys) {
    if (!qemuOptionAllowsToken(key)) {
      throw new ApiError(500, `only root can set '${key}' config`);
    }
  }
};

/** pve-container PVE/LXC/Config.pm parse_features: the `key=value` parts of `features`. */
function parseFeatures(text: unknown): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of String(text ?? "").split(",")) {
    const [key, value] = part.split("=", 2);
    if (key.trim() !== "" && value !== undefined) out.set(key, value);
  }
  return out;
}

const permission = (what: string) =>
  new ApiError(403, `Permission check failed (${what})`);

/** Which feature flags a change touches, as check_ct_modify_config_perm compares them. */
function featureChange(
  old: Map<string, string> | undefined,
  next: Map<string, string>,
): { nesting: boolean; other: boolean } {
  if (old && old.size > 0) {
    let nesting = false;
    for (const key of new Set([...old.keys(), ...next.keys()])) {
      if ((old.get(key) ?? "") === (next.get(key) ?? "")) continue;
      if (key !== "nesting") return { nesting, other: true };
      nesting = true;
    }
    return { nesting, other: false };
  }
  const onlyNesting = next.size === 1 && next.has("nesting");
  return { nesting: onlyNesting, other: !onlyNesting && next.size > 0 };
}

/** The mount point `type` of an lxc rootfs/mp value (pve-container classify_mountpoint). */
function mountType(value: unknown): "volume" | "bind" | "device" {
  const volume = String(value ?? "").split(",")[0].replace(/^volume=/, "");
  if (volume.startsWith("/dev/")) return "device";
  if (volume.startsWith("/")) return "bind";
  return "volume";
}

/**
 * pve-container src/PVE/LXC.pm check_ct_modify_config_perm, the parts a token
 * meets (raise_perm_exc: 403 "Permission check failed (…)"): any feature flag
 * on a privileged container; on an unprivileged one any flag but `nesting`;
 * a bind or device mount point; device passthrough; the hookscript.
 */
function checkCtOptions(
  ctx: Ctx,
  set: string[],
  deleted: string[],
  old: GuestState | undefined,
  unprivileged: boolean,
): void {
  for (
    const [key, isDelete] of [
      ...set.map((k) => [k, false] as const),
      ...deleted.map((k) => [k, true] as const),
    ]
  ) {
    if ((key === "rootfs" || /^mp\d+$/.test(key)) && !isDelete) {
      const type = mountType(ctx.params[key]);
      if (type !== "volume") {
        throw permission(
          `mount point type ${type} is only allowed for root@pam`,
        );
      }
    } else if (/^dev\d+$/.test(key)) {
      throw permission(
        "configuring device passthrough is only allowed for root@pam",
      );
    } else if (key === "hookscript") {
      throw permission("changing the hookscript is only allowed for root@pam");
    } else if (key === "features") {
      if (!unprivileged) {
        throw permission(
          "changing feature flags for privileged container is only allowed for root@pam",
        );
      }
      const before = old?.config.features !== undefined
        ? parseFeatures(old.config.features)
        : undefined;
      const change = isDelete
        ? featureChange(undefined, before ?? new Map())
        : featureChange(before, parseFeatures(ctx.params.features));
      if (change.other) {
        throw permission(
          "changing feature flags (except nesting) is only allowed for root@pam",
        );
      }
    }
  }
}

const CT_NOT_OPTIONS = new Set([
  "node",
  "vmid",
  "digest",
  "delete",
  "revert",
  "ostemplate",
  "password",
  "ssh-public-keys",
  "storage",
  "start",
  "force",
  "restore",
  "unique",
  "ignore-unpack-errors",
  "pool",
  "bwlimit",
  "unprivileged",
]);

/** Parameters of qemu create_vm that are not config options. */
const QEMU_CREATE_PARAMS = new Set([
  "node",
  "vmid",
  "archive",
  "storage",
  "force",
  "unique",
  "pool",
  "bwlimit",
  "start",
  "live-restore",
  "import-working-storage",
]);

/**
 * qemu-server PVE/API2/Qemu.pm create_vm: the new config's options go through the same
 * `$check_vm_modify_config_perm` as an update (an option none of its privilege groups holds is
 * root@pam's: "only root can set '<key>' config").
 */
export const qemuCreatePerm: PerlRule = (ctx) => {
  if (isRootPam(ctx.user)) return;
  for (const key of Object.keys(ctx.params)) {
    if (!QEMU_CREATE_PARAMS.has(key) && !qemuOptionAllowsToken(key)) {
      throw new ApiError(500, `only root can set '${key}' config`);
    }
  }
};

/** pve-container PVE/API2/LXC.pm create_vm: the new config against check_ct_modify_config_perm. */
export const ctCreatePerm: PerlRule = (ctx) => {
  if (isRootPam(ctx.user)) return;
  const set = Object.keys(ctx.params).filter((k) => !CT_NOT_OPTIONS.has(k));
  checkCtOptions(ctx, set, [], undefined, ctx.params.unprivileged === true);
};

/** pve-container PVE/API2/LXC/Config.pm update_vm: the change against check_ct_modify_config_perm. */
export const ctConfigPerm: PerlRule = (ctx) => {
  if (isRootPam(ctx.user)) return;
  const g = ctx.core.state.get(ctx.params.vmid as number);
  const set = Object.keys(ctx.params).filter((k) => !CT_NOT_OPTIONS.has(k));
  const unprivileged = Number(g?.config.unprivileged ?? 0) === 1;
  checkCtOptions(ctx, set, splitKeys(ctx.params.delete), g, unprivileged);
};
