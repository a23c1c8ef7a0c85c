/**
 * Cluster-wide reads: version, node list, `/cluster/resources`, `/cluster/nextid`,
 * and a node's qemu list. Lists silently leave out guests the token may not
 * audit, as PVE does.
 *
 * @module
 */

import type { Ctx, Route } from "./context.ts";
import { paramError } from "./http.ts";
import { VMID_SPEC } from "./params.ts";
import { listEntry, nodeResource, resourceEntry } from "./views.ts";
import type { GuestState } from "./types.ts";

/** Guests the caller may see (PVE filters lists by VM.Audit). */
function visible(ctx: Ctx): GuestState[] {
  return ctx.core.state.all().filter((g) => !ctx.user.deny.has(g.vmid));
}

/** The cluster-level routes. */
export const clusterRoutes: Route[] = [
  {
    method: "GET",
    path: "/version",
    // pve-manager PVE/API2.pm version; 8.4.14 is the last PVE 8 release's pve-manager.
    handler: (ctx) =>
      ctx.core.major === 8
        ? { version: "8.4.14", release: "8.4", repoid: "b502d23c55afcba1" }
        : { version: "9.0.3", release: "9.0", repoid: "025864202ebb6109" },
  },
  {
    method: "GET",
    path: "/nodes",
    handler: (ctx) =>
      ctx.core.state.nodes.map((node) => ({
        node,
        status: "online",
        type: "node",
        id: `node/${node}`,
      })),
  },
  {
    method: "GET",
    path: "/cluster/resources",
    params: {
      type: {
        type: "string",
        optional: true,
        enum: ["vm", "storage", "node", "sdn"],
      },
    },
    handler: (ctx) => {
      const type = ctx.params.type as string | undefined;
      const out: Record<string, unknown>[] = [];
      if (type === undefined || type === "node") {
        out.push(...ctx.core.state.nodes.map(nodeResource));
      }
      if (type === undefined || type === "vm") {
        out.push(
          ...visible(ctx).map((g) =>
            resourceEntry(g, ctx.core.broadcast.statsOf(g.vmid))
          ),
        );
      }
      return out;
    },
  },
  {
    method: "GET",
    path: "/cluster/nextid",
    params: { vmid: { ...VMID_SPEC, optional: true } },
    handler: (ctx) => {
      const state = ctx.core.state;
      const wanted = ctx.params.vmid as number | undefined;
      if (wanted !== undefined) {
        // Answered for any user, whatever it may see: the id space is cluster-wide.
        if (state.isTaken(wanted)) {
          throw paramError({ vmid: `VM ${wanted} already exists` });
        }
        return String(wanted);
      }
      let id = 100;
      while (state.isTaken(id)) id++;
      return String(id);
    },
  },
  {
    method: "GET",
    path: "/nodes/{node}/qemu",
    params: { full: { type: "boolean", optional: true } },
    handler: (ctx) =>
      visible(ctx)
        .filter((g) => g.type === "qemu" && g.node === ctx.params.node)
        .map((g) => listEntry(g, ctx.params.full === true)),
  },
];
