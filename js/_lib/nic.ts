/**
 * setNic and removeNic, both models: one network interface (`netN`) set or removed, judged like a
 * setConfig change. The core applies the same argument rules (src/methods/nic.rs);
 * tests/properties/argument_agreement_test.ts proves they agree.
 *
 * @module
 */
import { z } from "npm:zod@4";
import { type MethodContext, type ModelName, runOnCore } from "./core.ts";
import { applyPending, field, guestRef, requireGuest } from "./schemas.ts";

/** qemu-server's NIC models (`PVE/QemuServer/Network.pm` `$nic_model_list`). */
const MODELS = [
  "e1000",
  "e1000-82540em",
  "e1000-82544gc",
  "e1000-82545em",
  "e1000e",
  "i82551",
  "i82557b",
  "i82559er",
  "ne2k_isa",
  "ne2k_pci",
  "pcnet",
  "rtl8139",
  "virtio",
  "vmxnet3",
] as const;

const OCTET = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";
const IPV4 = `${OCTET}(\\.${OCTET}){3}`;

/** PVE's `[-_.\w\d]+` for a bridge or an interface name (pve-common parse_bridge_id). */
const word = (name: string) =>
  field.string.regex(
    /^[-_.A-Za-z0-9]+$/,
    `${name} must be letters, digits, '-', '_' and '.'`,
  );

/** The interface both methods name: net0 … net31 (32 on both kinds). */
const nicRef = {
  ...guestRef,
  nic: field.string.regex(
    /^net([0-9]|[12][0-9]|3[01])$/,
    "nic must be net0 … net31",
  ),
  applyPending,
};

/** setNic's arguments of `model`: a VM's NIC has a model, a container's a name and an address. */
function setNicArgs(model: ModelName) {
  const common = {
    ...nicRef,
    bridge: word("bridge"),
    tag: field.integer.min(1).max(4094).optional(),
    /** Kept from the NIC it replaces when not given; PVE generates one for a new NIC. */
    macaddr: field.string.regex(
      /^[0-9A-Fa-f][02468ACEace](:[0-9A-Fa-f]{2}){5}$/,
      "macaddr must be a unicast MAC address XX:XX:XX:XX:XX:XX",
    ).optional(),
    firewall: field.optionalBoolean,
    /** MB/s. */
    rate: field.number.min(0).optional(),
  };
  /** Properties of the NIC it replaces to leave out; every other one not given is kept. */
  const clear = (names: readonly [string, ...string[]]) =>
    z.array(z.enum(names)).optional();
  // Only the model's own object is built: the other's would be built for nothing at every import.
  if (model === "qemu") {
    return z.object({
      ...common,
      model: z.enum(MODELS).optional(),
      clear: clear([
        "tag",
        "firewall",
        "rate",
        "mtu",
        "queues",
        "trunks",
        "link_down",
      ]),
    }).check(requireGuest);
  }
  return z.object({
    ...common,
    clear: clear([
      "tag",
      "firewall",
      "rate",
      "ip",
      "gw",
      "ip6",
      "gw6",
      "mtu",
      "link_down",
    ]),
    /** The interface's name in the container (PVE's `name`); kept, or eth<N> for a new one. */
    ifname: word("ifname").optional(),
    ip: field.string.regex(
      new RegExp(`^(dhcp|manual|${IPV4}/0*([89]|[12][0-9]|3[0-2]))$`),
      "ip must be dhcp, manual or an IPv4 address with a prefix of 8 to 32",
    ).optional(),
    gw: field.string.regex(
      new RegExp(`^${IPV4}$`),
      "gw must be an IPv4 address",
    )
      .optional(),
  }).check(requireGuest);
}

/** setNic and removeNic of `model`. */
export function nicMethods(model: ModelName) {
  const vm = model === "qemu";
  const SetNicArgs = setNicArgs(model);
  const RemoveNicArgs = z.object(nicRef).check(requireGuest);
  return {
    setNic: {
      description: vm
        ? "Set one NIC (nic: net0…net31) to model (default: the NIC's, or virtio), bridge, tag, firewall, rate and macaddr (default: the NIC's own; PVE generates one for a new NIC); every other property of the NIC it replaces is kept unless named in clear; succeeds when the config read back shows each as PVE stores it, or pending until a restart (a running VM takes a new NIC or a model or MAC change only with network hot-plug); the summary quotes the NIC, its MAC included. applyPending: reboot as setConfig's"
        : "Set one NIC (nic: net0…net31) to ifname (default: the NIC's, or eth<N>), bridge, tag, firewall, rate, ip, gw and macaddr (default: the NIC's own; PVE generates one for a new NIC); every other property of the NIC it replaces is kept unless named in clear; succeeds when the config read back shows each as PVE stores it (a running container takes it at once); the summary quotes the NIC, its MAC included",
      kind: "action" as const,
      arguments: SetNicArgs,
      execute: (args: z.infer<typeof SetNicArgs>, ctx: MethodContext) =>
        runOnCore(model, "setNic", args, ctx),
    },
    removeNic: {
      description:
        "Remove one NIC (nic: net0…net31, delete=netN); succeeds when the config read back no longer has it, or shows its removal pending until a restart (recorded as pendingDelete)",
      kind: "action" as const,
      arguments: RemoveNicArgs,
      execute: (args: z.infer<typeof RemoveNicArgs>, ctx: MethodContext) =>
        runOnCore(model, "removeNic", args, ctx),
    },
  };
}
