/**
 * `@stateless/proxmox/lxc`: Proxmox VE containers, where a method succeeds only when its effect was
 * observed. The decisions are made by the Rust core (`_lib/core.ts`), the same core — and for most
 * methods the same logic — as the qemu model's; this file declares the arguments, records and
 * methods swamp sees.
 *
 * @module
 */
import { z } from "npm:zod@4";
import { type MethodContext, runOnCore } from "./_lib/core.ts";
import {
  backupMethods,
  backupResources,
  DeleteArgs,
  dnsName,
  ExecRecord,
  field,
  fromUpstream,
  GlobalArgs,
  GuestArgs,
  GuestExecArgs,
  guestRef,
  guestStateFields,
  migrateMethod,
  newVmid,
  nodeMethods,
  notBothVmidAndRange,
  optionalLine,
  optionBag,
  RebootArgs,
  requireGuest,
  SetConfigArgs,
  sharedResources,
  ShutdownArgs,
  singleLine,
  snapshotMethods,
  StartArgs,
  StopArgs,
  storageMethods,
  storageName,
  SyncArgs,
  TemplateArgs,
  transportReachable,
} from "./_lib/schemas.ts";
import {
  permissionsCheck,
  preflightMethod,
  preflightResource,
} from "./_lib/preflight.ts";
import { diskMethods } from "./_lib/disks.ts";
import { firewallMethods } from "./_lib/firewall.ts";
import { haMethods } from "./_lib/ha.ts";
import { nicMethods } from "./_lib/nic.ts";
import { powerMethods, taskLogFile, taskResource } from "./_lib/power.ts";

/**
 * Keys `create`'s config bag may not hold: they have their own argument, or change how PVE creates
 * (`force` would overwrite an existing container) rather than what it creates.
 */
const CREATE_REFUSED_KEYS = [
  "hostname",
  "ostemplate",
  "storage",
  "rootfs",
  "cores",
  "memory",
  "swap",
  "unprivileged",
  "features",
  "start",
  "vmid",
  "node",
  "force",
  "restore",
  "unique",
  "digest",
];

/** create: a new container from a template on the transport's node. */
const CreateArgs = z.object({
  ...newVmid,
  ostemplate: singleLine("ostemplate"),
  hostname: dnsName("hostname"),
  storage: storageName,
  /** GiB. */
  rootfsSize: field.integer.min(1).max(131072).default(8),
  cores: field.integer.min(1).max(8192).optional(),
  /** MiB. */
  memory: field.integer.min(16).max(67108864).optional(),
  /** MiB. */
  swap: field.integer.min(0).max(67108864).optional(),
  unprivileged: field.trueByDefault,
  features: optionalLine,
  /** One key per line. */
  sshPublicKeys: field.string.refine((v) => !v.includes("\0"), {
    message: "sshPublicKeys must not contain NUL",
  }).optional(),
  start: field.falseByDefault,
  /** Further container options: net0, nameserver, tags, mp0, … */
  config: optionBag(
    CREATE_REFUSED_KEYS,
    "has its own argument, or is not a container option",
  ).optional(),
}).check(notBothVmidAndRange);

const ResizeArgs = z.object({
  ...guestRef,
  disk: field.string.regex(/^(rootfs|mp\d+)$/).default("rootfs"),
  size: field.string.regex(/^\+?\d+(\.\d+)?[KMGT]?$/),
}).check(requireGuest);

/** A container's observed state: the fields every guest record has (no qmpstatus, no agent). */
const ContainerRecord = z.object(guestStateFields).omit({
  // A container's config has no smbios1 or meta (pve-container's config schema): no identity.
  identity: true,
  identityObservedAt: true,
  identityChanged: true,
  // The upstream package, whose name-keyed records these point from, had no container model.
  supersededBy: true,
});

/** A command's run in a container: `pct exec` reports neither a pid nor a signal (its exit status). */
const ContainerExecRecord = ExecRecord.omit({ pid: true, signal: true });

/** The methods that change a container: the reachability check runs before them. */
/**
 * The methods the `permissions` check runs before: those that change several things in a row
 * (a stop then a destroy, a create then a tag, a download then a check), where a privilege found
 * missing halfway leaves work half done. A one-request method (start, stop, guestExec …) meets
 * PVE's own permission check before anything happens, with PVE's reason; asking first would only
 * double what a fleet costs the node.
 */
const MULTI_STEP = [
  "create",
  "restore",
  "delete",
  "migrate",
  "backup",
  "downloadUrl",
  "convertToTemplate",
];

const CHANGES = [
  "create",
  "setConfig",
  "setNic",
  "removeNic",
  "moveDisk",
  "attachDisk",
  "detachDisk",
  "firewallOptions",
  "firewallRules",
  "firewallIpset",
  "firewallAlias",
  "haResource",
  "haRule",
  "resize",
  "start",
  "stop",
  "suspend",
  "resume",
  "shutdown",
  "delete",
  "snapshot",
  "rollback",
  "deleteSnapshot",
  "convertToTemplate",
  "reboot",
  "guestExec",
  "migrate",
  "downloadUrl",
  "backup",
  "deleteBackup",
  "restore",
];

/**
 * The `@stateless/proxmox/lxc` model: Proxmox VE containers addressed by VMID (or hostname), one
 * `ct-<vmid>` record per container, and methods that succeed only when their effect was observed.
 */
export const model = {
  type: "@stateless/proxmox/lxc",
  version: "2026.11.29.1",
  // Definitions created by the upstream package move to this version on their next method run.
  upgrades: [
    {
      toVersion: "2026.11.29.1",
      description:
        "From the upstream @stateless/proxmox (2026.06.02.x, 2026.06.10.1): global arguments carry over; requestTimeoutSec added (30)",
      upgradeAttributes: fromUpstream,
    },
  ],
  globalArguments: GlobalArgs,
  resources: {
    container: {
      description:
        "One container's observed state (instance ct-<vmid>); present: false when confirmed absent",
      schema: ContainerRecord,
      lifetime: "infinite" as const,
      garbageCollection: 20,
    },
    exec: {
      description:
        "One guestExec run (instance ct-<vmid>-exec): outcome, exit code, output",
      schema: ContainerExecRecord,
      lifetime: "infinite" as const,
      garbageCollection: 20,
    },
    ...sharedResources("container", "ct"),
    ...backupResources("container", "ct"),
    ...taskResource,
    ...preflightResource,
  },
  files: taskLogFile,
  // The default report of every method run (js/reports/observed_method_report.ts).
  reports: ["@stateless/proxmox/method-observed"],
  checks: {
    "transport-reachable": transportReachable("lxc", CHANGES),
    permissions: permissionsCheck("lxc", MULTI_STEP),
  },
  // Every method sets `kind: "action"`: swamp's delete/read/update kinds assume one resource per
  // model, and would tombstone every container's record after one delete or refuse reads after it.
  methods: {
    create: {
      description:
        "Create a container from ostemplate; checks storage, template and bridges on the node first (one message lists every problem), and succeeds when the container exists with the hostname and the swamp tag (start: true then a verified start). An existing vmid counts only if it is that same container",
      kind: "action" as const,
      arguments: CreateArgs,
      execute: (args: z.infer<typeof CreateArgs>, ctx: MethodContext) =>
        runOnCore("lxc", "create", args, ctx),
    },
    guestExec: {
      description:
        "Run a command in the running container with `pct exec` on its node (needs the ssh transport: PVE's API has no exec for containers); fails unless it exits 0 (or an allowed code)",
      kind: "action" as const,
      arguments: GuestExecArgs,
      execute: (args: z.infer<typeof GuestExecArgs>, ctx: MethodContext) =>
        runOnCore("lxc", "guestExec", args, ctx),
    },
    lookup: {
      description:
        "Record the container's live state (or its confirmed absence) as a new version of ct-<vmid>",
      kind: "action" as const,
      arguments: GuestArgs,
      execute: (args: z.infer<typeof GuestArgs>, ctx: MethodContext) =>
        runOnCore("lxc", "lookup", args, ctx),
    },
    sync: {
      description:
        "Record every container of the node (scope node, one request), of nodes, or of every online node (scope cluster) as ct-<vmid> — with tags, or a CEL where over its fields, only those selected; stored containers confirmed gone are recorded absent",
      kind: "action" as const,
      arguments: SyncArgs,
      execute: (args: z.infer<typeof SyncArgs>, ctx: MethodContext) =>
        runOnCore("lxc", "sync", args, ctx),
    },
    setConfig: {
      description:
        "Change config keys; succeeds when each reads back exactly as requested (as PVE stores it) or pending until a restart (recorded in ct-<vmid> as pending)",
      kind: "action" as const,
      arguments: SetConfigArgs,
      execute: (args: z.infer<typeof SetConfigArgs>, ctx: MethodContext) =>
        runOnCore("lxc", "setConfig", args, ctx),
    },
    resize: {
      description:
        "Grow rootfs or a mount point (+N grows by, N grows to); succeeds when the resize task ended and the volume's size in the config reached the target",
      kind: "action" as const,
      arguments: ResizeArgs,
      execute: (args: z.infer<typeof ResizeArgs>, ctx: MethodContext) =>
        runOnCore("lxc", "resize", args, ctx),
    },
    start: {
      description:
        "Start the container; succeeds when status/current shows it running, and with waitForIp when its config gives a static IPv4 address (allowNoIp: a missing one only warns)",
      kind: "action" as const,
      arguments: StartArgs,
      execute: (args: z.infer<typeof StartArgs>, ctx: MethodContext) =>
        runOnCore("lxc", "start", args, ctx),
    },
    stop: {
      description:
        "Hard-stop a container tagged swamp (force overrides); succeeds when status/current shows it stopped",
      kind: "action" as const,
      arguments: StopArgs,
      execute: (args: z.infer<typeof StopArgs>, ctx: MethodContext) =>
        runOnCore("lxc", "stop", args, ctx),
    },
    shutdown: {
      description:
        "Shut a container tagged swamp down cleanly within timeoutSec, with forceStopAfter a hard stop after that; succeeds when status/current shows it stopped",
      kind: "action" as const,
      arguments: ShutdownArgs,
      execute: (args: z.infer<typeof ShutdownArgs>, ctx: MethodContext) =>
        runOnCore("lxc", "shutdown", args, ctx),
    },
    delete: {
      description:
        "Destroy a container tagged swamp and not production/protected (force overrides), stopping it first if it runs; succeeds when it is gone from every node. Writes only ct-<vmid> (status deleted)",
      kind: "action" as const,
      arguments: DeleteArgs,
      execute: (args: z.infer<typeof DeleteArgs>, ctx: MethodContext) =>
        runOnCore("lxc", "delete", args, ctx),
    },
    getConfig: {
      description:
        "Record the container's running config and its pending changes as ct-<vmid>-config",
      kind: "action" as const,
      arguments: GuestArgs,
      execute: (args: z.infer<typeof GuestArgs>, ctx: MethodContext) =>
        runOnCore("lxc", "getConfig", args, ctx),
    },
    reboot: {
      description:
        "Reboot a running container tagged swamp (force overrides), applying pending changes; succeeds when status/current shows it running again with a new boot (another init process, or an uptime that restarted) within taskTimeoutSec",
      kind: "action" as const,
      arguments: RebootArgs,
      execute: (args: z.infer<typeof RebootArgs>, ctx: MethodContext) =>
        runOnCore("lxc", "reboot", args, ctx),
    },
    convertToTemplate: {
      description:
        "Convert a stopped container tagged swamp and not production/protected (force overrides) into a template (shutdownFirst: shut a running one down first, verified); succeeds when its config says template: 1 and the cluster lists it as a template",
      kind: "action" as const,
      arguments: TemplateArgs,
      execute: (args: z.infer<typeof TemplateArgs>, ctx: MethodContext) =>
        runOnCore("lxc", "convertToTemplate", args, ctx),
    },
    ...powerMethods("lxc"),
    ...nicMethods("lxc"),
    ...diskMethods("lxc"),
    ...firewallMethods("lxc"),
    ...haMethods("lxc"),
    ...nodeMethods("lxc"),
    ...storageMethods("lxc"),
    ...snapshotMethods("lxc"),
    ...backupMethods("lxc"),
    ...migrateMethod("lxc"),
    ...preflightMethod("lxc", (): string[] => Object.keys(model.methods)),
  },
};
