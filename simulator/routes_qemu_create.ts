/**
 * `POST /nodes/{node}/qemu`: a new VM from parameters, its disks made by the `qmcreate` task —
 * `<storage>:<GiB>` allocated, `<storage>:cloudinit` a cloud-init drive, and
 * `<storage>:0,import-from=<volid>` a new disk holding a copy of that image's bytes (so the VM's
 * disk is what downloadUrl brought), sized by it.
 *
 * Sources: qemu-server src/PVE/API2/Qemu.pm create_vm (check_vmid_unused before the permission
 * check, `$check_drive_param`'s import-from syntax, `create_disks`, `$import_from_volid`, the config
 * written under `lock: create`, the `qmcreate` worker, smbios1/vmgenid defaults) and
 * `$check_vm_modify_config_perm` (perl_rules.ts qemuCreatePerm); with `archive` it restores a
 * backup (routes_backup.ts restoreGuest). With real guests, a VM whose first imported disk is a
 * qcow2 (cloud_image.ts) is a real QEMU VM on that copy (real_guests.ts). Not simulated: `start` (the package starts the VM itself, verified), OVA extraction, importing from
 * another guest's disk or a path, qcow2 headers (an image's "virtual size" is its byte length).
 *
 * @module
 */

import { isQcow2 } from "./cloud_image.ts";
import { checkVmPerm, type Ctx, type Route } from "./context.ts";
import { applyConfigChange, parseTags } from "./config.ts";
import { configOptionSpec } from "./config.ts";
import {
  allocateDisk,
  DISK_KEY,
  formatSize,
  isCdrom,
  parseDrive,
  volumeFormat,
  withDiskOption,
} from "./disks.ts";
import { storedInstead } from "./faults.ts";
import { ApiError, paramError } from "./http.ts";
import { VMID_SPEC } from "./params.ts";
import { qemuCreatePerm } from "./perl_rules.ts";
import { restoreGuest } from "./routes_backup.ts";
import { cloudinitValues } from "./routes_config.ts";
import { withUuid } from "./state.ts";
import { SIM_QEMU_VERSION } from "./views.ts";
import { TaskFailure, type TaskRecord } from "./tasks.ts";
import type { GuestState } from "./types.ts";

const OPT_BOOL = { type: "boolean" as const, optional: true };
const OPT_STRING = { type: "string" as const, optional: true };

/** create_vm's parameters that are not config options. */
const CREATE_PARAMS = {
  vmid: VMID_SPEC,
  archive: OPT_STRING,
  storage: OPT_STRING,
  force: OPT_BOOL,
  unique: OPT_BOOL,
  pool: OPT_STRING,
  bwlimit: { type: "integer" as const, optional: true, minimum: 0 },
  start: OPT_BOOL,
  "live-restore": OPT_BOOL,
  "import-working-storage": OPT_STRING,
};

/** The image an `import-from` names: `<storage>:import/<file>` on a storage of `node`. */
function importSource(ctx: Ctx, node: string, source: string) {
  const m = /^([^:]+):import\/(.+)$/.exec(source);
  const store = m ? ctx.core.resources.get(node, m[1]) : undefined;
  const file = store?.files.find((f) =>
    f.content === "import" && f.file === m?.[2]
  );
  if (!file) {
    throw new TaskFailure(
      `cannot import from '${source}' - could not get size of ${source}`,
    );
  }
  return file.data ?? new Uint8Array(file.size ?? 0);
}

/** The synchronous part of create_vm: what the task needs, or PVE's refusal. */
function checkCreate(ctx: Ctx) {
  const { state } = ctx.core;
  const node = ctx.params.node as string;
  const vmid = ctx.params.vmid as number;
  if (ctx.params.archive !== undefined) {
    throw new ApiError(500, "simulator: restoring a backup is not simulated");
  }
  if (ctx.params.start === true) {
    throw new ApiError(500, "simulator: create with start is not simulated");
  }
  // check_vmid_unused comes BEFORE the permission check.
  const existing = state.get(vmid);
  if (existing) {
    throw new ApiError(
      500,
      `unable to create VM ${vmid}: config file already exists`,
    );
  }
  if (state.isTaken(vmid)) {
    throw new ApiError(
      500,
      `unable to create VM ${vmid}: config file already exists`,
    );
  }
  checkVmPerm(ctx.user, vmid, "VM.Allocate");
  const options: Record<string, string | number | boolean> = {};
  for (const [k, v] of Object.entries(ctx.params)) {
    if (k in CREATE_PARAMS || k === "node") continue;
    options[k] = v as string | number | boolean;
  }
  for (const [key, value] of Object.entries(options)) {
    if (!DISK_KEY.test(key) || !/(^|,)import-from=/.test(String(value))) {
      continue;
    }
    if (!/^[^:,]+:0(,|$)/.test(String(value))) {
      throw paramError({
        [key]:
          "'import-from' requires special syntax - use <storage ID>:0,import-from=<source>",
      });
    }
  }
  return { node, vmid, options };
}

/**
 * The config value a new drive gets, made by the task (create_disks): a new volume named as its
 * storage names it (disks.ts allocateDisk), an imported one holding a copy of the image's bytes
 * and sized by it ($import_from_volid; in the image's format where the storage has a path), any
 * other drive as PVE prints it.
 */
function makeDisk(
  ctx: Ctx,
  task: TaskRecord,
  g: GuestState,
  key: string,
  value: string,
  imported: Uint8Array[],
): string {
  const { resources } = ctx.core;
  const source = parseDrive(value).props["import-from"];
  const image = source === undefined
    ? undefined
    : importSource(ctx, g.node, source);
  const taken = Object.entries(g.config).filter(([k]) => DISK_KEY.test(k))
    .map(([, v]) => String(v));
  const made = allocateDisk(
    value,
    g.vmid,
    taken,
    (id) => resources.config(id)?.type,
    source && volumeFormat(source),
  );
  if (source === undefined || image === undefined) {
    if (made.split(",")[0] !== value.split(",")[0]) {
      task.log.push(`${key}: successfully created disk '${made}'`);
    }
    return made;
  }
  const volid = made.split(",")[0];
  // $import_from_volid copies the volume; the config records the source's size.
  const copy = task.truncateTo === undefined
    ? image.slice()
    : image.slice(0, task.truncateTo);
  resources.volumeData.set(volid, copy);
  imported.push(copy);
  if (task.loseFile) resources.lostVolumes.add(volid);
  task.log.push(
    `importing disk '${source}' to VM ${g.vmid} ...`,
    `transferred ${image.length}.0 B of ${image.length}.0 B (100.00%)`,
    `Successfully imported disk as '${key}:${volid}'`,
  );
  return withDiskOption(made, "size", formatSize(image.length));
}

/**
 * qemu-server `PVE/QemuServer/MetaInfo.pm` new_meta_info_string: the QEMU version the VM was made
 * with and when (the simulated QEMU is the one `running-qemu` reports).
 */
function metaInfo(): string {
  return `creation-qemu=${SIM_QEMU_VERSION},ctime=${
    Math.floor(Date.now() / 1000)
  }`;
}

/** qemu-server `PVE/QemuServer/Drive.pm` valid_drive_names_for_boot: the order disks are tried in. */
const BOOT_DRIVES = [
  ...Array.from({ length: 4 }, (_, i) => `ide${i}`),
  ...Array.from({ length: 31 }, (_, i) => `scsi${i}`),
  ...Array.from({ length: 16 }, (_, i) => `virtio${i}`),
  ...Array.from({ length: 6 }, (_, i) => `sata${i}`),
];

/**
 * qemu-server `PVE/QemuServer.pm` get_default_bootdevices and print_bootorder: the first disk,
 * the first CD-ROM (`Drive.pm` resolve_first_disk) and the first NIC, as `order=a;b;c`; none
 * without any.
 */
function defaultBootOrder(config: GuestState["config"]): string | undefined {
  const first = (cdrom: boolean) =>
    BOOT_DRIVES.find((k) =>
      config[k] !== undefined && isCdrom(String(config[k])) === cdrom
    );
  const nic = Array.from({ length: 32 }, (_, i) => `net${i}`).find((k) =>
    config[k] !== undefined
  );
  const order = [first(false), first(true), nic].filter((d) => d);
  return order.length > 0 ? `order=${order.join(";")}` : undefined;
}

/**
 * With real guests, a VM whose first imported disk is a qcow2 image (a cloud image such as
 * cloud_image.ts builds) is a real QEMU VM booting that copy as its disk; any other import stays
 * bytes on a volume. This is the simulator's own rule for which guests it can run, not PVE's: PVE
 * boots whatever a VM's disk holds.
 */
async function bootFromImage(
  ctx: Ctx,
  g: GuestState,
  image: Uint8Array | undefined,
): Promise<void> {
  const real = ctx.core.real;
  if (!real || !image || !isQcow2(image)) return;
  await real.adoptDisk(g, image);
  g.real = true;
}

/** The qemu create route. */
export const qemuCreateRoutes: Route[] = [
  {
    method: "POST",
    path: "/nodes/{node}/qemu",
    params: CREATE_PARAMS,
    dynamic: configOptionSpec,
    rules: [qemuCreatePerm],
    handler: (ctx) => {
      // create_vm with `archive` restores a backup instead (qemu-server PVE/API2/Qemu.pm).
      const archive = ctx.params.archive;
      if (archive !== undefined) {
        return restoreGuest(ctx, "qemu", String(archive));
      }
      const c = checkCreate(ctx);
      const { state, tasks } = ctx.core;
      const { name, ...rest } = c.options;
      const change = { set: rest, delete: [], revert: [] };
      const stores = state.takeStores();
      // create_vm writes the config (name, tags) under `lock: create` before the worker makes the
      // disks; the lock goes when it is done.
      state.add({
        vmid: c.vmid,
        node: c.node,
        type: "qemu",
        name: String(name ?? `VM${c.vmid}`),
        tags: rest.tags === undefined ? [] : parseTags(String(rest.tags)),
        status: "stopped",
        lock: "create",
        config: {},
      });
      const g = state.get(c.vmid)!;
      cloudinitValues(g, change);
      const isOurs = () => {
        const live = state.get(c.vmid);
        return live && live.type === "qemu" && live.lock === "create"
          ? live
          : undefined;
      };
      const task: TaskRecord = tasks.start({
        node: c.node,
        type: "qmcreate",
        id: String(c.vmid),
        user: ctx.user.tokenId,
        run: async () => {
          const live = isOurs();
          if (!live) {
            throw new TaskFailure(
              `unable to create VM ${c.vmid}: config file already exists`,
            );
          }
          const options = { ...change.set };
          const imported: Uint8Array[] = [];
          // create_vm's worker: what create_disks dies with ends the task, after "$emsg".
          try {
            for (const [key, value] of Object.entries(options)) {
              if (!DISK_KEY.test(key)) continue;
              live.config[key] = makeDisk(
                ctx,
                task,
                live,
                key,
                String(value),
                imported,
              );
              delete options[key];
            }
          } catch (e) {
            if (!(e instanceof ApiError || e instanceof TaskFailure)) throw e;
            throw new TaskFailure(
              `unable to create VM ${c.vmid} - ${e.message}`,
            );
          }
          await bootFromImage(ctx, live, imported[0]);
          // Enabling the agent assumes qemu-ga in the guest (config.ts): the host's answers it.
          applyConfigChange(live, { ...change, set: options });
          // create_vm: new meta info (always), a boot order of the disks when none was given
          // (get_default_bootdevices → print_bootorder), a new smbios1 uuid and vmgenid.
          live.config.meta = metaInfo();
          const boot = live.config.boot ?? defaultBootOrder(live.config);
          if (boot !== undefined) live.config.boot = boot;
          live.config.smbios1 ??= withUuid(undefined, crypto.randomUUID());
          live.config.vmgenid ??= crypto.randomUUID();
          live.config = storedInstead(live.config, stores);
          live.lock = undefined;
        },
        onFailure: () => {
          if (isOurs()) state.remove(c.vmid);
        },
      });
      return task.upid;
    },
  },
];
