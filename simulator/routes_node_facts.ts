/**
 * What a node says of its support: `GET /nodes/{node}/subscription` and
 * `GET /nodes/{node}/apt/repositories`, the two reads behind nodeStatus's
 * `subscriptionActive` and `enterpriseRepo`. Each node's facts come from
 * SimOptions `nodeFacts` (default: a fresh install — no subscription key, the
 * enterprise repository configured and enabled, as PVE 9's installer leaves it).
 *
 * Sources: pve-manager `PVE/API2/Subscription.pm` get (any user may call it; the
 * key, the server id and the socket count only for a caller with `Sys.Audit` on
 * the node; without a key: status `notfound`, "There is no subscription key")
 * and `PVE/API2/APT.pm` repositories (`Sys.Audit` on the node; `standard-repos`
 * lists every standard repository of the product, with `status` only when it is
 * configured: true enabled, false disabled). The standard handles are
 * proxmox-apt's (`enterprise`, `no-subscription`, `test`, and Ceph's).
 *
 * @module
 */

import type { Ctx, Route } from "./context.ts";
import { ApiError } from "./http.ts";
import type { SimNodeFacts } from "./node_types.ts";

const SHOP = "https://www.proxmox.com/en/proxmox-virtual-environment/pricing";

/** The facts of `node` (the defaults where the test gave none). */
export function nodeFactsOf(
  facts: Record<string, SimNodeFacts> | undefined,
  node: string,
): Required<SimNodeFacts> {
  return {
    subscription: "notfound",
    enterpriseRepo: "enabled",
    ...facts?.[node],
  };
}

function audits(ctx: Ctx, node: string): boolean {
  return ctx.user.privilegesOn(`/nodes/${node}`).has("Sys.Audit");
}

/** The subscription read as Subscription.pm's get answers it. */
function subscription(ctx: Ctx): Record<string, unknown> {
  const node = ctx.params.node as string;
  const { subscription: status } = nodeFactsOf(ctx.core.nodeFacts, node);
  const serverid = `${node.toUpperCase().padEnd(8, "0")}F00DCAFE`.slice(0, 32);
  if (status === "notfound") {
    const answer: Record<string, unknown> = {
      status,
      message: "There is no subscription key",
      url: SHOP,
    };
    if (audits(ctx, node)) answer.serverid = serverid;
    return answer;
  }
  const message = status === "active" ? undefined : `subscription ${status}`;
  if (!audits(ctx, node)) return { status, message, url: SHOP };
  return {
    status,
    message,
    key: "pve2c-0123456789",
    serverid,
    level: "c",
    productname: "Proxmox VE Community Subscription 2 CPUs/year",
    regdate: "2026-01-05 00:00:00",
    nextduedate: "2027-01-05",
    checktime: 1767571200,
    sockets: 1,
    url: SHOP,
  };
}

/** The repository read as APT.pm's repositories answers it (the parts the package reads). */
function repositories(ctx: Ctx): Record<string, unknown> {
  const node = ctx.params.node as string;
  if (!audits(ctx, node)) {
    throw new ApiError(
      403,
      `Permission check failed (/nodes/${node}, Sys.Audit)`,
    );
  }
  const { enterpriseRepo } = nodeFactsOf(ctx.core.nodeFacts, node);
  const path = "/etc/apt/sources.list.d/pve-enterprise.sources";
  const files = enterpriseRepo === "absent" ? [] : [{
    path,
    "file-type": "sources",
    repositories: [{
      Types: ["deb"],
      URIs: ["https://enterprise.proxmox.com/debian/pve"],
      Suites: ["trixie"],
      Components: ["pve-enterprise"],
      FileType: "sources",
      Enabled: enterpriseRepo === "enabled",
    }],
    digest: [1, 2, 3],
  }];
  const standard = (handle: string, name: string, status?: boolean) =>
    status === undefined ? { handle, name } : { handle, name, status };
  return {
    files,
    errors: [],
    digest: "0f1e2d3c4b5a69788796a5b4c3d2e1f0",
    infos: [],
    "standard-repos": [
      standard(
        "enterprise",
        "Enterprise",
        enterpriseRepo === "absent" ? undefined : enterpriseRepo === "enabled",
      ),
      standard("no-subscription", "No-Subscription"),
      standard("test", "Test"),
    ],
  };
}

/** The subscription and repository routes. */
export const nodeFactRoutes: Route[] = [
  { method: "GET", path: "/nodes/{node}/subscription", handler: subscription },
  {
    method: "GET",
    path: "/nodes/{node}/apt/repositories",
    handler: repositories,
  },
];
