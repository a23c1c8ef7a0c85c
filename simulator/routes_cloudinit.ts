/**
 * A VM's cloud-init drive (qemu-server PVE/API2/Qemu.pm): `GET …/cloudinit` (what changed since the
 * drive was generated), `PUT …/cloudinit` (regenerate it now: `vmconfig_update_cloudinit_drive`,
 * under the config lock, refused while another lock is held; a VM without a cloud-init drive
 * answers null and nothing happens) and `GET …/cloudinit/dump?type=user|network|meta` (the config
 * generated from the VM's config, simulator/cloudinit.ts).
 *
 * @module
 */

import {
  cloudinitDrive,
  cloudinitPendingRows,
  metaData,
  networkData,
  regenerate,
  userData,
} from "./cloudinit.ts";
import { checkLock, qemuGuest, type Route } from "./context.ts";

/** The cloud-init routes. */
export const cloudinitRoutes: Route[] = [
  {
    method: "GET",
    path: "/nodes/{node}/qemu/{vmid}/cloudinit",
    privilege: "VM.Audit",
    handler: (ctx) => cloudinitPendingRows(qemuGuest(ctx)),
  },
  {
    method: "PUT",
    path: "/nodes/{node}/qemu/{vmid}/cloudinit",
    privilege: "VM.Config.Cloudinit",
    handler: (ctx) => {
      const g = qemuGuest(ctx);
      checkLock(g, false);
      // No cloud-init drive: vmconfig_update_cloudinit_drive returns without a word.
      if (cloudinitDrive(g)) regenerate(g);
      return null;
    },
  },
  {
    method: "GET",
    path: "/nodes/{node}/qemu/{vmid}/cloudinit/dump",
    privilege: "VM.Audit",
    params: {
      type: { type: "string", enum: ["user", "network", "meta"] },
    },
    handler: async (ctx) => {
      const g = qemuGuest(ctx);
      switch (ctx.params.type) {
        case "user":
          return userData(g);
        case "network":
          return networkData(g);
        default:
          return await metaData(g);
      }
    },
  },
];
