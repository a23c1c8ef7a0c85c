/**
 * Public types of the Proxmox VE API simulator: the cluster a test describes,
 * the scenario knobs (task outcomes, faults) and what the simulator records.
 *
 * @module
 */

import type { SimBridge, SimNodeFacts, SimStorage } from "./node_types.ts";
import type { GuestAgent } from "./qga.ts";
import type { RealGuestOptions } from "./real_guest_options.ts";

/** Guest kind, as in `/cluster/resources` `type`. */
export type GuestType = "qemu" | "lxc";

/**
 * Guest agent situation of a guest:
 * - `none`: no `agent: 1` in the config;
 * - `configured`: configured, but no agent answers inside the guest;
 * - `running`: configured and answering (served by the real qemu-ga);
 * - `exec-disabled`: answering, but guest-exec/guest-exec-status are blocked.
 */
export type AgentMode = "none" | "configured" | "running" | "exec-disabled";

/** A config value as PVE returns it (numbers for integer options, strings otherwise). */
export type ConfigValue = string | number;

/** HA resource state of a guest. */
export interface SimHa {
  /** Whether the guest is an HA resource (start/stop then only queue a request). */
  managed: boolean;
  /** HA state shown in `status/current` `ha.state`, e.g. `started`, `stopped`. */
  state: string;
  /** Delay between the HA task ending and the guest really changing state; default 0. */
  applyDelayMs?: number;
  /** The HA manager never acts (e.g. no quorum): the state request stays unfulfilled. */
  neverApplies?: boolean;
  /** The HA manager's round applies this state instead of the requested one (a fault). */
  appliesAs?: string;
  /**
   * The manager's (CRM's) state of the service (ha.ts): `null` while it does not hold it;
   * undefined: as requested (a fixture's resource the manager applied long ago).
   */
  crm?: string | null;
  /** The last config write's round (a later write supersedes an earlier round). */
  round?: number;
  /** The resource config's options (pve-ha-manager PVE/HA/Resources.pm), when set. */
  maxRestart?: number;
  maxRelocate?: number;
  failback?: boolean;
  comment?: string;
  /** PVE 8: the HA group the resource belongs to (Resources.pm `group`). */
  group?: string;
}

/** Usage figures as PVE reports them (bytes, fractions of a CPU, seconds). */
export interface SimMetrics {
  cpu: number;
  cpus: number;
  mem: number;
  maxmem: number;
  disk: number;
  maxdisk: number;
  netin: number;
  netout: number;
  uptime: number;
}

/** A guest as a test describes it. */
export interface SimGuest {
  vmid: number;
  node: string;
  type: GuestType;
  name: string;
  status: "running" | "stopped";
  /** Real QEMU run state (`paused`, `prelaunch`, …); default: same as `status`. */
  qmpstatus?: string;
  tags?: string[];
  /** Config lock, e.g. `backup`, `clone`, `migrate`. */
  lock?: string;
  ha?: SimHa;
  /**
   * The guest OS ignores ACPI shutdown requests: a shutdown task ends
   * `VM quit/powerdown failed - got timeout`, unless it was sent with
   * `forceStop` (then the guest is killed and the task warns).
   */
  ignoresShutdown?: boolean;
  /** Default: `running` if the config has `agent`, else `none`. */
  agent?: AgentMode;
  /** Config keys besides name/tags/lock, e.g. `smbios1`, `scsi0`, `net0`, `memory`. */
  config?: Record<string, ConfigValue>;
  /** Changes waiting for the next start. */
  pending?: Record<string, ConfigValue>;
  /**
   * Properties the stored value of a key keeps whatever a config change sends, e.g.
   * `{ net0: "firewall=1" }`: "PVE kept a property the request dropped". A guess for the fault
   * matrix and the read-back tests — no PVE version is known to merge property strings
   * (qemu-server's update_vm_api replaces the whole value).
   */
  keeps?: Record<string, string>;
  metrics?: Partial<SimMetrics>;
  /** Addresses `network-get-interfaces` reports on eth0 (`10.0.0.5` or `10.0.0.5/24`). */
  ips?: string[];
  /**
   * A real QEMU VM stands behind this guest (needs `SimOptions.realGuests`): power, status and
   * every agent call reach it; `ips` and `metrics` then play no part. See real_guests.ts.
   */
  real?: boolean;
  /** How `cloud-init status --wait` ends in the guest (routes_agent.ts); default `done`. */
  cloudInit?: "done" | "error" | "degraded";
  /** Snapshots by name (the config key `parent` names the one the guest descends from). */
  snapshots?: Record<string, SimSnapshot>;
  /**
   * Bytes of volumes whose config entry carries no `size=` (an `unusedN` holds a bare volid), by
   * volid: what the storage still reports for them (disk_config.ts).
   */
  volumeSizes?: Record<string, number>;
}

/** A snapshot: a copy of the guest's config when it was taken (its `parent` key included). */
export interface SimSnapshot {
  name: string;
  tags: string[];
  config: Record<string, ConfigValue>;
  snaptime: number;
  description: string;
  /** Whether it holds the VM's RAM (the VM resumes running on rollback). */
  vmstate: boolean;
  /** `prepare` while being taken, `delete` while being deleted (PVE's snapstate). */
  snapstate?: string;
}

/**
 * The live state of a guest inside the simulator (what `sim.guest()` returns).
 * `name`, `tags`, `lock` and `agent` are kept outside `config` and merged in when
 * the config is served.
 */
export interface GuestState extends SimGuest {
  tags: string[];
  agent: AgentMode;
  config: Record<string, ConfigValue>;
  pending: Record<string, ConfigValue>;
  /** Keys whose deletion waits for the next start. */
  pendingDelete: string[];
  /** Of those, the drives whose deletion was forced (`force=1`: the volume is freed, not kept). */
  pendingForce?: string[];
  metrics: Partial<SimMetrics>;
  ips: string[];
  snapshots: Record<string, SimSnapshot>;
  /** When the guest was (last) started, epoch ms; set while running. */
  startedAt?: number;
  /** Fake host pid of the QEMU process; set while running. */
  pid?: number;
  /** The cloud-init properties its cloud-init drive was last generated from (see cloudinit.ts). */
  cloudinitGenerated?: Record<string, ConfigValue>;
  /** What the guest's cloud-init read from the drive at its last boot. */
  cloudinitBooted?: Record<string, ConfigValue>;
  /** How many times the simulator started (booted) it; a guest described as running starts at 0. */
  boots?: number;
  /** A container's suspend left a checkpoint (`lxc-checkpoint -s`) that its resume restores. */
  checkpointed?: boolean;
}

/** An API token the simulator accepts. */
export interface SimToken {
  /** Token id, `user@realm!name`, e.g. `root@pam!ci`. */
  id: string;
  secret: string;
  /** VMIDs the token holds no privilege on: 403 on their paths, left out of lists. */
  denyVmids?: number[];
  /**
   * Whether the token may hold `Sys.Audit` on `/nodes/{node}` (as its ACLs grant); false
   * withholds it. Without it the task list shows only the token's own tasks, and another user's
   * task's status and log are refused (pve-manager `PVE/API2/Tasks.pm` `check_task_user`).
   */
  nodeAudit?: boolean;
  /**
   * The token of the node-side pvesh fixture (tests/ssh/pvesh.py): its
   * requests stand for pvesh run over ssh, so PVE's Perl sees root@pam, and
   * the parameters are decoded as pvesh's options (booleans through
   * parse_boolean), not as an HTTP form.
   */
  pvesh?: boolean;
  /**
   * Privilege separation (PVE's token `privsep`): the token holds only what
   * `tokenAcl` grants, intersected with its user's privileges. Default false:
   * the token holds its user's privileges.
   */
  privsep?: boolean;
  /** The ACLs of the token's user (path → privileges, `*` for all). Default: all on `/`. */
  userAcl?: Record<string, string[]>;
  /** The token's own ACLs (used with `privsep`). Default: none. */
  tokenAcl?: Record<string, string[]>;
}

/** PEM material to serve HTTPS. */
export interface SimTls {
  cert: string;
  key: string;
}

/** Options for startSimulator. */
export interface SimOptions {
  nodes: string[];
  guests?: SimGuest[];
  tokens: SimToken[];
  /** The real agent every guest with a running agent talks to (owned by the caller). */
  agent?: GuestAgent;
  /** How guests marked `real` run (the image); required when any guest is. */
  realGuests?: RealGuestOptions;
  /**
   * Mirror every schema verdict into `$PVE_CONFORMANCE_LOG` (test.sh's
   * conformance layer): set by the fixtures whose requests come from the
   * package (end-to-end, fault matrix), not by tests that send bad requests
   * on purpose. Default false.
   */
  conformance?: boolean;
  /**
   * How often the simulated pvestatd broadcasts guest stats, which is what
   * `/cluster/resources` shows of a guest's name and status (broadcast.ts).
   * Default 10000 (PVE's); 0 makes the view live.
   */
  broadcastIntervalMs?: number;
  /** Serve HTTPS with this certificate instead of HTTP. */
  tls?: SimTls;
  /**
   * Task duration; default 50 ms. A function gives each task its own (by type and guest id), e.g.
   * a fleet whose starts do not all take the same time.
   */
  taskDurationMs?: number | ((task: { type: string; id: string }) => number);
  /**
   * A node's API capacity: `workers` requests served at once, each taking `serviceMs`; the rest
   * queue in arrival order (pvedaemon and pveproxy run 3 workers each by default,
   * pve-manager `PVE/Service/pvedaemon.pm`; every API call is a synchronous Perl handler).
   * Default: unlimited, no service time.
   */
  capacity?: { workers: number; serviceMs: number };
  /**
   * How long after a task ended the task list still shows it `RUNNING`: the daemon that forked the
   * worker moves it to the archive only when it reaps it (pve-common `PVE/RESTEnvironment.pm`
   * `worker_reaper` → `active_workers`). The per-task status read is never late. Default 0.
   */
  taskListLagMs?: number;
  /** Delay added to every request; default 0. */
  latencyMs?: number;
  /**
   * Keep client connections open between requests, as pveproxy does; default
   * false (every answer says `Connection: close`). Why off by default: Deno's
   * fetch silently retries a request once when a REUSED connection drops before
   * the answer (even a POST), so a `reset` fault would be hidden by the retry.
   * Turn it on to test exactly that hazard.
   */
  keepAlive?: boolean;
  /**
   * storage.cfg of the cluster; default: `local` (dir: iso, vztmpl, backup; one
   * Debian 12 template), `local-lvm` (lvmthin) and `local-zfs` (zfspool), both
   * rootdir + images. See node_types.ts.
   */
  storages?: SimStorage[];
  /** Bridges per node (`"vmbr0"` or a SimBridge); default `vmbr0` on every node. */
  bridges?: Record<string, (string | SimBridge)[]>;
  /** Subscription and repositories per node (node_types.ts); default a fresh install's. */
  nodeFacts?: Record<string, SimNodeFacts>;
  /**
   * The PVE major version served (default 9): `GET /version`, which privileges exist
   * (permissions.ts), PVE 8's checks where they differ (router.ts).
   */
  pveVersion?: 8 | 9;
  /**
   * The cluster firewall switch (`cluster.fw` option `enable`, `GET /cluster/firewall/options`).
   * Default false, like a fresh PVE install.
   */
  clusterFirewall?: boolean;
  /** The datacenter's firewall aliases (`cluster.fw` `[ALIASES]`), e.g. `{name: "lan", cidr: "10.0.0.0/8"}`. */
  clusterAliases?: { name: string; cidr: string; comment?: string }[];
}

/** Outcome override for the next task created (queued, one per task). */
export interface TaskOverride {
  /** Final exitstatus: `OK`, `WARNINGS: <n>` (effect happens) or an error text (no effect). */
  exitstatus?: string;
  durationMs?: number;
  /** Lines logged as `WARN: <w>`; without `exitstatus` the task ends `WARNINGS: <count>`. */
  warnings?: string[];
  /** Task status answers 400 "no such task" for this many ms after dispatch. */
  noSuchTaskFor?: number;
  /**
   * The task ends as told (OK unless `exitstatus` says otherwise) but its effect never happens:
   * the worker's lie a client can only catch by reading the state back.
   */
  noEffect?: boolean;
  /**
   * The file the task writes (a download, an imported disk) keeps only this many bytes: a worker
   * that ended OK with a short (0: empty) file.
   */
  truncateTo?: number;
  /** The file the task writes is not there afterwards (an import that left its disk missing). */
  loseFile?: boolean;
  /**
   * The task ends OK with its effect, but the guest is locked `lock` as it ends — a lock left
   * behind, which a client must treat as "not yet" (qemu-server's create_vm drops its `create`
   * lock only when it writes the final config): on guest `vmid` (default the task's own id, the
   * VMID for guest tasks), cleared `clearAfterMs` later, or never.
   */
  leaveLock?: { lock: string; vmid?: number; clearAfterMs?: number };
}

/** Which requests a fault applies to. */
export interface FaultMatch {
  /** HTTP method; default any. */
  method?: string;
  /** Tested against the decoded request path, e.g. `/api2/json/nodes/pve1/qemu/100/status/current`. */
  pathRegex: RegExp | string;
  /** How many matching requests get the fault; default 1 (Infinity allowed). */
  times?: number;
  /**
   * How many matching requests pass untouched before the fault starts; default 0. Picks one phase
   * of a method that sends the same request more than once (e.g. the status read after a task).
   */
  skip?: number;
}

/**
 * A fault served instead of the real handler:
 * `status` (an error answer in PVE's shape), `reset` (the connection is closed
 * without an answer), `hang` (no answer until the simulator closes), `body`
 * (exactly this body, status 200 unless `status` says otherwise, e.g. truncated
 * JSON or a proxy's HTML error page). `reset` and `hang` with `afterHandler`
 * let the real handler run first — its effect happens (a task starts, a guest
 * is cloned) — and only its answer is lost. `echo` quotes the request's `Authorization` header, or
 * with `param` a parameter the method itself sent (a password). `stores` lets a create or clone run
 * to its end, but the guest it makes stores `config` in place of what was asked (faults.ts
 * `storedInstead`).
 */
export type SimFault =
  & FaultMatch
  & (
    | { kind: "status"; status: number; message: string }
    | { kind: "reset"; afterHandler?: boolean }
    | { kind: "hang"; afterHandler?: boolean }
    | { kind: "body"; body: string; contentType?: string; status?: number }
    | { kind: "echo"; into: EchoInto; form: EchoForm }
    | { kind: "echo"; into: EchoInto; param: string; form: ParamEchoForm }
    | { kind: "stores"; config: Record<string, ConfigValue> }
  );

/**
 * Where an echoing proxy (or a misconfigured PVE) sends the request's `Authorization` header (or a
 * parameter) back: in a 401's message, in a 500's message, in a 400's per-parameter error, in a
 * 200 HTML page (a proxy's login page), or as an extra line of the real answer's list (a task log).
 */
export type EchoInto = "401" | "500" | "400" | "page" | "log";

/**
 * How an echo spells a parameter the method sent (`<param>=<value>`): the value as it is, percent-
 * encoded (`encodeURIComponent`), as the form body carried it (`+` for a space), or base64.
 */
export type ParamEchoForm =
  | "raw"
  | "percent"
  | "form"
  | "base64"
  | "html"
  | "shell"
  | "hex-escaped";

/**
 * How the echo spells what it got: the whole header value, the secret alone, the header
 * percent-encoded, or base64 of the header, of the secret, or of `tokenid=secret`.
 */
export type EchoForm =
  | "header"
  | "secret"
  | "percent"
  | "base64"
  | "base64-secret"
  | "base64-pair";

/** One request as the simulator saw it (never includes the Authorization header). */
export interface RequestRecord {
  method: string;
  /** Decoded path, including `/api2/json`. */
  path: string;
  query: Record<string, string>;
  /** Body parameters in order; a repeated key appears once per value. */
  form: [string, string][];
  /** Whether the request carried a valid token. */
  authorized: boolean;
  /** HTTP status answered; 0 when none was (reset, hang). */
  status: number;
  /** Arrival, `performance.now()` of the simulator's process (what a load figure is cut by). */
  at: number;
  /** How long it waited for a free worker (with `capacity`), ms. */
  queuedMs?: number;
  /**
   * The `data` answered, kept for a guest's `status/current`, config, pending and snapshot list
   * reads, and a storage's content list (200 only).
   */
  answer?: unknown;
}
