/**
 * The fault matrix's preflight row, one builder for both models: what the token may do for one
 * method (`lookup` of a guest), asked of the node (`GET /version`, then `GET /access/permissions` on
 * the guest's path), with the oracles that decide whether the `preflight-<node>` record told the
 * truth.
 *
 * @module
 */
import {
  type GuestType,
  lastWrite,
  READ_LOCK_FREE,
  type RowSpec,
  writesOnly,
} from "./methods.ts";

/** The preflight row of one model, asking about `lookup` of `vmid` (the transport's node is pve1). */
export function preflightSpec(type: GuestType, vmid: number): RowSpec {
  return {
    name: "preflight",
    args: { methods: ["lookup"], vmid },
    endpoints: [
      {
        id: "GET /version (preflight)",
        method: "GET",
        path: "^/api2/json/version$",
        sample: "/version",
        kind: "read",
        pve500: "Service Unavailable: pveproxy is restarting",
        privilege: "/, Sys.Audit",
      },
      {
        id: "GET /access/permissions",
        method: "GET",
        path: "^/api2/json/access/permissions$",
        sample: `/access/permissions?path=/vms/${vmid}`,
        kind: "read",
        pve500: "cluster not ready - no quorum?",
        privilege: "/access, Sys.Audit",
      },
    ],
    names: /node pve1/,
    task: false,
    lockFree: READ_LOCK_FREE,
    effect: (_env, r) => {
      const rec = lastWrite(r, "preflight-pve1");
      return rec?.ready === true && rec.reachable === true
        ? []
        : [`no ready preflight-pve1 record (${type})`];
    },
    truth: (_env, r) => {
      const problems = writesOnly(r, /^preflight-pve1$/);
      const rec = lastWrite(r, "preflight-pve1");
      if (rec && r.status === "failed" && rec.ready === true) {
        problems.push("failed but the record says ready");
      }
      if (rec && r.status === "succeeded" && rec.ready !== true) {
        problems.push("succeeded but the record does not say ready");
      }
      return problems;
    },
  };
}
