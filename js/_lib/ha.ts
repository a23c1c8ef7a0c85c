/**
 * haResource and haStatus, both models: the guest as an HA resource (`vm:<vmid>` / `ct:<vmid>`)
 * added, updated or removed and judged by the HA manager's view, and that view read. The core
 * applies the same argument rules (src/methods/ha_resource.rs, ha_status.rs);
 * tests/properties/argument_agreement_test.ts proves they agree.
 *
 * @module
 */
import { z } from "npm:zod@4";
import { type MethodContext, type ModelName, runOnCore } from "./core.ts";
import { guestRef, provideGuest, requireGuest } from "./schemas.ts";

/** pve-ha-manager PVE/HA/Resources.pm `state` (its alias `enabled` left out). */
export const HA_STATES = ["started", "stopped", "disabled", "ignored"] as const;
const OPTIONS = ["state", "maxRestart", "maxRelocate", "failback", "comment"];
const count = z.number().int().min(0).max(4294967295);

const ResourceArgs = z.object({
  ...guestRef,
  state: z.enum(HA_STATES).optional(),
  maxRestart: count.optional(),
  maxRelocate: count.optional(),
  failback: z.boolean().optional(),
  comment: z.string().regex(/^[^\n\r\0]+$/, "must be one line, not empty")
    .refine((c) => new TextEncoder().encode(c).length <= 4096, {
      message: "must be at most 4096 bytes",
    }).optional(),
  delete: z.boolean().optional(),
}).refine(requireGuest, provideGuest)
  .refine(
    (a) =>
      !a.delete ||
      OPTIONS.every((k) => (a as Record<string, unknown>)[k] === undefined),
    {
      message: "removes the HA resource: give no state or option with it",
      path: ["delete"],
    },
  );

const StatusArgs = z.object({ ...guestRef }).refine(
  requireGuest,
  provideGuest,
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
      arguments: StatusArgs,
      execute: (args: z.infer<typeof StatusArgs>, ctx: MethodContext) =>
        runOnCore(model, "haStatus", args, ctx),
    },
  };
}
