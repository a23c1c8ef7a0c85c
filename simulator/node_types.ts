/**
 * Public types of a node's storages and network bridges, as a test describes
 * them in SimOptions (`storages`, `bridges`). Used by the storage and network
 * routes and by container create/start.
 *
 * @module
 */

/** PVE content types a storage can hold (pve-storage's `content` option). */
export type StorageContent =
  | "images"
  | "rootdir"
  | "vztmpl"
  | "iso"
  | "backup"
  | "snippets"
  | "import";

/** A container template file on a storage (`<storage>:vztmpl/<file>`). */
export interface SimTemplate {
  /** File name, e.g. `debian-12-standard_12.7-1_amd64.tar.zst`. */
  file: string;
  /** Bytes; default 126 MiB. */
  size?: number;
  /** Creation time, epoch seconds; default a fixed date. */
  ctime?: number;
  /** The file's bytes, when a test or a download gave them (checksums and imports read them). */
  data?: Uint8Array;
}

/** An ISO image or an importable disk image on a storage (`<storage>:iso/<file>`, `<storage>:import/<file>`). */
export interface SimFile {
  content: "iso" | "import";
  /** File name, e.g. `debian-12.iso`, `cloud.qcow2`. */
  file: string;
  /** Bytes; default the length of `data`, else 1 MiB. */
  size?: number;
  /** The file's bytes, when known. */
  data?: Uint8Array;
  /** Creation time, epoch seconds; default a fixed date. */
  ctime?: number;
}

/**
 * A storage as a test describes it. A storage that is not `shared` exists
 * separately on every node it is available on (each `local` has its own
 * templates and its own free space); a shared one is one pool for all nodes.
 */
export interface SimStorage {
  /** Storage id, e.g. `local`, `local-lvm`. */
  storage: string;
  /** Storage type, e.g. `dir`, `lvmthin`, `zfspool`, `lvm`, `nfs`, `cephfs`, `rbd`, `btrfs`. */
  type: string;
  /** What it may hold, e.g. `["rootdir", "images"]`. */
  content: StorageContent[];
  /** Nodes it is available on; default every node. */
  nodes?: string[];
  /** Default false. */
  shared?: boolean;
  /** `disable` in storage.cfg (listed with `enabled: 0`); default false. */
  disabled?: boolean;
  /** Whether it is online (an NFS server down: false); default true. */
  active?: boolean;
  /** Capacity in bytes; default 100 GiB. */
  total?: number;
  /**
   * Bytes used by things the simulator does not model (OS, ISOs…); default
   * 5 GiB. Guest volumes and templates on the storage are added to it.
   */
  used?: number;
  /** Container templates on it (only for a storage with `vztmpl` content). */
  templates?: SimTemplate[];
  /** ISO images and importable disk images on it (`iso` / `import` content). */
  files?: SimFile[];
}

/** A network bridge of a node. */
export interface SimBridge {
  /** Interface name, e.g. `vmbr0`. */
  iface: string;
  /** `bridge` (Linux bridge, default) or `OVSBridge`. */
  type?: "bridge" | "OVSBridge";
  /** Whether the interface is up; default true. A guest cannot plug into an inactive bridge. */
  active?: boolean;
  /** Address in CIDR notation, e.g. `192.168.1.10/24`; default none. */
  cidr?: string;
  /** Gateway; default none. */
  gateway?: string;
  /** Bridge ports, e.g. `eno1`; default none. */
  ports?: string;
}

/** What a created container's OS received at create time (never in its config). */
export interface ContainerSetup {
  /** `ssh-public-keys` exactly as PVE received it (one key per line). */
  sshPublicKeys?: string;
  /** The root `password` (tests may assert it never leaks into logs). */
  password?: string;
  /** The template the root filesystem was unpacked from. */
  ostemplate: string;
}

/**
 * What a node says of its support (nodeStatus's `subscriptionActive` and `enterpriseRepo`):
 * the subscription status `GET /nodes/{node}/subscription` answers (default `notfound`, no key),
 * and whether the enterprise repository is configured (`enabled`, default; `disabled`; `absent`).
 */
export interface SimNodeFacts {
  subscription?:
    | "new"
    | "notfound"
    | "active"
    | "invalid"
    | "expired"
    | "suspended";
  enterpriseRepo?: "enabled" | "disabled" | "absent";
}
