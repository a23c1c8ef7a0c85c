/**
 * The README's table of the endpoints the package uses, with the privileges
 * PVE 9's schema names for each (`permissions.check`), so an operator can
 * build a token. `deno run --allow-read simulator/schema/permissions_table.ts`
 * prints it; tests/simulator/schema_test.ts checks the README holds exactly it.
 *
 * @module
 */

import { endpointFacts } from "./facts.ts";
import { packageEndpoints } from "./report.ts";

/** PVE's check expression in words: `perm /vms/{vmid} VM.Audit`, `any`/`and`/`or` lists. */
export function describeCheck(check: unknown): string {
  if (!Array.isArray(check)) return "—";
  const [op, ...rest] = check;
  if (op === "perm") {
    const [path, privs, ...flags] = rest as [string, string[], ...unknown[]];
    const any = flags.includes("any");
    const list = privs.map((p) => `\`${p}\``).join(any ? " or " : " and ");
    // PVE's `require_param` (the check fails without the argument: used in an `or`), or the
    // handlers' `when_param` of HANDLER_CHECKS (the check applies only with the argument).
    const onlyIf = Math.max(
      flags.indexOf("require_param"),
      flags.indexOf("when_param"),
    );
    const cond = onlyIf >= 0 ? ` (when \`${flags[onlyIf + 1]}\` is given)` : "";
    return `${list} on \`${path}\`${cond}`;
  }
  if (op === "and" || op === "or") {
    return rest.map(describeCheck).join(op === "and" ? "; and " : "; or ");
  }
  if (op === "userid-param" || op === "userid-group") {
    return `${op} ${JSON.stringify(rest)}`;
  }
  return JSON.stringify(check);
}

/**
 * What the handler checks beyond the schema's `permissions` — in PVE's own
 * check syntax (`check`, combined with the schema's by `and`), plus one option
 * of ours, `when_param`: the check applies only when that argument is given
 * (PVE's `require_param` instead fails without it) — with a `note` for what
 * the syntax cannot say — and what a listing shows where the schema says only
 * `user: all` (any authenticated user). The README's table and the core's
 * table (`src/pve/privileges.rs`, {@link privilegesRust}) are both made from
 * this and the schema, so they cannot disagree.
 */
const HANDLER_CHECKS: Record<
  string,
  { check?: unknown; note?: string; listing?: string }
> = {
  "GET /cluster/resources": {
    listing: "lists only the guests the token may `VM.Audit`",
  },
  "GET /nodes/{node}/qemu": {
    listing: "lists only the guests the token may `VM.Audit`",
  },
  "GET /nodes/{node}/lxc": {
    listing: "lists only the containers the token may `VM.Audit`",
  },
  "GET /nodes/{node}/storage": {
    listing:
      "lists only storages the token may `Datastore.Audit` or `Datastore.AllocateSpace`",
  },
  // pve-container PVE/API2/LXC.pm create_vm: VM.Allocate on the VMID (or its pool), then
  // Datastore.AllocateSpace on each volume's storage.
  "POST /nodes/{node}/lxc": {
    check: [
      "and",
      ["perm", "/vms/{vmid}", ["VM.Allocate"]],
      ["perm", "/storage/{storage}", ["Datastore.AllocateSpace"]],
    ],
    note:
      "`Datastore.Audit` on the template's storage, `SDN.Use` on each bridge (pve-container create_vm); restoring (`restore=1`) over an existing container with `force`, `VM.Backup` on it suffices",
  },
  // qemu-server PVE/API2/Qemu.pm clone_vm → $check_storage_access_clone.
  "POST /nodes/{node}/qemu/{vmid}/clone": {
    check: [
      "perm",
      "/storage/{storage}",
      ["Datastore.AllocateSpace"],
      "when_param",
      "storage",
    ],
    note:
      "without `storage`, `Datastore.AllocateSpace` on each disk's storage (qemu-server clone_vm)",
  },
  "GET /nodes/{node}/tasks": {
    listing:
      "lists the token's own tasks; every user's with `Sys.Audit` on `/nodes/{node}` (the package follows only its own)",
  },
  "POST /nodes/{node}/qemu": {
    note:
      "`VM.Allocate` on `/vms/{vmid}`, `Datastore.AllocateSpace` on each disk's storage, access to each `import-from` image (`check_volume_access`: `Datastore.AllocateSpace` or `Datastore.Audit` on its storage), `SDN.Use` on each bridge, the option groups' `VM.Config.*`; restoring (`archive`): `VM.Backup` on the archive's guest and `Datastore.AllocateSpace` on its storage and on `storage`, and over an existing VM with `force`, `VM.Backup` there (qemu-server create_vm)",
  },
  "POST /nodes/{node}/vzdump": {
    note:
      "`VM.Backup` on `/vms/{vmid}` and `Datastore.AllocateSpace` on `/storage/{storage}` (pve-manager VZDump.pm vzdump)",
  },
  "GET /nodes/{node}/vzdump/extractconfig": {
    note:
      "`VM.Backup` on the archive's guest and `Datastore.AllocateSpace` on its storage (pve-manager VZDump.pm extractconfig)",
  },
  "DELETE /nodes/{node}/storage/{storage}/content/{volume}": {
    note:
      "`Datastore.Allocate` on `/storage/{storage}`, or for a backup `Datastore.AllocateSpace` there and `VM.Backup` on its guest (pve-storage Content.pm delete)",
  },
  // pve-manager PVE/API2/Subscription.pm get: any user reads the status; the key and the server id
  // only with Sys.Audit.
  "GET /nodes/{node}/subscription": {
    note:
      "any authenticated user (the key and server id only with `Sys.Audit` on `/nodes/{node}`; the package records neither)",
  },
  "GET /nodes/{node}/tasks/{upid}/status": {
    note: "the token's own tasks; others' need `Sys.Audit` on `/nodes/{node}`",
  },
  "GET /nodes/{node}/tasks/{upid}/log": {
    note: "the token's own tasks; others' need `Sys.Audit` on `/nodes/{node}`",
  },
};

/** What an endpoint requires: PVE's check expression (schema and handler), a listing, or anyone. */
export interface EndpointRequirement {
  endpoint: string;
  /** PVE's check expression; undefined when any authenticated user may call it. */
  check?: unknown;
  /** What a listing endpoint filters by (no privilege is required to call it). */
  listing?: string;
  note?: string;
}

/** The requirement of one endpoint, from the schema and {@link HANDLER_CHECKS}. */
export function requirementOf(endpoint: string): EndpointRequirement {
  const [method, template] = endpoint.split(" ");
  const schema = endpointFacts(method, template)?.permissions?.check;
  const handler = HANDLER_CHECKS[endpoint] ?? {};
  const check = schema !== undefined && handler.check !== undefined
    ? ["and", schema, handler.check]
    : schema ?? handler.check;
  return { endpoint, check, listing: handler.listing, note: handler.note };
}

/** The endpoints the package uses, sorted by path then method. */
function sortedEndpoints(): string[] {
  return packageEndpoints().sort((a, b) => {
    const [, pa] = a.split(" ");
    const [, pb] = b.split(" ");
    return pa === pb ? a.localeCompare(b) : pa.localeCompare(pb);
  });
}

/** The markdown table. */
export function permissionsTable(): string {
  const rows = sortedEndpoints().map((endpoint) => {
    const r = requirementOf(endpoint);
    const words = r.listing ??
      [r.check === undefined ? undefined : describeCheck(r.check), r.note]
        .filter((w) => w !== undefined).join("; ");
    const who = words || "any authenticated user";
    return `| \`${endpoint}\` | ${who} |`;
  });
  return [
    "| endpoint | privileges (PVE 9 schema `permissions`) |",
    "| --- | --- |",
    ...rows,
  ]
    .join("\n") + "\n";
}

/**
 * `src/pve/privileges.rs`: the same requirements for the core's `preflight`
 * (each check as PVE's JSON expression). `deno run --allow-read --allow-write
 * simulator/schema/permissions_table.ts --rust` rewrites it; a test
 * regenerates and compares.
 */
export function privilegesRust(): string {
  const rows = sortedEndpoints().map((endpoint) => {
    const r = requirementOf(endpoint);
    const kind = r.check !== undefined
      ? "Requirement::Check"
      : r.listing !== undefined
      ? "Requirement::Listing"
      : "Requirement::Anyone";
    const check = r.check === undefined ? "" : JSON.stringify(r.check);
    return `    (${JSON.stringify(endpoint)}, ${kind}, r#"${check}"#),`;
  });
  return [
    "//! GENERATED by simulator/schema/permissions_table.ts (`--rust`) from PVE's API schema",
    "//! (`permissions` of apidata.json) and the handlers' own checks it lists: do not edit. The",
    "//! README's endpoint table is made from the same facts.",
    "",
    "/// What calling an endpoint requires.",
    "#[derive(Debug, Clone, Copy, PartialEq, Eq)]",
    "pub enum Requirement {",
    '    /// PVE\'s check expression (the third field, as JSON: `["perm", path, [privs], …]`).',
    "    Check,",
    "    /// A listing: any token may call it; it shows only what the token may audit.",
    "    Listing,",
    "    /// Any authenticated user.",
    "    Anyone,",
    "}",
    "",
    '/// Every endpoint the package uses: `"<METHOD> <path template>"`, its requirement, the check.',
    "#[rustfmt::skip]",
    "pub const ENDPOINTS: &[(&str, Requirement, &str)] = &[",
    ...rows,
    "];",
    "",
  ].join("\n");
}

/** Where the core's table lives. */
export const PRIVILEGES_RS = new URL(
  "../../src/pve/privileges.rs",
  import.meta.url,
);

if (import.meta.main) {
  if (Deno.args.includes("--rust")) {
    await Deno.writeTextFile(PRIVILEGES_RS, privilegesRust());
    console.log(`wrote ${PRIVILEGES_RS.pathname}`);
  } else console.log(permissionsTable());
}
