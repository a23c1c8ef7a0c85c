/**
 * Builds `pve_api_facts.json`, the simulator's copy of PVE 9's API schema:
 * only facts (parameter names, types, formats, limits, `returns`, the
 * `permissions` checks), never the schema's prose, and only the endpoint
 * families the package and the simulator work with.
 *
 * Source: `<repo>/../shared/pve-api/apidata.json` (PVE's api-viewer data),
 * or `$PVE_APIDATA`. `deno run --allow-read --allow-write --allow-env
 * simulator/schema/generate.ts` rewrites the file; the test
 * tests/simulator/schema_test.ts regenerates it and compares.
 *
 * @module
 */
import { readApidata } from "./apidata.ts";

/** Endpoint families kept (a path is kept when it is one of these or lies under one). */
const KEPT_PREFIXES: readonly string[] = [
  "/version",
  "/cluster/resources",
  "/cluster/nextid",
  "/cluster/ha",
  "/access/permissions",
  // The cluster firewall switch a guest's firewall depends on, and the datacenter's aliases an IP
  // set entry may name.
  "/cluster/firewall/options",
  "/cluster/firewall/aliases",
];

/** Under `/nodes/{node}`, only these subtrees (the rest is node administration). */
const NODE_SUBTREES: readonly string[] = [
  "qemu",
  "lxc",
  "status",
  "tasks",
  "storage",
  "network",
  "disks/list",
  // nodeStatus's facts for @stateless/syscheck: the subscription status and the APT repositories.
  "subscription",
  "apt/repositories",
  "query-url-metadata",
  // vzdump (backup) and its extractconfig (what an archive holds): the backup methods.
  "vzdump",
];

/** Schema keywords that are prose or UI hints, not facts. */
const PROSE = new Set([
  "description",
  "verbose_description",
  "typetext",
  "format_description",
  "title",
  "completion",
  "print_width",
  "renderer",
]);

/** What an endpoint's facts hold. */
const INFO_FACTS = [
  "parameters",
  "returns",
  "permissions",
  "allowtoken",
  "protected",
  "proxyto",
];

interface ApiNode {
  path: string;
  info?: Record<string, Record<string, unknown>>;
  children?: ApiNode[];
}

/** The facts file beside this module. */
export const FACTS_URL = new URL("./pve_api_facts.json", import.meta.url);

function kept(path: string): boolean {
  if (path === "/nodes") return true;
  if (path === "/nodes/{node}") return false;
  if (path.startsWith("/nodes/{node}/")) {
    const rest = path.slice("/nodes/{node}/".length);
    return NODE_SUBTREES.some((s) => rest === s || rest.startsWith(s + "/"));
  }
  return KEPT_PREFIXES.some((p) => path === p || path.startsWith(p + "/"));
}

/** A schema without its prose. `properties` and hash `format`s map names to schemas. */
function schemaFacts(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(schemaFacts);
  if (typeof schema !== "object" || schema === null) return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (PROSE.has(key)) continue;
    if (
      (key === "properties" || key === "format") && typeof value === "object" &&
      value !== null && !Array.isArray(value)
    ) {
      out[key] = Object.fromEntries(
        Object.entries(value).map(([name, sub]) => [name, schemaFacts(sub)]),
      );
    } else if (typeof value === "object" && value !== null) {
      out[key] = schemaFacts(value);
    } else {
      out[key] = value;
    }
  }
  return out;
}

/** `"<METHOD> <path>"` → that endpoint's facts, sorted by key for a stable file. */
export function extractFacts(tree: ApiNode[]): Record<string, unknown> {
  const facts: Record<string, unknown> = {};
  const walk = (nodes: ApiNode[]) => {
    for (const node of nodes) {
      if (kept(node.path)) {
        for (const [method, info] of Object.entries(node.info ?? {})) {
          const entry: Record<string, unknown> = {};
          for (const key of INFO_FACTS) {
            if (info[key] !== undefined) entry[key] = schemaFacts(info[key]);
          }
          facts[`${method} ${node.path}`] = entry;
        }
      }
      walk(node.children ?? []);
    }
  };
  walk(tree);
  return Object.fromEntries(
    Object.keys(facts).sort().map((k) => [k, facts[k]]),
  );
}

/** The facts file's exact text for `tree`. */
export function factsText(tree: ApiNode[]): string {
  return JSON.stringify(
    {
      source:
        "Proxmox VE 9.1.3 API schema (pve-docs api-viewer apidata), facts only",
      endpoints: extractFacts(tree),
    },
    null,
    1,
  ) + "\n";
}

if (import.meta.main) {
  const tree = await readApidata<ApiNode[]>();
  await Deno.writeTextFile(FACTS_URL, factsText(tree));
  console.log(`wrote ${FACTS_URL.pathname}`);
}
