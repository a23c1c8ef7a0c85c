/**
 * `GET /access/permissions`: what the caller may do, as pve-access-control
 * `PVE/API2/AccessControl.pm` `permissions` answers it — with `path`, `{<path>:
 * {<privilege>: <propagate>}}` for that path (`{}` when none); without it, the
 * same for every path `get_effective_permissions` reports, leaving out paths
 * with no privilege. The privileges are computed as `permissions.ts` says
 * (a privilege-separated token: its own ACLs intersected with its user's).
 *
 * @module
 */

import type { Route } from "./context.ts";
import { ApiError } from "./http.ts";

/** `{privilege: 1}` for each privilege held (the simulator's ACLs all propagate). */
function asMap(privs: ReadonlySet<string>): Record<string, number> {
  return Object.fromEntries([...privs].sort().map((p) => [p, 1]));
}

/** The access routes. */
export const accessRoutes: Route[] = [
  {
    method: "GET",
    path: "/access/permissions",
    params: {
      userid: { type: "string", optional: true },
      path: { type: "string", optional: true },
    },
    handler: (ctx) => {
      const userid = ctx.params.userid as string | undefined;
      if (userid !== undefined && userid !== ctx.user.tokenId) {
        // Another user's (or token's) permissions need Sys.Audit on /access; the simulator keeps
        // only the caller's ACLs, so it answers for the caller alone.
        if (!ctx.user.privilegesOn("/access").has("Sys.Audit")) {
          throw new ApiError(
            403,
            "Permission check failed (/access, Sys.Audit)",
          );
        }
        throw new ApiError(
          501,
          "the simulator answers GET /access/permissions for the calling token only",
        );
      }
      const path = ctx.params.path as string | undefined;
      if (path !== undefined) {
        const privs = ctx.user.privilegesOn(path);
        return privs.size > 0 ? { [path]: asMap(privs) } : {};
      }
      const out: Record<string, Record<string, number>> = {};
      for (const at of ctx.user.reportedPaths) {
        const privs = ctx.user.privilegesOn(at);
        if (privs.size > 0) out[at] = asMap(privs);
      }
      return out;
    },
  },
];
