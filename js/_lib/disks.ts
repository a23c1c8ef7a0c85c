/**
 * moveDisk, attachDisk and detachDisk, both models: one volume moved to another storage, an
 * existing volume put into a free slot, a disk taken out (kept as unusedN, or destroyed). The
 * core applies the same argument rules (src/methods/move_disk.rs, attach_disk.rs,
 * detach_disk.rs); tests/properties/argument_agreement_test.ts proves they agree.
 *
 * @module
 */
import { z } from "npm:zod@4";
import { type MethodContext, type ModelName, runOnCore } from "./core.ts";
import { applyPending, field, guestRef, requireGuest } from "./schemas.ts";

const UNUSED = "unused(0|[1-9][0-9]?|1[0-9][0-9]|2[0-4][0-9]|25[0-5])";

/** The volumes of each kind: a VM's drives and EFI/TPM volumes; a container's rootfs and mpN. */
const VOLUME_KEY = {
  qemu: `(scsi|sata|virtio|ide)\\d+|efidisk0|tpmstate0`,
  lxc: `rootfs|mp\\d+`,
};

/** PVE's pve-storage-id. */
const storageId = field.string.regex(
  /^[a-z][a-z0-9\-_.]*[a-z0-9]$/i,
  "storage must be a storage id",
);

/** The three disk methods of `model`. */
export function diskMethods(model: ModelName) {
  const vm = model === "qemu";
  const key = (extra: string) =>
    field.string.regex(
      new RegExp(`^(${extra}|${UNUSED})$`),
      `disk must match ^(${extra})$ or unusedN`,
    );
  const MoveDiskArgs = z.object({
    ...guestRef,
    // pve-container moves only configured volumes, never an unusedN.
    disk: (vm ? key(VOLUME_KEY.qemu) : field.string.regex(
      /^(rootfs|mp\d+)$/,
      "disk must be rootfs or mpN",
    )).default(vm ? "scsi0" : "rootfs"),
    storage: storageId,
    /** Free the source instead of keeping it as unusedN. */
    delete: field.falseByDefault,
    ...(vm ? { format: z.enum(["raw", "qcow2", "vmdk"]).optional() } : {}),
  }).check(requireGuest);
  const slot = vm
    ? {
      disk: field.string.regex(
        /^(scsi([0-9]|[12][0-9]|30)|sata[0-5]|virtio([0-9]|1[0-5])|ide[0-3])$/,
        "disk must be scsi0…scsi30, sata0…sata5, virtio0…virtio15 or ide0…ide3",
      ).optional(),
      bus: z.enum(["scsi", "sata", "virtio", "ide"]).optional(),
    }
    : {
      disk: field.string.regex(
        /^mp([0-9]|[1-9][0-9]|1[0-9][0-9]|2[0-4][0-9]|25[0-5])$/,
        "disk must be mp0 … mp255",
      ).optional(),
      /** The path the volume is mounted at in the container. */
      mp: field.string.regex(
        /^(?!.*\/\.\.(\/|$))\/[^,]*$/,
        "mp must be an absolute path without ',' or '..'",
      ),
    };
  const AttachDiskArgs = z.object({
    ...guestRef,
    volume: field.string.regex(
      /^[a-z][a-z0-9\-_.]*[a-z0-9]:[^\s,]+$/i,
      "volume must be a volume id <storage>:<volume>",
    ),
    ...slot,
    applyPending,
  }).check(
    requireGuest,
    z.refine((a) => !("bus" in a && a.bus && a.disk), {
      message: "bus is given with disk: give one of them",
      path: ["bus"],
    }),
  );
  const DetachDiskArgs = z.object({
    ...guestRef,
    disk: key(vm ? VOLUME_KEY.qemu : "mp\\d+"),
    /** Free the volume instead of keeping it as unusedN; required for an unusedN. */
    destroy: field.falseByDefault,
    applyPending,
  }).check(
    requireGuest,
    z.refine((a) => a.destroy || !a.disk.startsWith("unused"), {
      message:
        "destroy must be true to remove an unusedN (PVE destroys its volume)",
      path: ["destroy"],
    }),
    z.refine((a) => vm || !a.destroy || a.disk.startsWith("unused"), {
      message:
        "destroy is for an unusedN on a container: detach the mount point first",
      path: ["destroy"],
    }),
  );
  return {
    moveDisk: {
      description: vm
        ? "Move a VM volume (disk: default scsi0; efidisk0, tpmstate0, unusedN too) to storage, mirrored while the VM runs; succeeds when the config read back holds it on a new volume of that storage (its size quoted) and the source is kept as an unusedN entry, or — with delete — is in no config key and no longer listed by its storage"
        : "Move a stopped container's volume (disk: default rootfs or mpN) to storage; succeeds when the config read back holds it on a new volume of that storage and the source is kept as an unusedN entry, or — with delete — is in no config key and no longer listed by its storage (PVE does not move a running container's volume: refused up front)",
      kind: "action" as const,
      arguments: MoveDiskArgs,
      execute: (args: z.infer<typeof MoveDiskArgs>, ctx: MethodContext) =>
        runOnCore(model, "moveDisk", args, ctx),
    },
    attachDisk: {
      description: vm
        ? "Attach an existing volume (an unusedN's, an imported one) as disk, or in the first free slot of bus (default scsi); succeeds when the config read back holds it there and no unusedN entry lists it any more, or shows it pending until a restart (without disk hot-plug). applyPending: reboot as setConfig's"
        : "Mount an existing volume (an unusedN's) at mp as disk (default the first free mpN); succeeds when the config read back holds it there and no unusedN entry lists it any more, or shows it pending until a restart",
      kind: "action" as const,
      arguments: AttachDiskArgs,
      execute: (args: z.infer<typeof AttachDiskArgs>, ctx: MethodContext) =>
        runOnCore(model, "attachDisk", args, ctx),
    },
    detachDisk: {
      description: vm
        ? "Detach a disk (delete=<disk>); succeeds when the config read back no longer holds it and an unusedN entry holds its volume — or, with destroy (force=1), when no key holds the volume and its storage no longer lists it; removing an unusedN needs destroy: true. A removal pending until a restart is reported so"
        : "Detach a mount point (it is kept as an unusedN entry, which the read-back must show), or remove an unusedN with destroy: true (its volume must then be gone from its storage); pending until a restart is reported so",
      kind: "action" as const,
      arguments: DetachDiskArgs,
      execute: (args: z.infer<typeof DetachDiskArgs>, ctx: MethodContext) =>
        runOnCore(model, "detachDisk", args, ctx),
    },
  };
}
