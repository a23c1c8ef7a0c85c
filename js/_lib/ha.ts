/**
 * haResource, haStatus and haRule, both models: the guest as an HA resource (`vm:<vmid>` /
 * `ct:<vmid>`) added, updated or removed and judged by the HA manager's view, that view read, and
 * PVE 9's HA rules naming the guest. The core applies the same argument rules
 * (src/methods/ha_resource.rs, ha_status.rs, ha_rule.rs);
 * tests/properties/argument_agreement_test.ts proves they agree.
 *
 * @module
 */
import { z } from "npm:zod@4";
import { type MethodContext, type ModelName, runOnCore } from "./core.ts";
import { field, GuestArgs, guestRef, requireGuest } from "./schemas.ts";

/** pve-ha-manager PVE/HA/Resources.pm `state` (its alias `enabled` left out). */
export const HA_STATES = ["started", "stopped", "disabled", "ignored"] as const;
/**
 * An HA resource's or rule's comment as PVE keeps it (src/guest/ha.rs `comment`): one line of at
 * most 4096 bytes, no white space at either end (PVE's section config drops it on reading back).
 * Optional wherever it is taken.
 */
const optionalHaComment = field.string.check(
  z.regex(/^[^\n\r\0]+$/, "must be one line, not empty"),
  z.refine((c: string) => new TextEncoder().encode(c).length <= 4096, {
    message: "must be at most 4096 bytes",
  }),
  z.refine((c: string) => !/^[ \t\v\f]|[ \t\v\f]$/.test(c), {
    message: "must not begin or end with white space (PVE drops it)",
  }),
).optional();

const OPTIONS = ["state", "maxRestart", "maxRelocate", "failback", "comment"];
const count = field.integer.min(0).max(4294967295);

const ResourceArgs = z.object({
  ...guestRef,
  state: z.enum(HA_STATES).optional(),
  maxRestart: count.optional(),
  maxRelocate: count.optional(),
  failback: field.optionalBoolean,
  comment: optionalHaComment,
  delete: field.optionalBoolean,
}).check(
  requireGuest,
  z.refine((a) =>
    !a.delete ||
    OPTIONS.every((k) => (a as Record<string, unknown>)[k] === undefined), {
    message: "removes the HA resource: give no state or option with it",
    path: ["delete"],
  }),
);

/** pve-configid: a letter, then letters, digits, `-` or `_` (at least two characters). */
const ruleId = field.string.regex(
  /^[A-Za-z][A-Za-z0-9_-]+$/,
  "must be a letter then letters, digits, - or _",
);
/** A guest's HA resource id (pve_verify_ha_resource_id): vm:<vmid> or ct:<vmid>. */
const sid = field.string.regex(
  /^(vm|ct):[1-9][0-9]{2,8}$/,
  "must be vm:<vmid> or ct:<vmid>",
);
/** A node with an optional priority (parse_node_priority): `pve1`, `pve2:2`. */
const node = field.string.regex(
  /^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?(:[0-9]+)?$/,
  "must be a node name with an optional :priority",
);
const RULE_FIELDS = [
  "type",
  "resources",
  "nodes",
  "strict",
  "affinity",
  "comment",
  "disable",
];

const RuleArgs = z.object({
  ...guestRef,
  rule: ruleId,
  type: z.enum(["node-affinity", "resource-affinity"]).optional(),
  resources: z.array(sid).optional(),
  nodes: z.array(node).optional(),
  strict: field.optionalBoolean,
  affinity: z.enum(["positive", "negative"]).optional(),
  comment: optionalHaComment,
  disable: field.optionalBoolean,
  delete: field.optionalBoolean,
}).check(
  requireGuest,
  z.superRefine((a, ctx) => {
    const given = (k: string) =>
      (a as Record<string, unknown>)[k] !== undefined;
    const fail = (path: string, message: string) =>
      ctx.addIssue({ code: "custom", path: [path], message });
    if (a.delete) {
      const k = RULE_FIELDS.find(given);
      if (k) fail(k, "deletes the rule: give nothing else with delete");
      return;
    }
    if (!a.type) {
      return fail("type", "must be node-affinity or resource-affinity");
    }
    const nodeRule = a.type === "node-affinity";
    if (nodeRule && !(a.nodes && a.nodes.length > 0)) {
      fail("nodes", "is required for a node-affinity rule");
    } else if (!nodeRule && given("nodes")) {
      fail("nodes", "is for node-affinity rules only");
    } else if (!nodeRule && given("strict")) {
      fail("strict", "is for node-affinity rules only");
    } else if (!nodeRule && !a.affinity) {
      fail(
        "affinity",
        "must be positive or negative for a resource-affinity rule",
      );
    } else if (nodeRule && given("affinity")) {
      fail("affinity", "is for resource-affinity rules only");
    }
  }),
);

/** The HA methods of `model`. */
export function haMethods(model: ModelName) {
  return {
    haResource: {
      description:
        "Make the guest an HA resource (vm:<vmid> / ct:<vmid>) with state started|stopped|disabled|ignored (default started), maxRestart, maxRelocate, failback and comment, update the options that differ, or remove it (delete: true). Succeeds only when the HA manager's status/current shows the requested state applied (started: the service started on a node; ignored: dropped from the manager's services; removed: gone from its list) within taskTimeoutSec, and the config reads back as given; a manager that does not apply it fails saying what it showed last",
      kind: "action" as const,
      arguments: ResourceArgs,
      execute: (args: z.infer<typeof ResourceArgs>, ctx: MethodContext) =>
        runOnCore(model, "haResource", args, ctx),
    },
    haStatus: {
      description:
        "Read the guest's HA resource: its config (GET /cluster/ha/resources/{sid}) and the HA manager's view (status/current: state, crm_state, request_state, node), recorded in the guest record's `ha`; a guest that is no HA resource is recorded managed: false",
      kind: "action" as const,
      arguments: GuestArgs,
      execute: (args: z.infer<typeof GuestArgs>, ctx: MethodContext) =>
        runOnCore(model, "haStatus", args, ctx),
    },
    haRule: {
      description:
        "Create, update or delete (delete: true) an HA rule naming the guest (its vm:<vmid> / ct:<vmid> always among the resources): node-affinity (nodes ['pve1:2', 'pve2'], strict) or resource-affinity (other resources, affinity positive|negative); only what differs is sent. Succeeds when the rule reads back as declared, without PVE 9's infeasibility errors, not disabled unless asked. PVE 8 (no rules): a node-affinity rule is the HA group of its id, set as each resource's group",
      kind: "action" as const,
      arguments: RuleArgs,
      execute: (args: z.infer<typeof RuleArgs>, ctx: MethodContext) =>
        runOnCore(model, "haRule", args, ctx),
    },
  };
}
