/**
 * PVE 9's API schema as the simulator reads it: the facts in
 * pve_api_facts.json (generated from PVE's apidata.json by generate.ts), the
 * endpoint for a method and path template, and the schema of one parameter.
 *
 * @module
 */

import facts from "./pve_api_facts.json" with { type: "json" };
import { perlReturns } from "./exceptions.ts";
import type { PropSchema } from "./prop_schema.ts";

export type { PropSchema } from "./prop_schema.ts";

/** An endpoint's facts. */
export interface EndpointFacts {
  parameters?: {
    additionalProperties?: number;
    properties?: Record<string, PropSchema>;
  };
  returns?: PropSchema;
  /** PVE's permission check expression (`["perm", "/vms/{vmid}", [privs…]]`, `{user: "all"}`…). */
  permissions?: { check?: unknown; user?: string };
  allowtoken?: number;
  protected?: number;
  proxyto?: string;
}

const ENDPOINTS = (facts as unknown as {
  endpoints: Record<string, EndpointFacts>;
}).endpoints;

/**
 * How many of an indexed option exist (`net[n]` is net0…net31): the schema
 * keeps only `[n]`, the bounds are the Perl's. qemu-server
 * PVE/QemuServer/Drive.pm ($MAX_IDE_DISKS, $MAX_SCSI_DISKS, $MAX_VIRTIO_DISKS,
 * $MAX_SATA_DISKS, $MAX_UNUSED_DISKS), PVE/QemuServer/Network.pm ($MAX_NETS);
 * pve-container PVE/LXC/Config.pm ($MAX_MOUNT_POINTS, $MAX_LXC_NETWORKS,
 * $MAX_DEVICES). Indexed options not listed here take any index (a guess).
 */
const INDEX_LIMITS: Record<string, Record<string, number>> = {
  qemu: {
    ide: 4,
    scsi: 31,
    virtio: 16,
    sata: 6,
    unused: 256,
    net: 32,
    ipconfig: 32,
  },
  lxc: { mp: 256, unused: 256, net: 32, dev: 256 },
};

/** The facts of `method template`, or undefined when PVE has no such endpoint. */
export function endpointFacts(
  method: string,
  template: string,
): EndpointFacts | undefined {
  return ENDPOINTS[`${method} ${template}`];
}

const RETURNS = new Map<string, PropSchema | undefined>();

/** What `method template` answers: its `returns`, with the Perl's cited exceptions applied. */
export function returnsOf(
  method: string,
  template: string,
): PropSchema | undefined {
  const key = `${method} ${template}`;
  if (!RETURNS.has(key)) {
    RETURNS.set(key, perlReturns(key, ENDPOINTS[key]?.returns));
  }
  return RETURNS.get(key);
}

/** Every `"<METHOD> <template>"` the facts hold. */
export function endpointKeys(): string[] {
  return Object.keys(ENDPOINTS);
}

/**
 * The schema of parameter `name` among `props`: the exact key, else the
 * indexed family (`scsi3` → `scsi[n]`) when the index is in range.
 */
export function propertyOf(
  props: Record<string, PropSchema>,
  name: string,
  template: string,
): PropSchema | undefined {
  if (Object.hasOwn(props, name)) return props[name];
  const indexed = /^([a-z][a-z_-]*?)(\d+)$/.exec(name);
  if (!indexed) return undefined;
  const [, base, digits] = indexed;
  const family = props[`${base}[n]`];
  if (!family || (digits.length > 1 && digits.startsWith("0"))) {
    return undefined;
  }
  const kind = template.includes("/lxc") ? "lxc" : "qemu";
  const limit = INDEX_LIMITS[kind][base];
  return limit === undefined || Number(digits) < limit ? family : undefined;
}
