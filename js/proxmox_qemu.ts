/**
 * `@stateless/proxmox/qemu`: Proxmox VE virtual machines, where a method succeeds only when its effect
 * was observed. The decisions are made by the Rust core (`_lib/core.ts`); this file declares the
 * arguments, records and methods swamp sees.
 *
 * @module
 */
import { z } from "npm:zod@4";
import { type MethodContext, runOnCore } from "./_lib/core.ts";
import {
  applyPending,
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
  secondsUpToADay,
  SetConfigArgs,
  sharedResources,
  ShutdownArgs,
  singleLine,
  snapshotMethods,
  StopArgs,
  storageMethods,
  SyncArgs,
  TemplateArgs,
  timeoutSec120,
  transportReachable,
  vmid,
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

/** What waitReady waits for (also the `waitReady` option of `start` and `clone`). */
const readyFields = {
  ipv4: field.trueByDefault,
  ipv6: field.falseByDefault,
  nic: field.string.regex(
    /^net([0-9]|[12][0-9]|3[01])$/,
    "nic must be net0 … net31",
  ).optional(),
  cloudInit: field.falseByDefault,
  timeoutSec: secondsUpToADay.default(300),
};

/** clone's, create's and start's option: start the VM and wait until it is ready (as waitReady). */
const waitReadyOption = z.object(readyFields).optional();

/** A new VM's name (clone's and create's). */
const newVmName = dnsName("name");

const CloneArgs = z.object({
  templateId: vmid,
  ...newVmid,
  name: newVmName,
  full: field.trueByDefault,
  storage: optionalLine,
  /** Start the clone and wait until it is ready (as waitReady). */
  waitReady: waitReadyOption,
}).check(
  z.refine((a) => a.templateId !== a.vmid, {
    message: "vmid must differ from templateId",
    path: ["vmid"],
  }),
  z.refine((a) => a.full || a.storage === undefined, {
    // qemu-server clone_vm refuses a target storage for a linked clone.
    message:
      "storage cannot be given with full: false (PVE puts a linked clone on its template's storage)",
    path: ["storage"],
  }),
  notBothVmidAndRange,
);

/**
 * Keys `create`'s config bag may not hold: they have their own argument, or change how PVE creates
 * (`archive` restores a backup, `force` overwrites) rather than what it creates.
 */
const VM_CREATE_REFUSED_KEYS = [
  "name",
  "cores",
  "memory",
  "agent",
  "start",
  "vmid",
  "node",
  "archive",
  "live-restore",
  "force",
  "unique",
  "digest",
  "template",
];

/** Whether a value asks PVE to import an image (`import-from=` is one of its parts). */
const asksImport = (v: string | number | boolean) =>
  String(v).split(",").some((part) =>
    part.includes("=") && part.slice(0, part.indexOf("=")) === "import-from"
  );

/** `<storage>:0`: the volume an import needs (PVE sizes the disk by the image). */
const zeroVolume = (v: string | number | boolean) => {
  const volume = String(v).split(",")[0];
  const at = volume.indexOf(":");
  const size = volume.slice(at + 1);
  return at > 0 && /^\d+(\.\d+)?$/.test(size) && Number(size) === 0;
};

/**
 * create: a new VM from parameters — disks (`<storage>:<GiB>`, or `<storage>:0,import-from=<volid>`
 * for an image), a cloud-init drive (`<storage>:cloudinit`) and its keys, NICs — in `config`.
 */
const VmCreateArgs = z.object({
  ...newVmid,
  name: newVmName,
  cores: field.integer.min(1).max(1024).optional(),
  /** MiB. */
  memory: field.integer.min(16).max(268435456).optional(),
  agent: field.optionalBoolean,
  start: field.falseByDefault,
  /** Start the VM and wait until it is ready (as waitReady). */
  waitReady: waitReadyOption,
  /** The VM's options: scsi0, ide2, net0, ciuser, sshkeys, ipconfig0, tags, … */
  config: optionBag(
    VM_CREATE_REFUSED_KEYS,
    "has its own argument, or is not a VM option",
  ).check(
    z.refine(
      (c) =>
        Object.values(c).every((v) =>
          typeof v !== "string" || !v.includes("\0")
        ),
      { message: "config values must not contain NUL" },
    ),
    z.refine(
      (c) => Object.values(c).every((v) => !asksImport(v) || zeroVolume(v)),
      {
        message:
          "import-from needs the volume <storage>:0 (PVE sizes the disk by the image), e.g. local-lvm:0,import-from=local:import/cloud.qcow2",
      },
    ),
  ).optional(),
}).check(notBothVmidAndRange);

/** An ssh public key line as PVE validates keys: `<type> <base64> [comment]`. */
const SSH_KEY_LINE =
  /^(ssh-rsa|ssh-dss|ssh-ed25519|ecdsa-sha2-nistp(256|384|521)|sk-ssh-ed25519@openssh\.com|sk-ecdsa-sha2-nistp256@openssh\.com) [A-Za-z0-9+/]+={0,3}( .*)?$/;

/** ipconfig0 … ipconfig31 (PVE's $MAX_NETS). */
const ipconfigFields = Object.fromEntries(
  Array.from({ length: 32 }, (_, n) => [`ipconfig${n}`, optionalLine]),
);

/** cloudInit: options to set, then the drive is regenerated and the generated config verified. */
const CloudInitArgs = z.object({
  ...guestRef,
  ciuser: optionalLine,
  cipassword: singleLine("cipassword").meta({ sensitive: true }).optional(),
  sshkeys: field.string.refine((v) => !v.includes("\0"), {
    message: "sshkeys must not contain NUL",
  }).refine(
    (v) =>
      v.split("\n").every((l) =>
        l.trim() === "" || SSH_KEY_LINE.test(l.trim())
      ),
    {
      message:
        "every line of sshkeys must be an ssh public key (`<type> <base64> [comment]`, as PVE validates keys)",
    },
  ).optional(),
  ...ipconfigFields,
  nameserver: optionalLine,
  searchdomain: optionalLine,
  citype: z.enum(["configdrive2", "nocloud", "opennebula"]).optional(),
  cicustom: optionalLine,
  ciupgrade: field.optionalBoolean,
  applyPending,
  timeoutSec: timeoutSec120,
}).check(requireGuest);

const WaitReadyArgs = z.object({ ...guestRef, ...readyFields }).check(
  requireGuest,
);

/** start of a VM: the shared start arguments and `waitReady` (what to wait for after the start). */
const QemuStartArgs = z.object({
  ...guestRef,
  waitForIp: field.falseByDefault,
  allowNoIp: field.falseByDefault,
  waitReady: waitReadyOption,
  /** A paused or suspended VM is resumed (without it, refused). */
  resume: field.falseByDefault,
}).check(requireGuest);

/** What one waitReady saw (instance vm-<vmid>-ready). */
const ReadyRecord = z.object({
  vmid: field.number,
  node: field.string,
  ready: field.boolean,
  agentUp: field.boolean,
  agentVersion: field.optionalString,
  interfaces: z.array(z.object({
    name: field.string,
    mac: field.optionalString,
    addresses: field.strings,
    /** Addresses reported that do not count: unspecified, loopback, link-local, multicast, broadcast. */
    skipped: z.array(z.object({ address: field.string, why: field.string }))
      .optional(),
  })),
  cloudInit: z.object({
    outcome: field.string,
    exitCode: field.optionalNumber,
    status: field.optionalString,
  }).optional(),
  ipv4: field.optionalString,
  ipv6: field.optionalString,
  error: field.optionalString,
  waitedMs: field.number,
  lastOperation: field.string,
  recordedAt: field.string,
});

const ResizeDiskArgs = z.object({
  ...guestRef,
  disk: field.string.regex(/^(scsi|sata|virtio|ide)\d+$/).default("scsi0"),
  size: field.string.regex(/^\+?\d+(\.\d+)?[KMGT]?$/),
}).check(requireGuest);

const GuestRecord = z.object({
  ...guestStateFields,
  qmpStatus: field.optionalString,
  agentConfigured: field.optionalBoolean,
});

/** The largest file fileWrite/fileRead handle: one PVE file-read (`$MAX_READ_SIZE`, 16 MiB). */
const MAX_FILE_BYTES = 16 * 1024 * 1024;
const BASE64 =
  /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const guestPath = field.string.min(1, "path must not be empty").refine(
  (p) => !p.includes("\0"),
  { message: "path must not contain NUL" },
);

const FileWriteArgs = z.object({
  ...guestRef,
  path: guestPath,
  content: field.optionalString,
  contentBase64: field.string.regex(
    BASE64,
    "contentBase64 must be padded base64",
  )
    .optional(),
  mode: field.string.regex(/^[0-7]{3,4}$/, "mode must be 3 or 4 octal digits")
    .optional(),
}).check(
  requireGuest,
  z.refine(
    (a) => (a.content === undefined) !== (a.contentBase64 === undefined),
    {
      message: "give exactly one of content (text) and contentBase64 (bytes)",
      path: ["content"],
    },
  ),
  z.refine(
    (a) =>
      (a.content !== undefined
        ? new TextEncoder().encode(a.content).length
        : a.contentBase64 !== undefined
        ? a.contentBase64.length / 4 * 3 -
          (a.contentBase64.match(/=*$/)?.[0].length ?? 0)
        : 0) <= MAX_FILE_BYTES,
    {
      message: "content must be at most 16777216 bytes",
      path: ["content"],
    },
  ),
);

const FileReadArgs = z.object({
  ...guestRef,
  path: guestPath,
  maxBytes: field.integer.min(1).max(MAX_FILE_BYTES).default(1024 * 1024),
}).check(requireGuest);

const FileRecord = z.object({
  vmid: field.number,
  node: field.string,
  path: field.string,
  bytes: field.number,
  truncated: field.boolean,
  verified: field.optionalBoolean,
  chunks: field.optionalNumber,
  mode: field.optionalString,
  encoding: z.enum(["utf8", "base64"]).optional(),
  content: field.optionalString,
  contentBase64: field.optionalString,
  error: field.optionalString,
  lastOperation: field.string,
  recordedAt: field.string,
});

/** The methods that change a guest: the reachability check runs before them. */
/**
 * The methods the `permissions` check runs before: those that change several things in a row
 * (a stop then a destroy, a clone then a tag, a download then a check), where a privilege found
 * missing halfway leaves work half done. A one-request method (start, stop, guestExec …) meets
 * PVE's own permission check before anything happens, with PVE's reason; asking first would only
 * double what a fleet costs the node.
 */
const MULTI_STEP = [
  "clone",
  "create",
  "restore",
  "delete",
  "migrate",
  "backup",
  "downloadUrl",
  "cloudInit",
  "convertToTemplate",
  "fileWrite",
];

const MUTATING = [
  "clone",
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
  "resizeDisk",
  "start",
  "stop",
  "suspend",
  "resume",
  "shutdown",
  "delete",
  "guestExec",
  "snapshot",
  "rollback",
  "deleteSnapshot",
  "convertToTemplate",
  "reboot",
  "migrate",
  "fileWrite",
  "cloudInit",
  "downloadUrl",
  "backup",
  "deleteBackup",
  "restore",
];

/**
 * The `@stateless/proxmox/qemu` model: Proxmox VE virtual machines addressed by VMID (or name), one
 * `vm-<vmid>` record per VM, and methods that succeed only when their effect was observed.
 */
export const model = {
  type: "@stateless/proxmox/qemu",
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
    guest: {
      description:
        "One VM's observed state (instance vm-<vmid>); present: false when confirmed absent",
      schema: GuestRecord,
      lifetime: "infinite" as const,
      garbageCollection: 20,
    },
    exec: {
      description:
        "One guestExec run (instance vm-<vmid>-exec): outcome, exit code or signal, output",
      schema: ExecRecord,
      lifetime: "infinite" as const,
      garbageCollection: 20,
    },
    file: {
      description:
        "One fileWrite or fileRead (instance vm-<vmid>-file): the path, the bytes, whether the read-back matched, the content read",
      schema: FileRecord,
      lifetime: "infinite" as const,
      garbageCollection: 20,
    },
    ready: {
      description:
        "One waitReady run (instance vm-<vmid>-ready): agent version, addresses per NIC, the cloud-init result",
      schema: ReadyRecord,
      lifetime: "infinite" as const,
      garbageCollection: 20,
    },
    ...sharedResources("VM", "vm"),
    ...backupResources("VM", "vm"),
    ...taskResource,
    ...preflightResource,
  },
  files: taskLogFile,
  // The default report of every method run (js/reports/observed_method_report.ts).
  reports: ["@stateless/proxmox/method-observed"],
  checks: {
    "transport-reachable": transportReachable("qemu", MUTATING),
    permissions: permissionsCheck("qemu", MULTI_STEP),
  },
  // Every method sets `kind: "action"`: swamp's delete/read/update kinds assume one resource per
  // model, and would tombstone every guest's record after one delete or refuse reads after it.
  methods: {
    lookup: {
      description:
        "Record the VM's live state (or its confirmed absence) as a new version of vm-<vmid>",
      kind: "action" as const,
      arguments: GuestArgs,
      execute: (args: z.infer<typeof GuestArgs>, ctx: MethodContext) =>
        runOnCore("qemu", "lookup", args, ctx),
    },
    guestExec: {
      description:
        "Run a command through the guest agent; fails unless it exits 0 (or a code okExitCodes, allowedExitCodes or allowNonZeroExit accepts)",
      kind: "action" as const,
      arguments: GuestExecArgs,
      execute: (args: z.infer<typeof GuestExecArgs>, ctx: MethodContext) =>
        runOnCore("qemu", "guestExec", args, ctx),
    },
    start: {
      description:
        "Start the VM (resume: true resumes a paused or suspended one, which is refused otherwise); succeeds when status/current shows it running (qmpstatus running), with waitForIp when the agent reports an IPv4 address (allowNoIp: a missing one only warns), and with waitReady when it is ready as waitReady decides (recorded as vm-<vmid>-ready)",
      kind: "action" as const,
      arguments: QemuStartArgs,
      execute: (args: z.infer<typeof QemuStartArgs>, ctx: MethodContext) =>
        runOnCore("qemu", "start", args, ctx),
    },
    stop: {
      description:
        "Hard-stop a VM tagged swamp (force overrides); succeeds when status/current shows it stopped",
      kind: "action" as const,
      arguments: StopArgs,
      execute: (args: z.infer<typeof StopArgs>, ctx: MethodContext) =>
        runOnCore("qemu", "stop", args, ctx),
    },
    shutdown: {
      description:
        "Shut a VM tagged swamp down gracefully (ACPI) within timeoutSec, with forceStopAfter a hard stop after that; succeeds when status/current shows it stopped",
      kind: "action" as const,
      arguments: ShutdownArgs,
      execute: (args: z.infer<typeof ShutdownArgs>, ctx: MethodContext) =>
        runOnCore("qemu", "shutdown", args, ctx),
    },
    delete: {
      description:
        "Destroy a VM tagged swamp and not production/protected (force overrides), stopping it first if it runs; succeeds when it is gone from every node. Writes only vm-<vmid> (status deleted)",
      kind: "action" as const,
      arguments: DeleteArgs,
      execute: (args: z.infer<typeof DeleteArgs>, ctx: MethodContext) =>
        runOnCore("qemu", "delete", args, ctx),
    },
    clone: {
      description:
        "Clone templateId to vmid (or, without vmid, to a free VMID within vmidRange, claimed by the clone request itself); succeeds when the new VM exists with the requested name and the swamp tag (an existing vmid counts only if it is that same VM); with waitReady it is then started (verified) and waited for as waitReady does",
      kind: "action" as const,
      arguments: CloneArgs,
      execute: (args: z.infer<typeof CloneArgs>, ctx: MethodContext) =>
        runOnCore("qemu", "clone", args, ctx),
    },
    create: {
      description:
        "Create a VM from parameters (new disks, disks imported from an image with import-from, a cloud-init drive, NICs); succeeds when it is seen with its name and the swamp tag, unlocked, every setting read back as PVE stores it and every disk it made on its storage (an imported one with the image's size)",
      kind: "action" as const,
      arguments: VmCreateArgs,
      execute: (args: z.infer<typeof VmCreateArgs>, ctx: MethodContext) =>
        runOnCore("qemu", "create", args, ctx),
    },
    getConfig: {
      description:
        "Record the VM's running config and its pending changes as vm-<vmid>-config",
      kind: "action" as const,
      arguments: GuestArgs,
      execute: (args: z.infer<typeof GuestArgs>, ctx: MethodContext) =>
        runOnCore("qemu", "getConfig", args, ctx),
    },
    setConfig: {
      description:
        "Change config keys; succeeds when each reads back exactly as requested (as PVE stores it) or pending until a restart (recorded in vm-<vmid> as pending); applyPending: reboot then reboots a running VM (verified new boot) when something is pending and requires nothing pending after it",
      kind: "action" as const,
      arguments: SetConfigArgs,
      execute: (args: z.infer<typeof SetConfigArgs>, ctx: MethodContext) =>
        runOnCore("qemu", "setConfig", args, ctx),
    },
    resizeDisk: {
      description:
        "Grow a disk (+N grows by, N grows to); succeeds when the resize task ended and the disk's size in the config reached the target",
      kind: "action" as const,
      arguments: ResizeDiskArgs,
      execute: (args: z.infer<typeof ResizeDiskArgs>, ctx: MethodContext) =>
        runOnCore("qemu", "resizeDisk", args, ctx),
    },
    sync: {
      description:
        "Record every VM of the node (scope node, one request), of nodes, or of every online node (scope cluster) as vm-<vmid> — with tags, or a CEL where over its fields, only those selected; stored VMs confirmed gone are recorded absent",
      kind: "action" as const,
      arguments: SyncArgs,
      execute: (args: z.infer<typeof SyncArgs>, ctx: MethodContext) =>
        runOnCore("qemu", "sync", args, ctx),
    },
    waitReady: {
      description:
        "Wait until the running VM is usable: the guest agent answers ping, the interfaces carry an IPv4 (ipv4) and/or a global IPv6 (ipv6) address — on the NIC with nic's MAC when given; only usable addresses count (not unspecified, loopback, link-local, multicast or broadcast; those are recorded as skipped) — and, with cloudInit, `cloud-init status --wait` exits 0; within timeoutSec. Records what it saw as vm-<vmid>-ready",
      kind: "action" as const,
      arguments: WaitReadyArgs,
      execute: (args: z.infer<typeof WaitReadyArgs>, ctx: MethodContext) =>
        runOnCore("qemu", "waitReady", args, ctx),
    },
    cloudInit: {
      description:
        "Set cloud-init options (ciuser, cipassword, sshkeys, ipconfigN, nameserver, searchdomain, citype, cicustom, ciupgrade), regenerate the cloud-init drive, and succeed only when the config PVE generates (user, network, meta) carries every asked value and nothing asked is pending against the drive; applyPending: reboot reboots a running VM (verified) so the guest applies it. Fails without a cloud-init drive",
      kind: "action" as const,
      arguments: CloudInitArgs,
      execute: (args: z.infer<typeof CloudInitArgs>, ctx: MethodContext) =>
        runOnCore("qemu", "cloudInit", args, ctx),
    },
    reboot: {
      description:
        "Reboot a running VM tagged swamp (force overrides), applying pending changes; succeeds when status/current shows it running again with a new boot (another QEMU process, or an uptime that restarted) within taskTimeoutSec",
      kind: "action" as const,
      arguments: RebootArgs,
      execute: (args: z.infer<typeof RebootArgs>, ctx: MethodContext) =>
        runOnCore("qemu", "reboot", args, ctx),
    },
    convertToTemplate: {
      description:
        "Convert a stopped VM tagged swamp and not production/protected (force overrides) into a template (shutdownFirst: shut a running one down first, verified); succeeds when its config says template: 1 and the cluster lists it as a template",
      kind: "action" as const,
      arguments: TemplateArgs,
      execute: (args: z.infer<typeof TemplateArgs>, ctx: MethodContext) =>
        runOnCore("qemu", "convertToTemplate", args, ctx),
    },
    fileWrite: {
      description:
        "Write a file in the VM through its guest agent (content as text or contentBase64, optional mode); files over 46,080 bytes go in parts joined by a verified exec; succeeds only when reading it back matches byte for byte",
      kind: "action" as const,
      arguments: FileWriteArgs,
      execute: (args: z.infer<typeof FileWriteArgs>, ctx: MethodContext) =>
        runOnCore("qemu", "fileWrite", args, ctx),
    },
    fileRead: {
      description:
        "Record a file of the VM through its guest agent as vm-<vmid>-file, up to maxBytes (truncated says it goes on); text when UTF-8, else base64",
      kind: "action" as const,
      arguments: FileReadArgs,
      execute: (args: z.infer<typeof FileReadArgs>, ctx: MethodContext) =>
        runOnCore("qemu", "fileRead", args, ctx),
    },
    ...powerMethods("qemu"),
    ...nicMethods("qemu"),
    ...diskMethods("qemu"),
    ...firewallMethods("qemu"),
    ...haMethods("qemu"),
    ...nodeMethods("qemu"),
    ...storageMethods("qemu"),
    ...snapshotMethods("qemu"),
    ...backupMethods("qemu"),
    ...migrateMethod("qemu"),
    ...preflightMethod("qemu", (): string[] => Object.keys(model.methods)),
  },
};
