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

/**
 * Every privilege of PVE 9 (pve-access-control `PVE/AccessControl.pm`
 * `$privgroups`, and `Permissions.Modify`, which `$valid_privs` holds outside
 * any group): the `Administrator` role holds them all.
 */
export const ALL_PRIVILEGES: readonly string[] = [
  "VM.Config.Disk",
  "VM.Config.CPU",
  "VM.Config.Memory",
  "VM.Config.Network",
  "VM.Config.HWType",
  "VM.Config.Options",
  "VM.Allocate",
  "VM.Clone",
  "VM.GuestAgent.Unrestricted",
  "VM.Migrate",
  "VM.Replicate",
  "VM.Snapshot",
  "VM.Snapshot.Rollback",
  "VM.Config.CDROM",
  "VM.Config.Cloudinit",
  "VM.Console",
  "VM.Backup",
  "VM.GuestAgent.FileRead",
  "VM.GuestAgent.FileSystemMgmt",
  "VM.GuestAgent.FileWrite",
  "VM.PowerMgmt",
  "VM.Audit",
  "VM.GuestAgent.Audit",
  "Sys.PowerMgmt",
  "Sys.Modify",
  "Sys.Incoming",
  "Sys.AccessNetwork",
  "Sys.Console",
  "Sys.Syslog",
  "Sys.Audit",
  "Datastore.Allocate",
  "Datastore.AllocateTemplate",
  "Datastore.AllocateSpace",
  "Datastore.Audit",
  "SDN.Allocate",
  "SDN.Audit",
  "SDN.Use",
  "Realm.Allocate",
  "User.Modify",
  "Group.Allocate",
  "Realm.AllocateUser",
  "Pool.Allocate",
  "Pool.Audit",
  "Mapping.Modify",
  "Mapping.Use",
  "Mapping.Audit",
  "Permissions.Modify",
];

/** ACLs: path → the privileges granted there (`*`: all of them). */
export type SimAcl = Record<string, string[]>;

/** A token's user, when no ACL is given: every privilege on `/` (the simulator's default). */
const DEFAULT_USER_ACL: SimAcl = { "/": ["*"] };

/** The privileges `acl` grants on `path`: the deepest ACL at or above it. */
function granted(acl: SimAcl, path: string): Set<string> {
  let best: string | undefined;
  for (const at of Object.keys(acl)) {
    const covers = at === "/" || path === at || path.startsWith(`${at}/`);
    if (covers && (best === undefined || at.length > best.length)) best = at;
  }
  const privs = best === undefined ? [] : acl[best];
  return new Set(privs.includes("*") ? ALL_PRIVILEGES : privs);
}

/** The VMID a `/vms/<vmid>` path names, if any. */
function vmidOf(path: string): number | undefined {
  const m = /^\/vms\/(\d+)$/.exec(path);
  return m ? Number(m[1]) : undefined;
}

/** What `token` may do on `path` (an ACL path such as `/vms/100`), as PVE's `permissions` answers. */
export function tokenPrivileges(token: SimToken, path: string): Set<string> {
  const vmid = vmidOf(path);
  if (vmid !== undefined && token.denyVmids?.includes(vmid)) return new Set();
  // pvesh over ssh runs as root@pam: the root shortcut.
  if (token.pvesh) return new Set(ALL_PRIVILEGES);
  const user = token.id.split("!")[0];
  const userPrivs = user === "root@pam"
    ? new Set(ALL_PRIVILEGES)
    : granted(token.userAcl ?? DEFAULT_USER_ACL, path);
  if (!token.privsep) return userPrivs;
  const own = granted(token.tokenAcl ?? {}, path);
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
