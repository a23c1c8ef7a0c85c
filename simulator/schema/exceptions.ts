/**
 * Where PVE's Perl answers other than its own `returns` schema says. The Perl
 * is what a client meets, so it wins; each exception cites the sub.
 *
 * @module
 */

import type { PropSchema } from "./prop_schema.ts";

/** A replacement for part of an endpoint's `returns`. */
interface ReturnsException {
  /** `"<METHOD> <template>"`. */
  endpoint: string;
  /** Rewrites the schema (a copy) to what the Perl sends. */
  patch(returns: PropSchema): PropSchema;
}

/** Config value types as qemu-server/pve-container's check_type leave them. */
function configNumbersAsText(returns: PropSchema): PropSchema {
  // qemu-server PVE/QemuServer.pm check_type (used by parse_vm_config; the
  // container config is parsed the same way): an integer comes back as
  // int($1) and a boolean as 1/0 — JSON numbers — but a `number` option is
  // returned as the matched text, so it reaches JSON as a string ("0.5").
  const properties: Record<string, PropSchema> = {};
  for (const [key, prop] of Object.entries(returns.properties ?? {})) {
    properties[key] = prop.type === "number"
      ? { ...prop, type: "number|string" }
      : prop;
  }
  return { ...returns, properties };
}

/** pending rows: `value`/`pending` carry the parsed config value, whatever its type. */
function pendingValuesAnyScalar(returns: PropSchema): PropSchema {
  // pve-guest-common PVE/GuestHelpers.pm config_with_pending_array copies the
  // parsed config values (numbers for integer options, see check_type), where
  // the schema says `string`.
  const item = returns.items ?? {};
  const props = { ...(item.properties ?? {}) };
  for (const key of ["value", "pending"]) {
    if (props[key]) {
      props[key] = { ...props[key], type: "string|integer|number" };
    }
  }
  return { ...returns, items: { ...item, properties: props } };
}

const EXCEPTIONS: ReturnsException[] = [
  {
    // pve-manager PVE/API2/Cluster.pm nextid: returns the id as a string
    // (`return $vmid` of the request text, or the counter stringified), where
    // the schema says integer.
    endpoint: "GET /cluster/nextid",
    patch: (returns) => ({ ...returns, type: "string" }),
  },
  {
    endpoint: "GET /nodes/{node}/qemu/{vmid}/config",
    patch: configNumbersAsText,
  },
  {
    endpoint: "GET /nodes/{node}/lxc/{vmid}/config",
    patch: configNumbersAsText,
  },
  {
    endpoint: "GET /nodes/{node}/qemu/{vmid}/pending",
    patch: pendingValuesAnyScalar,
  },
  {
    endpoint: "GET /nodes/{node}/lxc/{vmid}/pending",
    patch: pendingValuesAnyScalar,
  },
];

/** `returns` of `endpoint` as PVE's Perl actually answers. */
export function perlReturns(
  endpoint: string,
  returns: PropSchema | undefined,
): PropSchema | undefined {
  if (!returns) return returns;
  return EXCEPTIONS.filter((e) => e.endpoint === endpoint).reduce(
    (schema, e) => e.patch(schema),
    returns,
  );
}
