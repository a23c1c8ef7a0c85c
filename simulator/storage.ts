/**
 * A node's storages and network bridges: what `GET /nodes/{node}/storage`,
 * `…/storage/{storage}/content` and `/nodes/{node}/network` show, and the checks
 * container create/start make against them.
 *
 * Guest volumes are not tracked separately: a storage holds exactly the volumes
 * its guests' configs reference (`local-lvm:vm-101-disk-0,size=8G`), so create,
 * resize and delete change its usage without extra bookkeeping.
 *
 * Sources: pve-storage PVE/Storage.pm (storage_info, storage_check_enabled,
 * storage_check_node, activate_storage, volume_list), PVE/API2/Storage/Status.pm
 * and Content.pm; pve-manager PVE/API2/Network.pm (index).
 *
 * @module
 */

import { backupBytes, backupEntries } from "./backups.ts";
import {
  BLOCK_TYPES,
  DISK_KEY,
  diskBytes,
  volumeFormat,
  volumeName,
} from "./disks.ts";
import { ApiError } from "./http.ts";
import type {
  SimBridge,
  SimFile,
  SimStorage,
  SimTemplate,
  StorageContent,
} from "./node_types.ts";
import type { ClusterState } from "./state.ts";
import type { StorageState } from "./storage_state.ts";
import type { GuestState } from "./types.ts";

export type { StorageState } from "./storage_state.ts";

const GIB = 2 ** 30;

/** One guest volume found on a storage. */
export interface VolumeInfo {
  volid: string;
  vmid: number;
  size: number;
  /** `rootdir` (container volume) or `images` (VM disk). */
  content: "rootdir" | "images";
  format: string;
  /**
   * A volume that is a file (a storage with a path): the bytes it takes, and its backing file
   * (`../<base vmid>/<base volume>` for a linked clone, else null) — pve-storage
   * `PVE/Storage/Plugin.pm` list_images; a block storage lists neither.
   */
  file?: { used: number; parent: string | null };
}

/** The default template every `local` holds. */
export const DEFAULT_TEMPLATE = "debian-12-standard_12.7-1_amd64.tar.zst";

/** A node's storages when a test names none: `local` (dir) with one template, `local-lvm`, `local-zfs`. */
export function defaultStorages(): SimStorage[] {
  return [
    {
      storage: "local",
      type: "dir",
      content: ["iso", "vztmpl", "backup"],
      templates: [{ file: DEFAULT_TEMPLATE, size: 126 * 2 ** 20 }],
    },
    {
      storage: "local-lvm",
      type: "lvmthin",
      content: ["rootdir", "images"],
      total: 200 * GIB,
      used: 0,
    },
    {
      storage: "local-zfs",
      type: "zfspool",
      content: ["rootdir", "images"],
      total: 200 * GIB,
      used: 0,
    },
  ];
}

/** Template file name pattern (pve-storage's VZTMPL_EXT_RE_1) and its listed format (`tzst`, `tgz`…). */
const TEMPLATE_FILE = /^[^/]+\.tar\.(gz|xz|zst|bz2)$/;

/** Valid content type names (pve-storage-content). */
export const CONTENT_ENUM = [
  "images",
  "rootdir",
  "vztmpl",
  "iso",
  "backup",
  "snippets",
  "import",
];

/** Storages and bridges of every node. */
export class NodeResources {
  readonly #state: ClusterState;
  /** Configured storage ids, in storage.cfg order. */
  readonly #ids: string[] = [];
  /** `<node>/<id>` (or `*` + `/<id>` when shared) → the storage there. */
  readonly #stores = new Map<string, StorageState>();
  readonly #bridges = new Map<string, SimBridge[]>();
  /** The bytes of guest volumes an import wrote (`local-lvm:vm-500-disk-0` → its content). */
  readonly volumeData = new Map<string, Uint8Array>();
  /** Volumes a config names that are not on their storage (an import that left its disk missing). */
  readonly lostVolumes = new Set<string>();

  /**
   * @param state the cluster (its nodes and guests)
   * @param storages storage.cfg; default {@link defaultStorages}
   * @param bridges bridges per node; default `vmbr0` on every node
   */
  constructor(
    state: ClusterState,
    storages?: readonly SimStorage[],
    bridges?: Readonly<Record<string, readonly (string | SimBridge)[]>>,
  ) {
    this.#state = state;
    for (const s of storages ?? defaultStorages()) {
      if (this.#ids.includes(s.storage)) {
        throw new Error(`simulator: storage ${s.storage} given twice`);
      }
      this.#ids.push(s.storage);
      const nodes = s.nodes ?? state.nodes;
      for (const node of s.shared ? ["*"] : nodes) {
        this.#stores.set(`${node}/${s.storage}`, {
          storage: s.storage,
          type: s.type,
          content: [...s.content],
          nodes: s.nodes ? [...s.nodes] : undefined,
          shared: s.shared ?? false,
          disabled: s.disabled ?? false,
          active: s.active ?? true,
          total: s.total ?? 100 * GIB,
          used: s.used ?? 5 * GIB,
          templates: (s.templates ?? []).map((t) => ({ ...t })),
          files: (s.files ?? []).map((f) => ({ ...f })),
        });
      }
    }
    state.nodes.forEach((node, i) => {
      const given = bridges?.[node] ??
        [{
          iface: "vmbr0",
          ports: "eno1",
          cidr: `192.168.100.${11 + i}/24`,
          gateway: "192.168.100.1",
        }];
      this.#bridges.set(
        node,
        given.map((b) => typeof b === "string" ? { iface: b } : { ...b }),
      );
    });
  }

  /** Whether storage.cfg has `id`. */
  exists(id: string): boolean {
    return this.#ids.includes(id);
  }

  /** The storage `id` on any node (its storage.cfg entry), or undefined. */
  config(id: string): StorageState | undefined {
    return [...this.#stores.values()].find((s) => s.storage === id);
  }

  /** The storage `id` as seen from `node`, or undefined when it is not available there. */
  get(node: string, id: string): StorageState | undefined {
    const shared = this.#stores.get(`*/${id}`);
    if (shared) {
      return !shared.nodes || shared.nodes.includes(node) ? shared : undefined;
    }
    return this.#stores.get(`${node}/${id}`);
  }

  /** Every storage as listed on `node`: the configured ones, each with its state there if available. */
  listed(node: string): { id: string; store?: StorageState }[] {
    return this.#ids.map((id) => ({ id, store: this.get(node, id) }));
  }

  /** The bridges of `node` (the live, mutable list). */
  bridges(node: string): SimBridge[] {
    let list = this.#bridges.get(node);
    if (!list) {
      list = [];
      this.#bridges.set(node, list);
    }
    return list;
  }

  /** The bridge `iface` of `node` when it exists and is up. */
  activeBridge(node: string, iface: string): SimBridge | undefined {
    return this.bridges(node).find((b) =>
      b.iface === iface && b.active !== false
    );
  }

  /**
   * storage_check_enabled: the storage as configured for `node`, or PVE's 500
   * (does not exist, disabled, not available on the node).
   */
  enabled(node: string, id: string): StorageState {
    if (!this.exists(id)) {
      throw new ApiError(500, `storage '${id}' does not exist`);
    }
    if (this.config(id)?.disabled) {
      throw new ApiError(500, `storage '${id}' is disabled`);
    }
    const store = this.get(node, id);
    if (!store) {
      throw new ApiError(
        500,
        `storage '${id}' is not available on node '${node}'`,
      );
    }
    if (store.disabled) throw new ApiError(500, `storage '${id}' is disabled`);
    return store;
  }

  /** activate_storage: 500 when the storage is offline (e.g. its NFS server is down). */
  online(store: StorageState): StorageState {
    if (!store.active) {
      throw new ApiError(500, `storage '${store.storage}' is not online`);
    }
    return store;
  }

  /** enabled + online: a storage a volume can be allocated on. */
  usable(node: string, id: string): StorageState {
    return this.online(this.enabled(node, id));
  }

  /** Guest volumes on `store` as seen from `node` (a local storage holds only that node's guests' volumes). */
  volumes(node: string, store: StorageState): VolumeInfo[] {
    const out: VolumeInfo[] = [];
    for (const g of this.#state.all()) {
      if (!store.shared && g.node !== node) continue;
      const seen = new Set<string>();
      // A volume a pending drive names exists already (create_disks allocated it).
      for (const [key, value] of guestVolumeEntries(g)) {
        const v = volumeOf(g, key, String(value), store);
        if (!v || this.lostVolumes.has(v.volid) || seen.has(v.volid)) continue;
        seen.add(v.volid);
        // A volume whose bytes are known (an imported disk) is as large as they are.
        const data = this.volumeData.get(v.volid);
        if (v.file && data) v.file.used = data.length;
        out.push(data ? { ...v, size: data.length } : v);
      }
    }
    return out;
  }

  /**
   * The bytes of volume `volid` as seen from `node` (pve-storage volume_size_info); null when its
   * storage has no such volume, undefined when the storage is not one the simulator knows.
   */
  volumeBytes(node: string, volid: string): number | null | undefined {
    const store = this.get(node, volid.split(":")[0]);
    if (!store) return undefined;
    return this.volumes(node, store).find((v) => v.volid === volid)?.size ??
      null;
  }

  /** Bytes used on `store`: its own `used`, templates and guest volumes. */
  usedBytes(node: string, store: StorageState): number {
    return store.used +
      store.templates.reduce((n, t) => n + templateSize(t), 0) +
      store.files.reduce((n, f) => n + fileSize(f), 0) +
      this.volumes(node, store).reduce((n, v) => n + v.size, 0) +
      backupBytes(store);
  }

  /** Free bytes on `store`. */
  availBytes(node: string, store: StorageState): number {
    return Math.max(0, store.total - this.usedBytes(node, store));
  }

  /** The name PVE gives the next container volume of `vmid` on `store` (`vm-123-disk-0`, `subvol-123-disk-0`…). */
  nextVolname(node: string, store: StorageState, vmid: number): string {
    const taken = this.volumes(node, store).map((v) => v.volid);
    let n = 0;
    while (taken.some((t) => t.includes(`-${vmid}-disk-${n}`))) n++;
    return volname(store, vmid, n);
  }
}

function templateSize(t: SimTemplate): number {
  return t.size ?? t.data?.length ?? 126 * 2 ** 20;
}

/** An ISO or import file's size. */
export function fileSize(f: SimFile): number {
  return f.size ?? f.data?.length ?? 2 ** 20;
}

/** A volume name as the storage plugin allocates it for a container (a ZFS subvolume, else raw). */
function volname(store: StorageState, vmid: number, n: number): string {
  return store.type === "zfspool"
    ? `subvol-${vmid}-disk-${n}`
    : volumeName(store.type, vmid, `vm-${vmid}-disk-${n}`, "raw");
}

/** A guest's config entries, then its pending values. */
function guestVolumeEntries(g: GuestState): [string, unknown][] {
  return [...Object.entries(g.config), ...Object.entries(g.pending ?? {})];
}

/** The volume a config entry places on `store`, if any. */
function volumeOf(
  g: GuestState,
  key: string,
  value: string,
  store: StorageState,
): VolumeInfo | undefined {
  const isCt = g.type === "lxc";
  const isVolumeKey = isCt
    ? key === "rootfs" || /^mp\d+$/.test(key) || /^unused\d+$/.test(key)
    : (DISK_KEY.test(key) && !value.includes("media=cdrom")) ||
      /^unused\d+$/.test(key) || key === "vmstate";
  if (!isVolumeKey) return undefined;
  const volid = value.split(",")[0];
  if (!volid.startsWith(`${store.storage}:`)) return undefined;
  const name = volid.slice(store.storage.length + 1);
  const format = name.startsWith("subvol-") || name.endsWith(".subvol")
    ? "subvol"
    : volumeFormat(name);
  // A linked clone's volume names its base: `<base vmid>/<base>/<vmid>/<name>`.
  const base = /^(\d+\/[^/]+)\/\d+\/[^/]+$/.exec(name)?.[1];
  return {
    volid,
    vmid: g.vmid,
    size: key === "vmstate"
      ? vmstateBytes(g)
      : diskBytes(value) || (g.volumeSizes?.[volid] ?? 0),
    content: isCt ? "rootdir" : "images",
    format,
    // A new sparse file takes its first block.
    file: isFileStorage(store)
      ? { used: 4096, parent: base ? `../${base}` : null }
      : undefined,
  };
}

/**
 * A suspend's state volume: twice the memory plus 500 MiB (qemu-server `PVE/QemuConfig.pm`
 * __snapshot_save_vmstate); the config names only its volid.
 */
export function vmstateBytes(g: GuestState): number {
  const memMb =
    Number(String(g.config.memory ?? "512").replace(/^current=/, "")) || 512;
  return (memMb * 2 + 500) * 2 ** 20;
}

/** The template `volid` names on its storage, if it is there. */
export function findTemplate(
  store: StorageState,
  volid: string,
): SimTemplate | undefined {
  const file = volid.slice(store.storage.length + 1).replace(/^vztmpl\//, "");
  return store.templates.find((t) => t.file === file);
}

/**
 * check_volume_access for an `ostemplate` (content type `vztmpl`), as PVE 8/9 run
 * it before the create task: 500 for a path (API tokens are never `root@pam`), an
 * unknown storage, a volume of another content type, an unparsable name. A
 * well-formed name whose file is missing passes here and fails in the task.
 */
export function checkTemplateVolid(
  resources: NodeResources,
  volid: string,
): { storage: string; file: string } {
  const m = /^([a-z][a-z0-9\-_.]*[a-z0-9]):(.+)$/i.exec(volid);
  if (!m) {
    throw new ApiError(500, "Only root can pass arbitrary filesystem paths.");
  }
  const [, storage, name] = m;
  if (!resources.exists(storage)) {
    throw new ApiError(500, `storage '${storage}' does not exist`);
  }
  // parse_volname reads storage.cfg: the node does not matter here.
  const store = resources.config(storage);
  const kind = /^(images|rootdir|vztmpl|iso|backup|snippets|import)\//.exec(
    name,
  )?.[1];
  if (store && BLOCK_TYPES.includes(store.type)) {
    // Block storages know only their own volume names (the plugins' parse_volname).
    const plugin = store.type === "zfspool"
      ? "zfs"
      : store.type.replace("thin", "");
    throw new ApiError(500, `unable to parse ${plugin} volume name '${name}'`);
  }
  if (kind === undefined) {
    throw new ApiError(500, `unable to parse directory volume name '${name}'`);
  }
  if (kind !== "vztmpl") {
    throw new ApiError(
      500,
      `unable to use volume ${volid} - content type needs to be 'vztmpl'`,
    );
  }
  const file = name.slice("vztmpl/".length);
  if (!TEMPLATE_FILE.test(file)) {
    throw new ApiError(500, `unable to parse directory volume name '${name}'`);
  }
  return { storage, file };
}

/** Whether a storage keeps files (it has a `path`): only those take downloads. */
export function isFileStorage(store: StorageState): boolean {
  return !BLOCK_TYPES.includes(store.type) && store.type !== "iscsi";
}

/** A file storage's directory for `content` (PVE::Storage get_iso_dir, get_vztmpl_dir, get_import_dir). */
export function contentDir(
  store: StorageState,
  content: "iso" | "vztmpl" | "import",
): string {
  const base = store.storage === "local"
    ? "/var/lib/vz"
    : `/mnt/pve/${store.storage}`;
  const sub = {
    iso: "template/iso",
    vztmpl: "template/cache",
    import: "import",
  };
  return `${base}/${sub[content]}`;
}

/** Path of a file storage's template cache (for log lines). */
export function templatePath(store: StorageState, file: string): string {
  const base = store.storage === "local"
    ? "/var/lib/vz"
    : `/mnt/pve/${store.storage}`;
  return `${base}/template/cache/${file}`;
}

/** The error a container volume allocation fails with when `store` is full (by storage type; inferred). */
export function outOfSpaceError(
  store: StorageState,
  name: string,
  bytes: number,
  avail: number,
): string {
  const extents = (b: number) => Math.floor(b / (4 * 2 ** 20));
  switch (store.type) {
    case "zfspool":
      return `zfs error: cannot create 'rpool/data/${name}': out of space`;
    case "lvm":
    case "lvmthin":
      return `lvcreate 'pve/${name}' error:   Volume group "pve" has insufficient free space (${
        extents(avail)
      } extents): ${extents(bytes)} required.`;
    default:
      return `unable to create image: qemu-img: ${
        store.storage === "local" ? "/var/lib/vz" : `/mnt/pve/${store.storage}`
      }/images/${name}: Could not preallocate data for the new file: No space left on device`;
  }
}

/** One entry of `GET /nodes/{node}/storage` (storage_info). */
export function storageEntry(
  resources: NodeResources,
  node: string,
  id: string,
  store: StorageState | undefined,
): Record<string, unknown> {
  const enabled = store !== undefined && !store.disabled;
  const out: Record<string, unknown> = {
    storage: id,
    type: store?.type ?? resources.config(id)?.type ?? "dir",
    content: contentString(store?.content ?? []),
    shared: store?.shared ? 1 : 0,
    enabled: enabled ? 1 : 0,
    active: 0,
    total: 0,
    used: 0,
    avail: 0,
  };
  if (store && enabled && store.active) {
    const used = resources.usedBytes(node, store);
    out.active = 1;
    out.total = store.total;
    out.used = used;
    out.avail = resources.availBytes(node, store);
    if (store.total > 0) out.used_fraction = used / store.total;
  }
  return out;
}

/** PVE's content_hash_to_string: sorted, comma-separated. */
export function contentString(content: readonly string[]): string {
  return [...new Set(content)].sort().join(",");
}

/** Whether a storage offers any of the comma-separated content types in `filter`. */
export function offersContent(
  store: StorageState,
  filter: string,
): boolean {
  return filter.split(/[,;\s]+/).some((c) =>
    store.content.includes(c as StorageContent)
  );
}

/** `GET …/storage/{storage}/content` entries (volume_list), sorted by volid like PVE. */
export function contentList(
  resources: NodeResources,
  node: string,
  store: StorageState,
  content?: string,
  vmid?: number,
): Record<string, unknown>[] {
  const want = (c: string) =>
    store.content.includes(c as StorageContent) &&
    (content === undefined || content === c);
  const out: Record<string, unknown>[] = [];
  if (want("vztmpl") && vmid === undefined) {
    for (const t of store.templates) {
      const ext = /\.tar\.(gz|xz|zst|bz2)$/.exec(t.file)?.[1] ?? "gz";
      out.push({
        volid: `${store.storage}:vztmpl/${t.file}`,
        format: `t${ext}`,
        size: templateSize(t),
        content: "vztmpl",
        ctime: t.ctime ?? 1730000000,
      });
    }
  }
  for (const f of store.files) {
    if (!want(f.content) || vmid !== undefined) continue;
    const format = f.content === "iso"
      ? "iso"
      : /\.(ova|qcow2|raw|vmdk)$/.exec(f.file)?.[1] ?? "raw";
    out.push({
      volid: `${store.storage}:${f.content}/${f.file}`,
      format,
      size: fileSize(f),
      content: f.content,
      ctime: f.ctime ?? 1730000000,
    });
  }
  if (want("backup")) out.push(...backupEntries(store, vmid));
  for (const v of resources.volumes(node, store)) {
    if (!want(v.content)) continue;
    if (vmid !== undefined && v.vmid !== vmid) continue;
    out.push({
      volid: v.volid,
      format: v.format,
      size: v.size,
      content: v.content,
      vmid: v.vmid,
      ctime: 1730000000,
      ...v.file,
    });
  }
  return out.sort((a, b) =>
    String(a.volid).toLowerCase().localeCompare(String(b.volid).toLowerCase())
  );
}

/** Interfaces of `GET /nodes/{node}/network` (bridges plus the physical NIC they use). */
export function networkEntries(
  resources: NodeResources,
  node: string,
  type?: string,
): Record<string, unknown>[] {
  const bridges = resources.bridges(node);
  const ports = [
    ...new Set(
      bridges.flatMap((b) => (b.ports ?? "").split(/\s+/).filter((p) => p)),
    ),
  ];
  const all: Record<string, unknown>[] = [
    ...ports.map((iface, i) => ({
      iface,
      type: "eth",
      method: "manual",
      method6: "manual",
      families: ["inet"],
      priority: 3 + i,
      active: 1,
      exists: 1,
    })),
    ...bridges.map((b, i) => {
      const out: Record<string, unknown> = {
        iface: b.iface,
        type: b.type ?? "bridge",
        method: b.cidr ? "static" : "manual",
        method6: "manual",
        families: ["inet"],
        priority: 10 + i,
        autostart: 1,
        bridge_stp: "off",
        bridge_fd: "0",
      };
      if (b.ports) out.bridge_ports = b.ports;
      if (b.cidr) {
        const [address, prefix] = b.cidr.split("/");
        out.cidr = b.cidr;
        out.address = address;
        out.netmask = prefix;
      }
      if (b.gateway) out.gateway = b.gateway;
      // PVE sets `active` only for interfaces that are up.
      if (b.active !== false) out.active = 1;
      return out;
    }),
  ];
  const isBridge = (t: unknown) => t === "bridge" || t === "OVSBridge";
  return all.filter((i) => {
    if (type === undefined || type === "include_sdn") return true;
    if (type === "any_bridge" || type === "any_local_bridge") {
      return isBridge(i.type);
    }
    return i.type === type;
  });
}
