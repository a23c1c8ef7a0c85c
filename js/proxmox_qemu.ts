/**
 * `@stateless/proxmox/qemu`: Proxmox VE virtual machines, where a method succeeds only when its effect
 * was observed. The decisions are made by the Rust core (`_lib/core.ts`); this file declares the
 * arguments, records and methods swamp sees.
 *
 * @module
 */
import { z } from "npm:zod@4";
import {
  type CheckContext,
  checkOnCore,
  type MethodContext,
  runOnCore,
} from "./_lib/core.ts";

/** A single-line value: a newline or NUL could break the ssh command line or a log. */
const singleLine = (what: string) =>
  z.string().min(1, `${what} must not be empty`).refine(
    (v) => !/[\n\r\0]/.test(v),
    {
      message: `${what} must not contain a newline, carriage return or NUL`,
    },
  );

/**
 * A value placed in an API path (node names, storage ids): letters, digits, `.`, `_`, `-`, starting
 * with a letter or digit, so it can never add a segment, a query or `..`.
 */
const pathSegment = (what: string) =>
  z.string().regex(
    /^[A-Za-z0-9][A-Za-z0-9._-]*$/,
    `${what} must be a name of letters, digits, ., _ and - starting with a letter or digit (it becomes part of an API path)`,
  );

const ApiTransport = z.object({
  kind: z.literal("api"),
  node: pathSegment("node"),
  apiUrl: singleLine("apiUrl").refine((v) => /^https?:\/\/[^/]/.test(v), {
    message: "apiUrl must be an http(s) URL, e.g. https://pve1:8006",
  }),
  tokenId: singleLine("tokenId"),
  tokenSecret: singleLine("tokenSecret").meta({ sensitive: true }),
  caCert: z.string().optional(),
  skipTlsVerify: z.boolean().default(false),
});

const SshTransport = z.object({
  kind: z.literal("ssh"),
  node: pathSegment("node"),
  host: singleLine("host").refine((v) => !v.startsWith("-"), {
    message: "host must not start with -",
  }),
  user: singleLine("user").refine(
    (v) => !v.startsWith("-") && !v.includes("@"),
    {
      message: "user must not start with - or contain @",
    },
  ).default("root"),
  port: z.number().int().min(1).max(65535).default(22),
  proxyJump: singleLine("proxyJump").optional(),
  proxyCommand: singleLine("proxyCommand").optional(),
  identityFile: singleLine("identityFile").optional(),
  identityAgent: singleLine("identityAgent").optional(),
  strictHostKeyChecking: z.enum(["yes", "accept-new", "no", "off"]).optional(),
  connectTimeoutSec: z.number().int().positive().max(3600).default(15),
  sshBinary: singleLine("sshBinary").default("ssh"),
  pveshBinary: singleLine("pveshBinary").default("pvesh"),
});

const GlobalArgs = z.object({
  name: z.string().min(1),
  transport: z.discriminatedUnion("kind", [ApiTransport, SshTransport]),
  taskTimeoutSec: z.number().int().positive().max(604800).default(300),
  pollIntervalSec: z.number().int().positive().max(3600).default(3),
});

const vmid = z.number().int().min(100).max(999999999);
const guestRef = {
  vmid: vmid.optional(),
  vmName: singleLine("vmName").optional(),
};
const requireGuest = (a: { vmid?: number; vmName?: string }) =>
  a.vmid !== undefined || a.vmName !== undefined;
const provideGuest = { message: "Provide vmid or vmName", path: ["vmid"] };

const LookupArgs = z.object(guestRef).refine(requireGuest, provideGuest);

const GuestExecArgs = z.object({
  ...guestRef,
  command: z.array(
    z.string().min(1, "command items must not be empty").refine(
      (v) => !v.includes("\0"),
      { message: "command items must not contain NUL" },
    ),
  ).min(1, "command must not be empty"),
  timeoutSec: z.number().int().positive().max(86400).default(30),
  allowNonZeroExit: z.boolean().default(false),
  allowedExitCodes: z.array(z.number().int().min(0).max(255)).optional(),
  inputData: z.string().refine(
    (v) => new TextEncoder().encode(v).length <= 65536,
    { message: "inputData must be at most 65536 bytes (PVE's limit)" },
  ).refine((v) => !v.includes("\0"), {
    // No argv can carry a NUL, so it could never reach pvesh over ssh; refused on both transports.
    message: "inputData must not contain NUL",
  }).optional(),
}).refine(requireGuest, provideGuest);

const StartArgs = z.object({
  ...guestRef,
  waitForIp: z.boolean().default(false),
  allowNoIp: z.boolean().default(false),
}).refine(requireGuest, provideGuest);

const StopArgs = z.object({
  ...guestRef,
  force: z.boolean().default(false),
}).refine(requireGuest, provideGuest);

const ShutdownArgs = z.object({
  ...guestRef,
  timeoutSec: z.number().int().positive().max(86400).default(120),
  forceStopAfter: z.boolean().default(false),
  force: z.boolean().default(false),
}).refine(requireGuest, provideGuest);

const DeleteArgs = z.object({
  ...guestRef,
  purge: z.boolean().default(true),
  force: z.boolean().default(false),
}).refine(requireGuest, provideGuest);

const CloneArgs = z.object({
  templateId: vmid,
  vmid,
  name: singleLine("name"),
  full: z.boolean().default(true),
  storage: singleLine("storage").optional(),
}).refine((a) => a.templateId !== a.vmid, {
  message: "vmid must differ from templateId",
  path: ["vmid"],
});

const GetConfigArgs = z.object(guestRef).refine(requireGuest, provideGuest);

/** Parameters of PVE's config update that are not config keys (they change how it applies). */
const NOT_CONFIG_KEYS = [
  "digest",
  "skiplock",
  "revert",
  "background_delay",
  "node",
  "vmid",
];

const SetConfigArgs = z.object({
  ...guestRef,
  config: z.record(
    z.string().regex(/^[a-zA-Z][a-zA-Z0-9_]*$/).refine(
      (k) => !NOT_CONFIG_KEYS.includes(k),
      { message: "is a parameter of PVE's config update, not a config key" },
    ),
    z.union([z.string(), z.number()]),
  ).refine((c) => Object.keys(c).length > 0, {
    message: "config must hold at least one key",
  }),
}).refine(requireGuest, provideGuest);

const ResizeDiskArgs = z.object({
  ...guestRef,
  disk: z.string().regex(/^(scsi|sata|virtio|ide)\d+$/).default("scsi0"),
  size: z.string().regex(/^\+?\d+(\.\d+)?[KMGT]?$/),
}).refine(requireGuest, provideGuest);

/** sync: with vmid/vmName just that guest, else every guest of the node or of the cluster. */
const SyncArgs = z.object({
  ...guestRef,
  scope: z.enum(["node", "cluster"]).default("node"),
  node: pathSegment("node").optional(),
});

/** Node-scoped reads: the transport's node unless `node` names another. */
const NodeArgs = z.object({
  node: pathSegment("node").optional(),
});

const ConfigValues = z.record(z.string(), z.union([z.string(), z.number()]));

const Identity = z.object({
  smbiosUuid: z.string().optional(),
  ctime: z.number().optional(),
});

const GuestRecord = z.object({
  vmid: z.number(),
  present: z.boolean(),
  status: z.string(),
  name: z.string().optional(),
  node: z.string().optional(),
  qmpStatus: z.string().optional(),
  lock: z.string().optional(),
  ha: z.object({ managed: z.boolean(), state: z.string().optional() })
    .optional(),
  tags: z.array(z.string()),
  template: z.boolean().optional(),
  agentConfigured: z.boolean().optional(),
  ipv4: z.string().optional(),
  cpuPct: z.number().optional(),
  cpus: z.number().optional(),
  memBytes: z.number().optional(),
  maxMemBytes: z.number().optional(),
  memPct: z.number().optional(),
  diskBytes: z.number().optional(),
  maxDiskBytes: z.number().optional(),
  netinBytes: z.number().optional(),
  netoutBytes: z.number().optional(),
  uptimeSec: z.number().optional(),
  identity: Identity.optional(),
  identityChanged: z.object({ previous: Identity, current: Identity })
    .optional(),
  warnings: z.array(z.string()).optional(),
  lastTask: z.string().optional(),
  pending: ConfigValues.optional(),
  pendingDelete: z.array(z.string()).optional(),
  lastOperation: z.string(),
  recordedAt: z.string(),
});

const ExecRecord = z.object({
  vmid: z.number(),
  node: z.string(),
  command: z.array(z.string()),
  pid: z.number().optional(),
  outcome: z.enum([
    "exited",
    "signaled",
    "timedOut",
    "notStarted",
    "unconfirmed",
    "resultLost",
    "aborted",
  ]),
  exited: z.boolean(),
  exitCode: z.number().optional(),
  signal: z.number().optional(),
  stdout: z.string().optional(),
  stderr: z.string().optional(),
  stdoutTruncated: z.boolean(),
  stderrTruncated: z.boolean(),
  durationMs: z.number(),
  timedOut: z.boolean(),
  accepted: z.boolean(),
  error: z.string().optional(),
  lastOperation: z.string(),
  recordedAt: z.string(),
});

const ConfigRecord = z.object({
  vmid: z.number(),
  node: z.string(),
  config: ConfigValues,
  pending: ConfigValues.optional(),
  pendingDelete: z.array(z.string()).optional(),
  recordedAt: z.string(),
});

const NodeStatusRecord = z.object({
  node: z.string(),
  cpuPct: z.number().optional(),
  cpus: z.number().optional(),
  loadavg: z.array(z.number()).optional(),
  memTotal: z.number().optional(),
  memUsed: z.number().optional(),
  memPct: z.number().optional(),
  swapTotal: z.number().optional(),
  swapUsed: z.number().optional(),
  swapPct: z.number().optional(),
  rootfsTotal: z.number().optional(),
  rootfsUsed: z.number().optional(),
  rootfsPct: z.number().optional(),
  uptimeSec: z.number().optional(),
  kernelVersion: z.string().optional(),
  pveVersion: z.string().optional(),
  disksAvailable: z.boolean().optional(),
  disksUnavailableReason: z.string().optional(),
  disks: z.array(z.object({
    device: z.string(),
    type: z.string().optional(),
    model: z.string().optional(),
    serial: z.string().optional(),
    sizeBytes: z.number().optional(),
    health: z.string(),
    wearoutPct: z.number().optional(),
    usedBy: z.string().optional(),
  })),
  recordedAt: z.string(),
});

const NodeConfigRecord = z.object({
  node: z.string(),
  storages: z.array(z.object({
    storage: z.string(),
    type: z.string().optional(),
    content: z.array(z.string()),
    avail: z.number().optional(),
    total: z.number().optional(),
    active: z.boolean().optional(),
  })),
  bridges: z.array(z.string()),
  bridgesAvailable: z.boolean().optional(),
  bridgesUnavailableReason: z.string().optional(),
  recordedAt: z.string(),
});

/** The methods that change a guest: the reachability check runs before them. */
const MUTATING = [
  "clone",
  "setConfig",
  "resizeDisk",
  "start",
  "stop",
  "shutdown",
  "delete",
  "guestExec",
];

export const model = {
  type: "@stateless/proxmox/qemu",
  version: "2026.11.29.1",
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
    config: {
      description: "A VM's current configuration (instance vm-<vmid>-config)",
      schema: ConfigRecord,
      lifetime: "infinite" as const,
      garbageCollection: 20,
    },
    nodeStatus: {
      description: "A node's status and disks (instance node-<node>)",
      schema: NodeStatusRecord,
      lifetime: "infinite" as const,
      garbageCollection: 20,
    },
    nodeConfig: {
      description:
        "A node's storages and bridges (instance node-<node>-config)",
      schema: NodeConfigRecord,
      lifetime: "infinite" as const,
      garbageCollection: 20,
    },
  },
  checks: {
    "transport-reachable": {
      description: "PVE answers GET /version over the configured transport",
      labels: ["live"],
      appliesTo: MUTATING,
      execute: (ctx: CheckContext) =>
        checkOnCore("qemu", "transport-reachable", ctx),
    },
  },
  // Every method sets `kind: "action"`: swamp's delete/read/update kinds assume one resource per
  // model, and would tombstone every guest's record after one delete or refuse reads after it.
  methods: {
    lookup: {
      description:
        "Record the VM's live state (or its confirmed absence) as a new version of vm-<vmid>",
      kind: "action" as const,
      arguments: LookupArgs,
      execute: (args: z.infer<typeof LookupArgs>, ctx: MethodContext) =>
        runOnCore("qemu", "lookup", args, ctx),
    },
    guestExec: {
      description:
        "Run a command through the guest agent; fails unless it exits 0 (or an allowed code)",
      kind: "action" as const,
      arguments: GuestExecArgs,
      execute: (args: z.infer<typeof GuestExecArgs>, ctx: MethodContext) =>
        runOnCore("qemu", "guestExec", args, ctx),
    },
    start: {
      description:
        "Start the VM; succeeds when status/current shows it running (qmpstatus running), and with waitForIp when the agent reports an IPv4 address (allowNoIp: a missing one only warns)",
      kind: "action" as const,
      arguments: StartArgs,
      execute: (args: z.infer<typeof StartArgs>, ctx: MethodContext) =>
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
        "Clone templateId to vmid; succeeds when the new VM exists with the requested name and the swamp tag (an existing vmid counts only if it is that same VM)",
      kind: "action" as const,
      arguments: CloneArgs,
      execute: (args: z.infer<typeof CloneArgs>, ctx: MethodContext) =>
        runOnCore("qemu", "clone", args, ctx),
    },
    getConfig: {
      description:
        "Record the VM's running config and its pending changes as vm-<vmid>-config",
      kind: "action" as const,
      arguments: GetConfigArgs,
      execute: (args: z.infer<typeof GetConfigArgs>, ctx: MethodContext) =>
        runOnCore("qemu", "getConfig", args, ctx),
    },
    setConfig: {
      description:
        "Change config keys; succeeds when each reads back applied or pending until the next start (recorded in vm-<vmid> as pending)",
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
        "Record every VM of the node (scope node, one request) or of every online node (scope cluster) as vm-<vmid>; stored VMs confirmed gone are recorded absent",
      kind: "action" as const,
      arguments: SyncArgs,
      execute: (args: z.infer<typeof SyncArgs>, ctx: MethodContext) =>
        runOnCore("qemu", "sync", args, ctx),
    },
    nodeStatus: {
      description:
        "Record the node's status and disks (SMART health) as node-<node>; without Sys.Audit the record says disks are unavailable",
      kind: "action" as const,
      arguments: NodeArgs,
      execute: (args: z.infer<typeof NodeArgs>, ctx: MethodContext) =>
        runOnCore("qemu", "nodeStatus", args, ctx),
    },
    nodeConfig: {
      description:
        "Record the node's storages and bridges as node-<node>-config",
      kind: "action" as const,
      arguments: NodeArgs,
      execute: (args: z.infer<typeof NodeArgs>, ctx: MethodContext) =>
        runOnCore("qemu", "nodeConfig", args, ctx),
    },
  },
};
