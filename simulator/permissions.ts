/**
 * What a token may do, as PVE computes it (pve-access-control
 * `PVE/RPCEnvironment.pm` `permissions` and `$compile_acl_path`): `root@pam`
 * holds every privilege; a token without privilege separation (`privsep: 0`)
 * holds its user's; a privilege-separated token holds its own ACLs'
 * privileges intersected with its user's (not intersected for a token of
 * root@pam, whose user check is the root shortcut). An ACL holds on its path
 * and below (the simulator's ACLs all propagate); the deepest ACL on a path
 * wins, as PVE's `roles` walks the path from `/`. A VMID in `denyVmids` has
 * no privilege at all (PVE's `NoAccess`).
 *
 * @module
 */

import type { SimToken } from "./types.ts";
import inside from "./schema/pve_inside_checks.json" with { type: "json" };

/** A PVE major version the simulator serves. */
export type PveMajor = 8 | 9;

/**
 * Every privilege of PVE `major` (pve-access-control `PVE/AccessControl.pm`
 * `$privgroups`, stable-bookworm for 8, master for 9, and `Permissions.Modify`,
 * which `$valid_privs` holds outside any group; the facts file the privilege
 * table is made from): the `Administrator` role holds them all.
 */
export function allPrivileges(major: PveMajor): readonly string[] {
  return [
    ...inside.privileges.both,
    ...inside.privileges[major],
    "Permissions.Modify",
  ];
}

/** ACLs: path → the privileges granted there (`*`: all of them). */
export type SimAcl = Record<string, string[]>;

/** A token's user, when no ACL is given: every privilege on `/` (the simulator's default). */
const DEFAULT_USER_ACL: SimAcl = { "/": ["*"] };

/** The privileges `acl` grants on `path`: the deepest ACL at or above it. */
function granted(
  acl: SimAcl,
  path: string,
  all: readonly string[],
): Set<string> {
  let best: string | undefined;
  for (const at of Object.keys(acl)) {
    const covers = at === "/" || path === at || path.startsWith(`${at}/`);
    if (covers && (best === undefined || at.length > best.length)) best = at;
  }
  const privs = best === undefined ? [] : acl[best];
  return new Set(privs.includes("*") ? all : privs);
}

/** The VMID a `/vms/<vmid>` path names, if any. */
function vmidOf(path: string): number | undefined {
  const m = /^\/vms\/(\d+)$/.exec(path);
  return m ? Number(m[1]) : undefined;
}

/**
 * What `token` may do on `path` (an ACL path such as `/vms/100`) on PVE `major`, as PVE's
 * `permissions` answers: a privilege the version does not have is never held.
 */
export function tokenPrivileges(
  token: SimToken,
  path: string,
  major: PveMajor = 9,
): Set<string> {
  const vmid = vmidOf(path);
  if (vmid !== undefined && token.denyVmids?.includes(vmid)) return new Set();
  const all = allPrivileges(major);
  // pvesh over ssh runs as root@pam: the root shortcut.
  if (token.pvesh) return new Set(all);
  const user = token.id.split("!")[0];
  const exists = (set: Set<string>) =>
    new Set([...set].filter((p) => all.includes(p)));
  const userPrivs = user === "root@pam"
    ? new Set(all)
    : exists(granted(token.userAcl ?? DEFAULT_USER_ACL, path, all));
  if (!token.privsep) return userPrivs;
  const own = exists(granted(token.tokenAcl ?? {}, path, all));
  if (user === "root@pam") return own;
  return new Set([...own].filter((p) => userPrivs.has(p)));
}

/**
 * The paths `GET /access/permissions` without `path` reports
 * (`get_effective_permissions`): the top-level ones and every ACL path.
 */
export function reportedPaths(token: SimToken): string[] {
  const paths = new Set([
    "/",
    "/access",
    "/access/groups",
    "/nodes",
    "/pool",
    "/sdn",
    "/storage",
    "/vms",
    ...Object.keys(token.userAcl ?? {}),
    ...Object.keys(token.tokenAcl ?? {}),
  ]);
  return [...paths].sort();
}
