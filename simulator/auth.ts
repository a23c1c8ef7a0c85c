/**
 * API token authentication: `Authorization: PVEAPIToken=<tokenId>=<secret>`.
 *
 * @module
 */

import type { AuthUser } from "./context.ts";
import {
  type PveMajor,
  reportedPaths,
  tokenPrivileges,
} from "./permissions.ts";
import type { SimToken } from "./types.ts";

const PREFIX = /^\s*PVEAPIToken=/;

/** The tokens the simulator accepts. */
export class TokenTable {
  readonly #tokens: readonly SimToken[];
  readonly #major: PveMajor;

  /**
   * @param tokens accepted tokens (copied)
   * @param major the PVE version served: which privileges exist
   */
  constructor(tokens: readonly SimToken[], major: PveMajor = 9) {
    this.#major = major;
    this.#tokens = tokens.map((t) => ({
      ...t,
      denyVmids: [...(t.denyVmids ?? [])],
    }));
  }

  /** The caller for an Authorization header, or undefined when missing or wrong. */
  authenticate(header: string | null): AuthUser | undefined {
    if (!header || !PREFIX.test(header)) return undefined;
    const value = header.replace(PREFIX, "").trim();
    // Token ids never contain "=", secrets may: split at the first one.
    const eq = value.indexOf("=");
    if (eq <= 0) return undefined;
    const id = value.slice(0, eq);
    const secret = value.slice(eq + 1);
    const token = this.#tokens.find((t) => t.id === id && t.secret === secret);
    if (!token) return undefined;
    return {
      tokenId: token.id,
      deny: new Set(token.denyVmids),
      authuser: token.pvesh ? "root@pam" : token.id,
      decoding: token.pvesh ? "cli" : "http",
      privilegesOn: (path) => {
        const privs = tokenPrivileges(token, path, this.#major);
        // `nodeAudit: false` withholds Sys.Audit on the nodes, whatever the ACLs grant.
        if (token.nodeAudit === false && path.startsWith("/nodes")) {
          privs.delete("Sys.Audit");
        }
        return privs;
      },
      reportedPaths: reportedPaths(token),
    };
  }
}
