/**
 * Config values with the JSON types PVE answers them in. PVE parses a
 * guest's config file with check_type (qemu-server PVE/QemuServer.pm; the
 * container config is parsed alike): an `integer` option comes back as a
 * number, a `boolean` as 1/0, and everything else — `string` options such as
 * `agent`, `memory` or `net0`, and also `number` options such as `cpulimit` —
 * as the text of the config file, a JSON string.
 *
 * @module
 */

import type { ConfigValue } from "../types.ts";
import { endpointFacts, propertyOf } from "./facts.ts";

/** `config` as `GET /nodes/{node}/<kind>/{vmid}/config` answers it. */
export function pveConfigValues(
  kind: "qemu" | "lxc",
  config: Record<string, ConfigValue>,
): Record<string, ConfigValue> {
  const template = `/nodes/{node}/${kind}/{vmid}/config`;
  const props = endpointFacts("PUT", template)?.parameters?.properties ?? {};
  const out: Record<string, ConfigValue> = {};
  for (const [key, value] of Object.entries(config)) {
    out[key] = pveValue(propertyOf(props, key, template)?.type, value);
  }
  return out;
}

/** One row of `GET …/pending`: a key with its current value, pending value and/or deletion. */
export interface PendingRowValues {
  key: string;
  value?: ConfigValue;
  pending?: ConfigValue;
  delete?: number;
}

/**
 * The rows of `GET /nodes/{node}/<kind>/{vmid}/pending` with their values typed as a node sends
 * them: pve-guest-common `PVE/GuestHelpers.pm` `config_with_pending_array` copies each `value` and
 * `pending` from the config as the config parser typed it (qemu-server `PVE/QemuServer.pm`
 * `check_type`, the `[PENDING]` section parsed alike), so `agent` is the string `"1"`, `cores` a
 * number, `onboot` 1/0 — the same types as `GET …/config`.
 */
export function pvePendingRows<R extends PendingRowValues>(
  kind: "qemu" | "lxc",
  rows: R[],
): R[] {
  const template = `/nodes/{node}/${kind}/{vmid}/config`;
  const props = endpointFacts("PUT", template)?.parameters?.properties ?? {};
  return rows.map((row) => {
    const type = propertyOf(props, row.key, template)?.type;
    const out = { ...row };
    if (out.value !== undefined) out.value = pveValue(type, out.value);
    if (out.pending !== undefined) out.pending = pveValue(type, out.pending);
    return out;
  });
}

function pveValue(type: string | undefined, value: ConfigValue): ConfigValue {
  const text = typeof value === "boolean" ? (value ? "1" : "0") : String(value);
  switch (type) {
    case "integer":
      return /^\d+$/.test(text) ? Number(text) : value;
    case "boolean":
      return /^(1|on|yes|true)$/i.test(text) ? 1 : 0;
    default:
      return text;
  }
}
