/**
 * The fault matrix's qemu create row: VM 600 from an image already in `local`'s import content
 * (as downloadUrl leaves it), with a new disk imported from it, a cloud-init drive and a NIC. Its
 * file scenarios are the import's: the task ends OK but the imported disk is missing (`no file`) or
 * holds 1,000 bytes of the image (`short file`).
 *
 * @module
 */
import {
  config,
  lastWrite,
  nextid,
  type RowSpec,
  status,
  statusObserved,
  taskStatus,
  version,
  writesOnly,
} from "./methods.ts";
import { imageBytes } from "../../simulator/image_server.ts";

const NEW_VM = 600;
const IMAGE = imageBytes(120_000, 19);
const NET0 = "virtio,bridge=vmbr0";

/** The qemu create row (pve1: create works on the transport's node). */
export function vmCreateSpec(): RowSpec {
  const n = "pve1";
  const read = (
    path: string,
    id: string,
    pve500: string,
    privilege: string,
  ) => ({
    id: `GET ${id}`,
    method: "GET" as const,
    path: `^/api2/json/nodes/${n}/${path}$`,
    sample: `/nodes/${n}/${path}`,
    kind: "read" as const,
    pve500,
    privilege,
  });
  const fails = (happened: RegExp, override: Record<string, unknown>) => ({
    plan: {
      expected: "fail" as const,
      happened,
      arm: (env: Parameters<RowSpec["effect"]>[0]) =>
        env.sim.nextTask(override),
    },
  });
  const disk = (env: Parameters<RowSpec["effect"]>[0]) =>
    String(env.sim.guest(NEW_VM)?.config.scsi0 ?? "").split(",")[0];
  return {
    name: "create",
    args: {
      vmid: NEW_VM,
      name: "new-vm",
      cores: 2,
      memory: 1024,
      config: {
        scsi0: "local-lvm:0,import-from=local:import/cloud.qcow2",
        ide2: "local-lvm:cloudinit",
        net0: NET0,
      },
    },
    prepare: (env) => {
      const local = env.sim.storage(n, "local");
      if (!local) return;
      if (!local.content.includes("import")) local.content.push("import");
      local.files.push({ content: "import", file: "cloud.qcow2", data: IMAGE });
    },
    endpoints: [
      version,
      read(
        "storage",
        "/nodes/<node>/storage",
        "got timeout",
        `/nodes/${n}, Sys.Audit`,
      ),
      read(
        "storage/local/content",
        "/nodes/<node>/storage/local/content (the image)",
        "unable to activate storage 'local' - directory '/var/lib/vz' does not exist or is unreachable",
        "/storage/local, Datastore.Audit",
      ),
      read(
        "network",
        "/nodes/<node>/network",
        "got timeout",
        `/nodes/${n}, Sys.Audit`,
      ),
      nextid(" (is the VMID free?)"),
      {
        id: "POST /nodes/<node>/qemu",
        method: "POST",
        path: `^/api2/json/nodes/${n}/qemu$`,
        sample: `/nodes/${n}/qemu`,
        kind: "mutation",
        pve500: `unable to create VM ${NEW_VM}: config file already exists`,
        privilege: `/vms/${NEW_VM}, VM.Allocate`,
        stores: {
          config: { net0: "virtio=BC:24:11:00:06:00,bridge=vmbr0,firewall=1" },
          happened: /`net0` is "[^"]*firewall=1", not the requested/,
        },
      },
      taskStatus(n, "qmcreate"),
      status(n, NEW_VM, " (the VM)"),
      config(n, NEW_VM, " (the VM)"),
      read(
        "storage/local-lvm/content",
        "/nodes/<node>/storage/local-lvm/content (the VM's disks)",
        "lvs command failed: got timeout",
        "/storage/local-lvm, Datastore.Audit",
      ),
    ],
    names: new RegExp(`VM ${NEW_VM}|${NEW_VM}`),
    task: true,
    leftLock: "create",
    noEffect: /still locked: create/,
    fileScenarios: {
      "no file": fails(
        /its disk scsi0 \(local-lvm:vm-600-disk-0\) is not on storage local-lvm/,
        { loseFile: true },
      ),
      "short file": fails(/holds 1000 bytes where the image has 120000/, {
        truncateTo: 1000,
      }),
    },
    effect: (env, r) => {
      const g = env.sim.guest(NEW_VM);
      const rec = lastWrite(r, `vm-${NEW_VM}`);
      const data = env.sim.volumeData(disk(env));
      const problems: string[] = [];
      if (g?.name !== "new-vm" || !g.tags.includes("swamp") || g.lock) {
        problems.push(
          `succeeded but VM ${NEW_VM} is ${
            JSON.stringify([g?.name, g?.tags, g?.lock])
          }`,
        );
      }
      if (data?.length !== IMAGE.length) {
        problems.push(
          `succeeded but its imported disk holds ${data?.length} bytes`,
        );
      }
      if (rec?.present !== true) problems.push("no present vm-600 record");
      return problems;
    },
    truth: (env, r, before) => {
      const problems = [
        ...writesOnly(r, new RegExp(`^vm-${NEW_VM}$`)),
        ...statusObserved(env, r, before, NEW_VM, "vm"),
      ];
      const rec = lastWrite(r, `vm-${NEW_VM}`);
      if (rec?.present === true && !env.sim.guest(NEW_VM)) {
        problems.push("records a VM that does not exist");
      }
      return problems;
    },
  };
}
