/**
 * The qemu template the clone end-to-end tests clone from.
 *
 * @module
 */
import type { SimGuest } from "../../simulator/types.ts";

/** The template's smbios1 uuid: a clone must get its own. */
export const TEMPLATE_UUID = "00000000-0000-4000-8000-000000009000";

/** A template, VMID 9000 on pve1, with one disk on local-zfs; `over` replaces whole fields. */
export function qemuTemplate(over: Partial<SimGuest> = {}): SimGuest {
  return {
    vmid: 9000,
    node: "pve1",
    type: "qemu",
    name: "tmpl",
    status: "stopped",
    config: {
      template: 1,
      smbios1: `uuid=${TEMPLATE_UUID}`,
      scsi0: "local-zfs:base-9000-disk-0,size=8G",
    },
    ...over,
  };
}
