/**
 * `preflight` (both models) and the `permissions` check: what the token may do, asked of PVE
 * (`GET /access/permissions`) and compared by the core with the privileges each method's endpoints
 * require in PVE's schema. The decisions are the core's (src/methods/preflight.rs).
 *
 * @module
 */
import { z } from "npm:zod@4";
import {
  type CheckContext,
  checkOnCore,
  type MethodContext,
  type ModelName,
  runOnCore,
} from "./core.ts";
import { field, optionalStorageName, optionalVmid } from "./schemas.ts";

/**
 * preflight: the methods to ask about (default: all of the model's), and the values their paths are
 * made of, as those methods take them — `vmid` (for clone and create: the VMID they make),
 * `templateId` (clone's template), `storage` (where clone and create allocate).
 */
export function preflightArgs(methodNames: () => string[]) {
  return z.object({
    methods: z.array(field.string).min(
      1,
      "methods must name at least one method",
    )
      .refine(
        (list) => list.every((m) => methodNames().includes(m)),
        { message: "methods must name methods of this model" },
      ).optional(),
    vmid: optionalVmid,
    templateId: optionalVmid,
    storage: optionalStorageName,
  });
}

/** The `preflight` record (`preflight-<node>`): what was asked, and what each method lacks. */
export const PreflightRecord = z.object({
  node: field.string,
  reachable: field.boolean,
  pveVersion: field.optionalString,
  caller: z.enum(["token", "root@pam"]),
  ready: field.boolean,
  methods: z.array(z.object({
    method: field.string,
    ready: field.boolean,
    missing: field.strings,
    mayNeed: field.optionalStrings,
    notes: field.optionalStrings,
  })),
  privileges: z.record(field.string, field.strings),
  error: field.optionalString,
  lastOperation: field.string,
  recordedAt: field.string,
});

/** The record spec of `preflight`. */
export const preflightResource = {
  preflight: {
    description:
      "One preflight (instance preflight-<node>): PVE's version, and per method asked about what the token lacks",
    schema: PreflightRecord,
    lifetime: "infinite" as const,
    garbageCollection: 20,
  },
};

/**
 * The `preflight` method of `model`; `methodNames` lists the model's methods (read when arguments
 * are checked, so the model's own table is the list).
 */
export function preflightMethod(
  model: ModelName,
  methodNames: () => string[],
) {
  const PreflightArgs = preflightArgs(() =>
    methodNames().filter((m) => m !== "preflight")
  );
  return {
    preflight: {
      description:
        "Ask PVE what the token may do (GET /access/permissions on the paths the methods touch) and compare it with the privileges PVE's schema requires per method (methods, default all; vmid, templateId, storage as the methods take them); also records PVE's version and what needs root@pam or the ssh transport. Fails naming what a method lacks. Records preflight-<node>",
      kind: "action" as const,
      arguments: PreflightArgs,
      execute: (args: z.infer<typeof PreflightArgs>, ctx: MethodContext) =>
        runOnCore(model, "preflight", args, ctx),
    },
  };
}

/** What swamp gives a check besides the shared context: the method about to run, its raw args. */
interface PermissionsCheckContext extends CheckContext {
  methodName?: string;
  unresolvedMethodArgs?: Record<string, unknown>;
}

/**
 * The method's own arguments the check can use: their plain values (a `${{ … }}` expression is
 * left out, and what it names is left to the method), nested in objects such as `config`.
 */
export function plainArgs(value: unknown): unknown {
  if (typeof value === "string") {
    return value.includes("${{") ? undefined : value;
  }
  if (Array.isArray(value)) return undefined;
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(value)) {
      const plain = plainArgs(v);
      if (plain !== undefined) out[key] = plain;
    }
    return out;
  }
  return typeof value === "number" || typeof value === "boolean"
    ? value
    : undefined;
}

/**
 * The `permissions` check of `model`: before a method of `appliesTo`, the privileges PVE checks for
 * that method's requests — inside its handlers and workers too, on the node's PVE version — must be
 * held on the paths its own arguments name (a guest named by `vmName` only is left to the method).
 * When the privileges cannot be read (a proxy refusing `GET /access/permissions`), it passes with
 * one warning: PVE's own checks apply.
 */
export function permissionsCheck(model: ModelName, appliesTo: string[]) {
  return {
    description:
      "The token holds the privileges PVE checks for the method about to run, with its arguments, on the node's PVE version (GET /access/permissions); passes with a warning when they cannot be read",
    labels: ["live", "permissions"],
    appliesTo,
    execute: (ctx: PermissionsCheckContext) => {
      if (ctx.methodName === undefined) {
        return Promise.resolve({
          pass: false,
          errors: ["swamp did not say which method is about to run"],
        });
      }
      return checkOnCore(model, "permissions", {
        ...ctx,
        globalArgs: {
          ...ctx.globalArgs,
          methods: [ctx.methodName],
          methodArgs: plainArgs(ctx.unresolvedMethodArgs ?? {}),
        },
      });
    },
  };
}
