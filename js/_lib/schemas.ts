/**
 * The zod schemas both models share: the global (transport) arguments, the guest reference, the
 * option-bag rule, the record schemas both write (guest state fields, config, nodeStatus,
 * nodeConfig) and the `transport-reachable` check. Per-method argument schemas stay written out in
 * each model file, where swamp's catalogue reads them.
 *
 * The Rust core applies the same argument rules again; tests/properties/argument_agreement_test.ts
 * proves they agree.
 *
 * @module
 */
import { z } from "npm:zod@4";
import {
  type CheckContext,
  checkOnCore,
  type MethodContext,
  type ModelName,
  runOnCore,
} from "./core.ts";

const string = z.string();
const number = z.number();
const boolean = z.boolean();
const strings = z.array(string);

/**
 * The plain fields most records and arguments declare, each built once: a zod schema is immutable,
 * so one instance serves every object that holds it, and a chain started from one (`field.string
 * .regex(…)`) builds a new schema without changing it. Issue 32: sharing them cut the schema
 * objects a model's import builds by about a third.
 */
export const field = {
  string,
  number,
  integer: number.int(),
  boolean,
  strings,
  optionalString: string.optional(),
  optionalNumber: number.optional(),
  optionalBoolean: boolean.optional(),
  optionalStrings: strings.optional(),
  falseByDefault: boolean.default(false),
  trueByDefault: boolean.default(true),
};

/** PVE's `dns-name` format (pve-common pve_verify_dns_name): a container hostname, a VM name. */
const DNS_NAME =
  /^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)*$/;

/** A value PVE checks as a `dns-name`. */
export const dnsName = (what: string) =>
  field.string.check(
    z.maxLength(255),
    z.regex(
      DNS_NAME,
      `${what} must be a DNS name (letters, digits and inner hyphens, labels joined by dots)`,
    ),
  );

/** Whether a text is one line: a newline or NUL could break the ssh command line or a log. */
const isOneLine = (v: string) => !/[\n\r\0]/.test(v);

/** A single-line value, its messages naming it `what`. */
export const singleLine = (what: string) =>
  field.string.check(
    z.minLength(1, `${what} must not be empty`),
    z.refine(isOneLine, {
      message: `${what} must not contain a newline, carriage return or NUL`,
    }),
  );

/** The field an issue is about: the last key of its path. */
const fieldName = (issue: { path?: PropertyKey[] }) =>
  String(issue.path?.at(-1) ?? "the value");

/**
 * An optional single-line method argument, its messages naming the field by its key
 * (`ipconfig5 must not be empty`, as `singleLine("ipconfig5")` words it): one instance serves
 * every such field, since swamp validates a method's arguments as a whole and zod words a
 * message after it has put the field's key in the issue's path. Issue 32: the 37 such fields
 * of cloudInit and clone built 148 schema objects, a fifth of the qemu model's import. Not for
 * global arguments (swamp may check those field by field) nor a field with its own `.meta`.
 */
export const optionalLine = field.string.check(
  z.minLength(1, { error: (issue) => `${fieldName(issue)} must not be empty` }),
  z.refine(isOneLine, {
    error: (issue) =>
      `${fieldName(issue)} must not contain a newline, carriage return or NUL`,
  }),
).optional();

/**
 * A value placed in an API path (node names, storage ids): letters, digits, `.`, `_`, `-`, starting
 * with a letter or digit, so it can never add a segment, a query or `..`.
 */
export const pathSegment = (what: string) =>
  field.string.regex(
    /^[A-Za-z0-9][A-Za-z0-9._-]*$/,
    `${what} must be a name of letters, digits, ., _ and - starting with a letter or digit (it becomes part of an API path)`,
  );

/** The node and storage names arguments take, each built once for every schema that takes one. */
export const nodeName = pathSegment("node");
export const optionalNodeName = nodeName.optional();
export const storageName = pathSegment("storage");
export const optionalStorageName = storageName.optional();

/** A whole number of seconds, positive, at most an hour or a day (add `.default(…)`). */
export const secondsUpToAnHour = field.integer.positive().max(3600);
export const secondsUpToADay = field.integer.positive().max(86400);
/** The 120-second default timeout of shutdown, reboot, convertToTemplate and cloudInit: built once. */
export const timeoutSec120 = secondsUpToADay.default(120);

/**
 * A credential (tokenId, tokenSecret): no control character at all (a header cannot carry one, a
 * terminal would act on it). The message never echoes the value.
 */
export const credential = (what: string) =>
  field.string.check(
    z.minLength(1, `${what} must not be empty`),
    // deno-lint-ignore no-control-regex
    z.refine((v: string) => !/[\u0000-\u001f\u007f-\u009f]/.test(v), {
      message:
        `${what} must not contain a control character (newline, tab, NUL, DEL, …)`,
    }),
  );

const ApiTransport = z.object({
  kind: z.literal("api"),
  node: nodeName,
  apiUrl: singleLine("apiUrl").refine((v) => /^https?:\/\/[^/]/.test(v), {
    message: "apiUrl must be an http(s) URL, e.g. https://pve1:8006",
  }),
  tokenId: credential("tokenId"),
  tokenSecret: credential("tokenSecret").meta({ sensitive: true }),
  caCert: field.optionalString,
  skipTlsVerify: field.falseByDefault,
});

const SshTransport = z.object({
  kind: z.literal("ssh"),
  node: nodeName,
  host: singleLine("host").refine((v) => !v.startsWith("-"), {
    message: "host must not start with -",
  }),
  user: singleLine("user").refine(
    (v) => !v.startsWith("-") && !v.includes("@"),
    {
      message: "user must not start with - or contain @",
    },
  ).default("root"),
  port: field.integer.min(1).max(65535).default(22),
  proxyJump: singleLine("proxyJump").optional(),
  proxyCommand: singleLine("proxyCommand").optional(),
  identityFile: singleLine("identityFile").optional(),
  identityAgent: singleLine("identityAgent").optional(),
  strictHostKeyChecking: z.enum(["yes", "accept-new", "no", "off"]).optional(),
  connectTimeoutSec: secondsUpToAnHour.default(15),
  sshBinary: singleLine("sshBinary").default("ssh"),
  pveshBinary: singleLine("pveshBinary").default("pvesh"),
  /** `pct` on the node: a container's guestExec runs `pct exec` there. */
  pctBinary: singleLine("pctBinary").default("pct"),
});

/** The global arguments of both models: the instance label, the transport, the time budgets. */
export const GlobalArgs = z.object({
  name: field.string.min(1),
  transport: z.discriminatedUnion("kind", [ApiTransport, SshTransport]),
  taskTimeoutSec: field.integer.positive().max(604800).default(300),
  pollIntervalSec: secondsUpToAnHour.default(3),
  /** How long one API request may go unanswered before it counts as lost (not a task's budget). */
  requestTimeoutSec: secondsUpToAnHour.default(30),
});

/** A VMID as PVE accepts it. */
export const vmid = field.integer.min(100).max(999999999);
export const optionalVmid = vmid.optional();

/**
 * Where a new guest's VMID comes from: `vmid` (the caller's), else the lowest free one within
 * `vmidRange` (default PVE's whole range), claimed by the creating request itself.
 */
export const vmidRange = z.object({ min: vmid, max: vmid }).refine(
  (r) => r.max >= r.min,
  { message: "must be at least vmidRange.min", path: ["max"] },
);

/** The new-guest VMID fields (spread into clone's and create's arguments). */
export const newVmid = {
  vmid: optionalVmid,
  vmidRange: vmidRange.optional(),
};

/**
 * The rule that `vmid` and `vmidRange` exclude each other, as a check (`.check(notBothVmidAndRange)`):
 * one instance serves every method's arguments.
 */
export const notBothVmidAndRange = z.refine<
  { vmid?: number; vmidRange?: unknown }
>((a) => a.vmid === undefined || a.vmidRange === undefined, {
  message: "give either vmid or vmidRange, not both",
  path: ["vmidRange"],
});

/** The guest reference fields: `vmid` and/or `vmName` (spread into a method's arguments). */
export const guestRef = {
  vmid: optionalVmid,
  vmName: singleLine("vmName").optional(),
};

/**
 * The rule that a guest reference names a guest, as a check (`.check(requireGuest)`): one instance
 * serves every method's arguments.
 */
export const requireGuest = z.refine<{ vmid?: number; vmName?: string }>(
  (a) => a.vmid !== undefined || a.vmName !== undefined,
  { message: "Provide vmid or vmName", path: ["vmid"] },
);

/** Parameters of PVE's config update that are not config keys (they change how it applies). */
export const NOT_CONFIG_KEYS = [
  "digest",
  "skiplock",
  "revert",
  "background_delay",
  "node",
  "vmid",
];

/** PVE's option names, hyphens included (`allow-ksm`, `amd-sev`, `intel-tdx`). */
export const OPTION_KEY = /^[a-zA-Z][a-zA-Z0-9_-]*$/;

/** What every option bag shares, built once. */
const optionKey = field.string.regex(OPTION_KEY);
const optionValue = z.union([field.string, field.number, field.boolean]);

/**
 * A bag of PVE options (`setConfig`'s and `create`'s `config`): keys as PVE names options
 * ({@link OPTION_KEY}), none of `refused` (refused with `why`), values strings, numbers or
 * booleans. The core sends a boolean key's value as PVE's `1`/`0` (`true`, `"yes"`, `"on"` …) and
 * refuses any other value for it, naming the key; which keys are booleans is PVE's schema's to say.
 */
export const optionBag = (refused: readonly string[], why: string) =>
  z.record(
    optionKey.refine((k) => !refused.includes(k), { message: why }),
    optionValue,
  );

/** Config values as records hold them. */
export const ConfigValues = z.record(
  field.string,
  z.union([field.string, field.number]),
);
/** The changes a guest's config holds pending, when it holds any. */
const pendingConfig = ConfigValues.optional();

/** A record's `outcome`: `unknown` when its run sent a change whose outcome it could not observe. */
const unknownOutcome = z.enum(["unknown"]).optional();

const Identity = z.object({
  smbiosUuid: field.optionalString,
  ctime: field.optionalNumber,
});

/**
 * The fields of a guest state record (`vm-<vmid>`, `ct-<vmid>`) both models write; a model's record
 * schema spreads them and adds its own.
 */
export const guestStateFields = {
  vmid: field.number,
  present: field.boolean,
  status: field.string,
  name: field.optionalString,
  node: field.optionalString,
  lock: field.optionalString,
  ha: z.object({
    managed: field.boolean,
    state: field.optionalString,
    // haResource and haStatus: the resource's config and the HA manager's entry.
    requested: field.optionalString,
    crmState: field.optionalString,
    node: field.optionalString,
    maxRestart: field.optionalNumber,
    maxRelocate: field.optionalNumber,
    failback: field.optionalBoolean,
    comment: field.optionalString,
  }).optional(),
  tags: field.strings,
  template: field.optionalBoolean,
  ipv4: field.optionalString,
  cpuPct: field.optionalNumber,
  cpus: field.optionalNumber,
  memBytes: field.optionalNumber,
  maxMemBytes: field.optionalNumber,
  memPct: field.optionalNumber,
  diskBytes: field.optionalNumber,
  maxDiskBytes: field.optionalNumber,
  netinBytes: field.optionalNumber,
  netoutBytes: field.optionalNumber,
  uptimeSec: field.optionalNumber,
  identity: Identity.optional(),
  /** When `identity` was read from the guest's config (sync carries an older one forward). */
  identityObservedAt: field.optionalString,
  /** `unknown`: this run sent a change whose outcome it could not observe. */
  outcome: unknownOutcome,
  /** When the state fields were read, when that is not "just now". */
  observedAt: field.optionalString,
  /** Whether the state fields were read before this run's last change was sent. */
  observedBeforeMutation: field.optionalBoolean,
  identityChanged: z.object({ previous: Identity, current: Identity })
    .optional(),
  warnings: field.optionalStrings,
  lastTask: field.optionalString,
  /** The file output (spec taskLog) holding that task's log, when it did not end plainly OK. */
  lastTaskLog: field.optionalString,
  /** That task's last log lines when it failed and no file holds its log (at most 10, 2 KB). */
  lastTaskLogTail: field.optionalStrings,
  /** The selection of the sync that wrote it: scope, nodes (none: the cluster), tags, where. */
  selection: z.object({
    scope: field.string,
    nodes: field.optionalStrings,
    tags: field.strings,
    where: field.optionalString,
  }).optional(),
  /** On a record the upstream package kept under a guest's name: the record that holds its state now. */
  supersededBy: field.optionalString,
  pending: pendingConfig,
  pendingDelete: field.optionalStrings,
  lastOperation: field.string,
  recordedAt: field.string,
};

/** The `config` record (`vm-<vmid>-config`, `ct-<vmid>-config`): the running config and what waits. */
export const ConfigRecord = z.object({
  vmid: field.number,
  node: field.string,
  config: ConfigValues,
  pending: pendingConfig,
  pendingDelete: field.optionalStrings,
  recordedAt: field.string,
});

/**
 * The `nodeStatus` record (`node-<node>`): the node's status, its disks' SMART health, its
 * subscription status and whether the enterprise repository is configured.
 */
export const NodeStatusRecord = z.object({
  node: field.string,
  cpuPct: field.optionalNumber,
  cpus: field.optionalNumber,
  loadavg: z.array(field.number).optional(),
  memTotal: field.optionalNumber,
  memUsed: field.optionalNumber,
  memPct: field.optionalNumber,
  swapTotal: field.optionalNumber,
  swapUsed: field.optionalNumber,
  swapPct: field.optionalNumber,
  rootfsTotal: field.optionalNumber,
  rootfsUsed: field.optionalNumber,
  rootfsPct: field.optionalNumber,
  uptimeSec: field.optionalNumber,
  kernelVersion: field.optionalString,
  pveVersion: field.optionalString,
  disksAvailable: field.optionalBoolean,
  disksUnavailableReason: field.optionalString,
  disks: z.array(z.object({
    device: field.string,
    type: field.optionalString,
    model: field.optionalString,
    serial: field.optionalString,
    sizeBytes: field.optionalNumber,
    health: field.string,
    wearoutPct: field.optionalNumber,
    usedBy: field.optionalString,
  })),
  /** PVE's subscription status (`active`, `notfound`, `expired`, …); never the key. */
  subscriptionStatus: field.optionalString,
  /** Whether the subscription is `active` (`@stateless/syscheck`'s `proxmox.subscriptionActive`). */
  subscriptionActive: field.optionalBoolean,
  subscriptionStatusAvailable: field.optionalBoolean,
  subscriptionStatusUnavailableReason: field.optionalString,
  /** Whether the enterprise repository is configured and enabled (syscheck's `proxmox.enterpriseRepo`). */
  enterpriseRepo: field.optionalBoolean,
  repositoriesAvailable: field.optionalBoolean,
  repositoriesUnavailableReason: field.optionalString,
  recordedAt: field.string,
});

/** The `nodeConfig` record (`node-<node>-config`): the node's storages and bridges. */
export const NodeConfigRecord = z.object({
  node: field.string,
  storages: z.array(z.object({
    storage: field.string,
    type: field.optionalString,
    content: field.strings,
    avail: field.optionalNumber,
    total: field.optionalNumber,
    active: field.optionalBoolean,
  })),
  bridges: field.strings,
  bridgesAvailable: field.optionalBoolean,
  bridgesUnavailableReason: field.optionalString,
  recordedAt: field.string,
});

/**
 * The `transport-reachable` check of `model`: PVE answers `GET /version` over the configured
 * transport before any method of `appliesTo` (the methods that change a guest) runs.
 */
export function transportReachable(model: ModelName, appliesTo: string[]) {
  return {
    description: "PVE answers GET /version over the configured transport",
    labels: ["live"],
    appliesTo,
    execute: (ctx: CheckContext) =>
      checkOnCore(model, "transport-reachable", ctx),
  };
}

// Method arguments both models share. (Each model file keeps the arguments only it has.)

/** lookup and getConfig: just the guest reference. */
export const GuestArgs = z.object(guestRef).check(requireGuest);

/** A tag as PVE writes one (pve-common `$PVE_TAG_RE`). */
const pveTag = field.string.regex(
  /^[A-Za-z0-9_][A-Za-z0-9_+.-]*$/,
  "tags must be PVE tags: a letter, digit or _, then letters, digits, _, -, + or .",
);

/**
 * sync: with vmid/vmName just that guest, else every guest of the node (default), of `nodes`, or of
 * the cluster — with `tags`, only those carrying every one (without case, as PVE keeps tags); with
 * `where`, only those whose fields satisfy the CEL expression (compiled by the core's host in
 * swamp's CEL environment before anything is sent: src/guest/select.rs).
 */
export const SyncArgs = z.object({
  ...guestRef,
  /** Default "node" (the core's default, so `nodes` can tell it was not given). */
  scope: z.enum(["node", "cluster"]).optional(),
  node: optionalNodeName,
  nodes: z.array(nodeName).min(
    1,
    "nodes must name at least one node",
  )
    .optional(),
  tags: z.array(pveTag).min(1, "tags must name at least one tag").optional(),
  /** A CEL expression over a guest's fields: vmid, name, node, status, tags, lock, template, … */
  where: field.optionalString,
}).check(
  z.refine((a) =>
    (a.vmid === undefined && a.vmName === undefined) ||
    (a.nodes === undefined && a.tags === undefined && a.where === undefined), {
    message:
      "nodes, tags and where cannot be given with vmid or vmName (a sync of one guest)",
    path: ["tags"],
  }),
  z.refine(
    (a) =>
      a.nodes === undefined || (a.node === undefined && a.scope === undefined),
    {
      message: "nodes cannot be given with node or scope: nodes is the scope",
      path: ["nodes"],
    },
  ),
);

/** `applyPending`: "reboot" reboots (verified) when changes wait for a boot; then none may. */
export const applyPending = z.enum(["none", "reboot"]).default("none");

/** setConfig: config keys to change; each must read back applied or pending. */
export const SetConfigArgs = z.object({
  ...guestRef,
  applyPending,
  config: optionBag(
    NOT_CONFIG_KEYS,
    "is a parameter of PVE's config update, not a config key",
  ).refine((c) => Object.keys(c).length > 0, {
    message: "config must hold at least one key",
  }),
}).check(requireGuest);

/** start: waitForIp waits for an address (agent for VMs, static ip= for containers). */
export const StartArgs = z.object({
  ...guestRef,
  waitForIp: field.falseByDefault,
  allowNoIp: field.falseByDefault,
}).check(requireGuest);

/** stop: force overrides the safety gate (the swamp tag). */
export const StopArgs = z.object({
  ...guestRef,
  force: field.falseByDefault,
}).check(requireGuest);

/** shutdown: graceful within timeoutSec, then a hard stop if forceStopAfter. */
export const ShutdownArgs = z.object({
  ...guestRef,
  timeoutSec: timeoutSec120,
  forceStopAfter: field.falseByDefault,
  force: field.falseByDefault,
}).check(requireGuest);

/** delete: purge also destroys unreferenced disks; force overrides the safety gates. */
export const DeleteArgs = z.object({
  ...guestRef,
  purge: field.trueByDefault,
  force: field.falseByDefault,
}).check(requireGuest);

/**
 * convertToTemplate: gated like delete (force overrides); a running guest is refused unless
 * shutdownFirst (a graceful shutdown within timeoutSec, verified).
 */
export const TemplateArgs = z.object({
  ...guestRef,
  shutdownFirst: field.falseByDefault,
  timeoutSec: timeoutSec120,
  force: field.falseByDefault,
}).check(requireGuest);

/** reboot: gated like stop (force overrides); timeoutSec bounds the shutdown half. */
export const RebootArgs = z.object({
  ...guestRef,
  timeoutSec: timeoutSec120,
  force: field.falseByDefault,
}).check(requireGuest);

/** Node-scoped reads: the transport's node unless `node` names another. */
export const NodeArgs = z.object({
  node: optionalNodeName,
});

// downloadUrl (both models): PVE fetches a URL into a storage (pve-storage Status.pm download_url).

/** The extension PVE requires per content type ($ISO_EXT_RE_0, $VZTMPL_EXT_RE_1, $UPLOAD_IMPORT_EXT_RE_1). */
const DOWNLOAD_EXTENSIONS = {
  iso: { re: /.\.(iso|img)$/i, text: ".iso or .img" },
  vztmpl: {
    re: /.\.(tar|tar\.gz|tar\.xz|tar\.zst|tar\.bz2)$/i,
    text: ".tar, .tar.gz, .tar.xz, .tar.zst or .tar.bz2",
  },
  import: {
    re: /.\.(ova|qcow2|raw|vmdk)$/,
    text: ".ova, .qcow2, .raw or .vmdk (lower case)",
  },
} as const;

/** Hex digits of each checksum algorithm PVE offers. */
const DIGEST_DIGITS = {
  md5: 32,
  sha1: 40,
  sha224: 56,
  sha256: 64,
  sha384: 96,
  sha512: 128,
} as const;

/**
 * downloadUrl: `filename` is one PVE keeps as given (its normalization would rename any other
 * character) with the content type's extension; `checksum` and `checksumAlgorithm` come together,
 * the digest as the algorithm's hex digits; `compression` only for ISO images.
 */
export const DownloadUrlArgs = z.object({
  node: optionalNodeName,
  storage: storageName,
  content: z.enum(["iso", "vztmpl", "import"]),
  url: singleLine("url").check(
    z.refine((v) => /^https?:\/\//.test(v), {
      message: "url must start with http:// or https:// (PVE's pattern)",
    }),
    z.refine((v) => !/^[^:]*:\/\/[^/?#]*@/.test(v), {
      message:
        "url must not carry a user name or password: PVE writes the URL into the task log",
    }),
  ),
  filename: field.string.max(255, "filename must be at most 255 characters")
    .regex(
      /^[A-Za-z0-9_.-]+$/,
      "filename must hold only letters, digits, _, . and - (PVE would rename any other character to _)",
    ).refine((v) => !v.includes(".."), {
      message:
        "filename must not contain .. (a swamp data name cannot hold it)",
    }),
  checksum: field.optionalString,
  checksumAlgorithm: z.enum([
    "md5",
    "sha1",
    "sha224",
    "sha256",
    "sha384",
    "sha512",
  ])
    .optional(),
  verifyCertificates: field.trueByDefault,
  compression: z.enum(["gz", "lzo", "zst", "bz2"]).optional(),
}).superRefine((a, ctx) => {
  const ext = DOWNLOAD_EXTENSIONS[a.content];
  if (!ext.re.test(a.filename)) {
    ctx.addIssue({
      code: "custom",
      path: ["filename"],
      message: `filename must end in ${ext.text} for content ${a.content}`,
    });
  }
  if ((a.checksum === undefined) !== (a.checksumAlgorithm === undefined)) {
    ctx.addIssue({
      code: "custom",
      path: [a.checksum === undefined ? "checksum" : "checksumAlgorithm"],
      message: "checksum and checksumAlgorithm come together",
    });
  } else if (a.checksum !== undefined && a.checksumAlgorithm !== undefined) {
    const digits = DIGEST_DIGITS[a.checksumAlgorithm];
    if (a.checksum.length !== digits || !/^[0-9a-fA-F]*$/.test(a.checksum)) {
      ctx.addIssue({
        code: "custom",
        path: ["checksum"],
        message:
          `checksum must be the ${digits} hex digits of a ${a.checksumAlgorithm} digest`,
      });
    }
  }
  if (a.compression !== undefined && a.content !== "iso") {
    ctx.addIssue({
      code: "custom",
      path: ["compression"],
      message: "compression is only for content iso",
    });
  }
});

/** The `volume-<storage>-<filename>` record: the downloaded volume as the storage lists it. */
export const VolumeRecord = z.object({
  node: field.string,
  storage: field.string,
  content: field.string,
  filename: field.string,
  volid: field.string,
  present: field.boolean,
  size: field.optionalNumber,
  format: field.optionalString,
  url: field.string,
  urlSize: field.optionalNumber,
  downloaded: field.boolean,
  checksumAlgorithm: field.optionalString,
  checksum: field.optionalString,
  checksumVerified: field.boolean,
  lastTask: field.optionalString,
  /** The file output (spec taskLog) holding that task's log, when it did not end plainly OK. */
  lastTaskLog: field.optionalString,
  /** That task's last log lines when it failed and no file holds its log (at most 10, 2 KB). */
  lastTaskLogTail: field.optionalStrings,
  observedAt: field.string,
});

/** The storage methods both models share. */
export function storageMethods(model: ModelName) {
  return {
    downloadUrl: {
      description:
        "Have PVE download a URL into a storage (iso, vztmpl, or an import image); succeeds when the volume is in the storage's content with the URL's size (and PVE's checksum check ran), recorded as volume-<storage>-<filename>",
      kind: "action" as const,
      arguments: DownloadUrlArgs,
      execute: (args: z.infer<typeof DownloadUrlArgs>, ctx: MethodContext) =>
        runOnCore(model, "downloadUrl", args, ctx),
    },
  };
}

/** Every record spec lives forever, keeping 20 versions. */
const kept = { lifetime: "infinite" as const, garbageCollection: 20 };

/** The record specs both models share: a guest's config, and the node's status and config. */
export function sharedResources(noun: string, prefix: string) {
  return {
    config: {
      description:
        `A ${noun}'s current configuration (instance ${prefix}-<vmid>-config)`,
      schema: ConfigRecord,
      ...kept,
    },
    nodeStatus: {
      description: "A node's status and disks (instance node-<node>)",
      schema: NodeStatusRecord,
      ...kept,
    },
    nodeConfig: {
      description:
        "A node's storages and bridges (instance node-<node>-config)",
      schema: NodeConfigRecord,
      ...kept,
    },
    snapshots: {
      description:
        `A ${noun}'s snapshot tree as observed (instance ${prefix}-<vmid>-snapshots)`,
      schema: SnapshotsRecord,
      ...kept,
    },
    volume: {
      description:
        "A downloaded volume as its storage lists it (instance volume-<storage>-<filename>)",
      schema: VolumeRecord,
      ...kept,
    },
  };
}

/** The node-scoped methods both models share. */
export function nodeMethods(model: ModelName) {
  return {
    nodeStatus: {
      description:
        "Record the node's status and disks (SMART health) as node-<node>; without Sys.Audit the record says disks are unavailable",
      kind: "action" as const,
      arguments: NodeArgs,
      execute: (args: z.infer<typeof NodeArgs>, ctx: MethodContext) =>
        runOnCore(model, "nodeStatus", args, ctx),
    },
    nodeConfig: {
      description:
        "Record the node's storages and bridges as node-<node>-config",
      kind: "action" as const,
      arguments: NodeArgs,
      execute: (args: z.infer<typeof NodeArgs>, ctx: MethodContext) =>
        runOnCore(model, "nodeConfig", args, ctx),
    },
  };
}

// Snapshots (both models; `vmstate` only for VMs, reserved names per kind).

/** PVE's `pve-configid` (pve-common `$CONFIGID_RE`) within pve-snapshot-name's 40 characters. */
const snapshotName = field.string.regex(
  /^[A-Za-z][A-Za-z0-9_-]+$/,
  "name must be a letter followed by at least one letter, digit, _ or - (PVE's pve-configid format)",
).max(40, "name must be at most 40 characters (PVE's limit)");

/** Names PVE refuses for a new snapshot: qemu-server and pve-container's snapshot handlers. */
const reservedSnapshotName = (model: ModelName) => (name: string) =>
  name === "current" ||
  (model === "qemu" ? name.toLowerCase() === "pending" : name === "vzdump");

/** snapshot: a new snapshot's name and description; `vmstate` saves a running VM's RAM. */
export function snapshotArgs(model: ModelName) {
  return z.object({
    ...guestRef,
    name: snapshotName.refine((n) => !reservedSnapshotName(model)(n), {
      message: "name is a name PVE reserves",
    }),
    // No argv can carry a NUL, so it could never reach pvesh over ssh; refused on both transports.
    description: field.string.refine((v) => !v.includes("\0"), {
      message: "description must not contain NUL",
    }).optional(),
    ...(model === "qemu" ? { vmstate: field.falseByDefault } : {}),
  }).check(requireGuest);
}

/** rollback: the snapshot to return to; `start` starts the guest afterwards. */
export const RollbackArgs = z.object({
  ...guestRef,
  name: snapshotName,
  start: field.falseByDefault,
}).check(requireGuest);

/** deleteSnapshot: `force` removes it from the config even if a disk snapshot cannot be removed. */
export const DeleteSnapshotArgs = z.object({
  ...guestRef,
  name: snapshotName,
  force: field.falseByDefault,
}).check(requireGuest);

/** The `snapshots` record (`vm-<vmid>-snapshots`, `ct-<vmid>-snapshots`): the tree as observed. */
export const SnapshotsRecord = z.object({
  vmid: field.number,
  node: field.string,
  currentParent: field.optionalString,
  snapshots: z.array(z.object({
    name: field.string,
    parent: field.optionalString,
    description: field.optionalString,
    snaptime: field.optionalNumber,
    vmstate: field.boolean,
    snapstate: field.optionalString,
  })),
  /** `unknown`: this run sent a change whose outcome it could not observe. */
  outcome: unknownOutcome,
  /** When the tree was read, when that is not "just now". */
  observedAt: field.optionalString,
  /** Whether the tree was read before this run's last change was sent. */
  observedBeforeMutation: field.optionalBoolean,
  lastOperation: field.string,
  recordedAt: field.string,
});

/** The snapshot methods both models share. */
export function snapshotMethods(model: ModelName) {
  const noun = model === "qemu" ? "VM" : "container";
  const prefix = model === "qemu" ? "vm" : "ct";
  const SnapshotArgs = snapshotArgs(model);
  return {
    snapshot: {
      description:
        `Take a snapshot of the ${noun}; succeeds when the list shows it (complete, with the guest's former parent) and the lock is released. Records ${prefix}-<vmid>-snapshots`,
      kind: "action" as const,
      arguments: SnapshotArgs,
      execute: (args: z.infer<typeof SnapshotArgs>, ctx: MethodContext) =>
        runOnCore(model, "snapshot", args, ctx),
    },
    listSnapshots: {
      description:
        `Record the ${noun}'s snapshot tree as ${prefix}-<vmid>-snapshots`,
      kind: "action" as const,
      arguments: GuestArgs,
      execute: (args: z.infer<typeof GuestArgs>, ctx: MethodContext) =>
        runOnCore(model, "listSnapshots", args, ctx),
    },
    rollback: {
      description:
        `Roll the ${noun} back to a snapshot; succeeds when it descends from that snapshot, is unlocked, and runs (snapshot with RAM, or start) or is stopped`,
      kind: "action" as const,
      arguments: RollbackArgs,
      execute: (args: z.infer<typeof RollbackArgs>, ctx: MethodContext) =>
        runOnCore(model, "rollback", args, ctx),
    },
    deleteSnapshot: {
      description:
        `Delete a snapshot of the ${noun}; succeeds when it is no longer listed and the lock is released`,
      kind: "action" as const,
      arguments: DeleteSnapshotArgs,
      execute: (
        args: z.infer<typeof DeleteSnapshotArgs>,
        ctx: MethodContext,
      ) => runOnCore(model, "deleteSnapshot", args, ctx),
    },
  };
}

/**
 * The upgrade of a definition written by the upstream `@stateless/proxmox` package (model versions
 * 2026.06.02.x and 2026.06.10.1): its global arguments carry over as they are — same names, same
 * meaning — and the one new one, `requestTimeoutSec`, is written with its default so the definition
 * shows it. Values this package refuses (e.g. `taskTimeoutSec` over a week) are not rewritten: the
 * next run names the field and the rule.
 */
export function fromUpstream(
  old: Record<string, unknown>,
): Record<string, unknown> {
  return { ...old, requestTimeoutSec: old.requestTimeoutSec ?? 30 };
}

// guestExec (VMs through the guest agent, containers through `pct exec` over ssh).

/** A process's exit code. */
const exitCode = field.integer.min(0).max(255);

/** guestExec: the command (argv), its budget, which exit codes count as success, its stdin. */
export const GuestExecArgs = z.object({
  ...guestRef,
  command: z.array(
    field.string.min(1, "command items must not be empty").refine(
      (v) => !v.includes("\0"),
      { message: "command items must not contain NUL" },
    ),
  ).min(1, "command must not be empty"),
  timeoutSec: secondsUpToADay.default(30),
  allowNonZeroExit: field.falseByDefault,
  allowedExitCodes: z.array(exitCode).optional(),
  // `@swamp/ssh`'s convention: the exit codes that count as success (replacing [0]), or "any".
  okExitCodes: z.union([
    z.literal("any"),
    z.array(exitCode).min(1),
  ]).optional(),
  inputData: field.string.refine(
    (v) => new TextEncoder().encode(v).length <= 65536,
    { message: "inputData must be at most 65536 bytes (PVE's limit)" },
  ).refine((v) => !v.includes("\0"), {
    // No argv can carry a NUL, so it could never reach pvesh over ssh; refused on both transports.
    message: "inputData must not contain NUL",
  }).optional(),
}).check(
  requireGuest,
  z.refine((a) =>
    a.okExitCodes === undefined ||
    (!a.allowNonZeroExit && a.allowedExitCodes === undefined), {
    message:
      "okExitCodes replaces allowNonZeroExit and allowedExitCodes: give one or the other",
    path: ["okExitCodes"],
  }),
);

/** The `exec` record (`vm-<vmid>-exec`, `ct-<vmid>-exec`): how one command ended. */
export const ExecRecord = z.object({
  vmid: field.number,
  node: field.string,
  command: field.strings,
  pid: field.optionalNumber,
  outcome: z.enum([
    "exited",
    "signaled",
    "timedOut",
    "notStarted",
    "unconfirmed",
    "resultLost",
    "aborted",
  ]),
  exited: field.boolean,
  exitCode: field.optionalNumber,
  signal: field.optionalNumber,
  stdout: field.optionalString,
  stderr: field.optionalString,
  stdoutBytes: field.number,
  stderrBytes: field.number,
  stdoutInvalidUtf8: field.boolean,
  stderrInvalidUtf8: field.boolean,
  stdoutTruncated: field.boolean,
  stderrTruncated: field.boolean,
  durationMs: field.number,
  timedOut: field.boolean,
  accepted: field.boolean,
  error: field.optionalString,
  lastOperation: field.string,
  recordedAt: field.string,
});

// Migration (both models; online/withLocalDisks for VMs, restart/timeoutSec for containers).

/** PVE's `storage-pair-list`: `1`, or comma-separated `<id>` / `<source>:<target>` storage ids. */
const STORAGE_ID = "[a-zA-Z][a-zA-Z0-9\\-_.]*[a-zA-Z0-9]";
const storagePairList = field.string.regex(
  new RegExp(
    `^(1|(${STORAGE_ID}(:${STORAGE_ID})?)(,${STORAGE_ID}(:${STORAGE_ID})?)*)$`,
  ),
  "targetStorage must be 1, a storage id, or comma-separated <source>:<target> storage ids (PVE's storage-pair-list)",
);

/** migrate: the node to move to, and how. */
export function migrateArgs(model: ModelName) {
  const how = model === "qemu"
    ? {
      online: field.falseByDefault,
      withLocalDisks: field.falseByDefault,
    }
    : {
      restart: field.falseByDefault,
      timeoutSec: secondsUpToADay.optional(),
    };
  return z.object({
    ...guestRef,
    targetNode: pathSegment("targetNode"),
    targetStorage: storagePairList.optional(),
    ...how,
  }).check(requireGuest);
}

/** The migrate method of a model. */
export function migrateMethod(model: ModelName) {
  const noun = model === "qemu" ? "VM" : "container";
  const how = model === "qemu"
    ? "online: true for a running VM (live), withLocalDisks to copy local disks along"
    : "restart: true for a running container (stop, move, start)";
  const MigrateArgs = migrateArgs(model);
  return {
    migrate: {
      description:
        `Move the ${noun} to targetNode (${how}); PVE's preconditions are checked first; succeeds when /cluster/resources and the target node show it there (running if it was) and unlocked. HA-managed guests migrate through HA`,
      kind: "action" as const,
      arguments: MigrateArgs,
      execute: (args: z.infer<typeof MigrateArgs>, ctx: MethodContext) =>
        runOnCore(model, "migrate", args, ctx),
    },
  };
}

// Backups (both models): vzdump archives on a storage's `backup` content, and restores from them.

/** The core's backup volume id rule (src/guest/backups.rs `BackupVolid`). */
function isBackupVolid(text: string): boolean {
  const at = text.indexOf(":");
  if (at < 0 || !/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(text.slice(0, at))) {
    return false;
  }
  const name = text.slice(at + 1);
  if (!name.startsWith("backup/")) return false;
  const rest = name.slice("backup/".length);
  return rest.length <= 255 &&
    rest.split("/").every((part) =>
      part !== "." && part !== ".." && /^[A-Za-z0-9\-.+=_:]+$/.test(part)
    );
}

/** A backup volume id: `<storage>:backup/<file>`. */
const backupVolid = (what: string) =>
  field.string.refine(isBackupVolid, {
    message:
      `${what} must be a backup volume id, <storage>:backup/<file> (e.g. local:backup/vzdump-qemu-100-2026_01_01-00_00_00.vma.zst)`,
  });

/**
 * vzdump's notes template check (pve-manager PVE/VZDump.pm `$verify_notes_template`): one line; a
 * backslash only before `n` or `\`; `{{…}}` only around cluster, guestname, node, vmid. NUL can
 * never cross ssh's argv, so it is refused on both transports.
 */
function notesTemplateOk(template: string): boolean {
  if (template.includes("\n") || template.includes("\0")) return false;
  for (const m of template.matchAll(/\\(.)/gs)) {
    if (m[1] !== "n" && m[1] !== "\\") return false;
  }
  for (const m of template.matchAll(/\{\{([^ \t\n\r\f\v{}]+)\}\}/g)) {
    if (!["cluster", "guestname", "node", "vmid"].includes(m[1])) return false;
  }
  return true;
}

/** backup: where to, how (vzdump's mode and compressor), notes and protection of the archive. */
export const BackupArgs = z.object({
  ...guestRef,
  storage: storageName,
  mode: z.enum(["snapshot", "suspend", "stop"]).default("snapshot"),
  compress: z.enum(["0", "1", "gzip", "lzo", "zstd"]).optional(),
  notesTemplate: field.string.refine(notesTemplateOk, {
    message:
      "notesTemplate must be one line, escape only \\n and \\\\, and use only {{cluster}}, {{guestname}}, {{node}}, {{vmid}} (PVE's rule)",
  }).optional(),
  protected: field.falseByDefault,
}).check(requireGuest);

/** listBackups: one storage's archives of this model's guests (one guest's with `vmid`). */
export const ListBackupsArgs = z.object({
  storage: storageName,
  vmid: optionalVmid,
  node: optionalNodeName,
});

/** deleteBackup: one archive, by volume id. */
export const DeleteBackupArgs = z.object({
  volid: backupVolid("volid"),
  node: optionalNodeName,
});

/** restore: an archive to a new VMID (or a free one), or over a stopped guest with `force`. */
export const RestoreArgs = z.object({
  archive: backupVolid("archive"),
  ...newVmid,
  storage: optionalStorageName,
  force: field.falseByDefault,
  unique: field.falseByDefault,
}).check(notBothVmidAndRange);

/** One archive as a storage lists it. */
const ArchiveRecord = z.object({
  volid: field.string,
  vmid: field.optionalNumber,
  subtype: field.optionalString,
  size: field.optionalNumber,
  ctime: field.optionalNumber,
  format: field.optionalString,
  notes: field.optionalString,
  protected: field.boolean,
  verification: field.optionalString,
});

/** The `backup` record (`vm-<vmid>-backup`, `ct-<vmid>-backup`): the archive one run made. */
export const BackupRecord = z.object({
  vmid: field.number,
  node: field.string,
  storage: field.string,
  /** The mode vzdump used, as its task log reports it; absent when the log did not show it. */
  mode: field.optionalString,
  volid: field.string,
  size: field.optionalNumber,
  ctime: field.optionalNumber,
  format: field.optionalString,
  notes: field.optionalString,
  protected: field.boolean,
  task: field.optionalString,
  lastOperation: field.string,
  recordedAt: field.string,
});

/** The `backups` record (`<vm|ct>-<vmid>-backups`, `backups-<node>-<storage>`): a listing. */
export const BackupsRecord = z.object({
  node: field.string,
  storage: field.string,
  vmid: field.optionalNumber,
  backups: z.array(ArchiveRecord),
  lastOperation: field.string,
  recordedAt: field.string,
});

/** The record specs of the backup methods. */
export function backupResources(noun: string, prefix: string) {
  return {
    backup: {
      description:
        `The archive a backup of a ${noun} made, as its storage lists it (instance ${prefix}-<vmid>-backup)`,
      schema: BackupRecord,
      ...kept,
    },
    backups: {
      description:
        `Backup archives a storage lists (instance ${prefix}-<vmid>-backups for one ${noun}, backups-<node>-<storage> for all)`,
      schema: BackupsRecord,
      ...kept,
    },
  };
}

/** The backup methods both models share. */
export function backupMethods(model: ModelName) {
  const noun = model === "qemu" ? "VM" : "container";
  const prefix = model === "qemu" ? "vm" : "ct";
  return {
    backup: {
      description:
        `Back the ${noun} up with vzdump (mode snapshot|suspend|stop, compress, notesTemplate, protected); succeeds when a new archive of it with a size above 0 is in the storage's backup content (protected if asked) and the ${noun} is back in its state before. Records ${prefix}-<vmid>-backup`,
      kind: "action" as const,
      arguments: BackupArgs,
      execute: (args: z.infer<typeof BackupArgs>, ctx: MethodContext) =>
        runOnCore(model, "backup", args, ctx),
    },
    listBackups: {
      description:
        `Record the ${noun} backups a storage lists (volid, size, ctime, notes, protected, verification) as ${prefix}-<vmid>-backups, or backups-<node>-<storage> without vmid`,
      kind: "action" as const,
      arguments: ListBackupsArgs,
      execute: (args: z.infer<typeof ListBackupsArgs>, ctx: MethodContext) =>
        runOnCore(model, "listBackups", args, ctx),
    },
    deleteBackup: {
      description:
        "Delete one backup archive; succeeds when its storage no longer lists it. A protected archive is refused, as PVE refuses it",
      kind: "action" as const,
      arguments: DeleteBackupArgs,
      execute: (args: z.infer<typeof DeleteBackupArgs>, ctx: MethodContext) =>
        runOnCore(model, "deleteBackup", args, ctx),
    },
    restore: {
      description:
        `Restore a ${noun} from a backup archive to vmid (or a free VMID in vmidRange), or over a stopped ${noun} with force: true; succeeds when the restored ${noun} is unlocked, every setting of the archive's config reads back, and each disk is on its storage with the archive's size`,
      kind: "action" as const,
      arguments: RestoreArgs,
      execute: (args: z.infer<typeof RestoreArgs>, ctx: MethodContext) =>
        runOnCore(model, "restore", args, ctx),
    },
  };
}
