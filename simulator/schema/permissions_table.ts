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
    const onlyIf = flags.indexOf("require_param");
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
 * What the handler checks where the schema says only `user: all` (any
 * authenticated user): the Perl's own checks, in our words.
 */
const HANDLER_CHECKS: Record<string, string> = {
  "GET /cluster/resources": "lists only the guests the token may `VM.Audit`",
  "GET /nodes/{node}/qemu": "lists only the guests the token may `VM.Audit`",
  "GET /nodes/{node}/lxc": "lists only the containers the token may `VM.Audit`",
  "GET /nodes/{node}/storage":
    "lists only storages the token may `Datastore.Audit` or `Datastore.AllocateSpace`",
  "POST /nodes/{node}/lxc":
    "`VM.Allocate` on `/vms/{vmid}`, `Datastore.AllocateSpace` on the target storage, `Datastore.Audit` on the template's storage, `SDN.Use` on each bridge (pve-container create_vm); restoring (`restore=1`) over an existing container with `force`, `VM.Backup` on it suffices",
  "GET /nodes/{node}/tasks":
    "lists the token's own tasks; every user's with `Sys.Audit` on `/nodes/{node}` (the package follows only its own)",
  "POST /nodes/{node}/qemu":
    "`VM.Allocate` on `/vms/{vmid}`, `Datastore.AllocateSpace` on each disk's storage, access to each `import-from` image (`check_volume_access`: `Datastore.AllocateSpace` or `Datastore.Audit` on its storage), `SDN.Use` on each bridge, the option groups' `VM.Config.*`; restoring (`archive`): `VM.Backup` on the archive's guest and `Datastore.AllocateSpace` on its storage and on `storage`, and over an existing VM with `force`, `VM.Backup` there (qemu-server create_vm)",
  "POST /nodes/{node}/vzdump":
    "`VM.Backup` on `/vms/{vmid}` and `Datastore.AllocateSpace` on `/storage/{storage}` (pve-manager VZDump.pm vzdump)",
  "GET /nodes/{node}/vzdump/extractconfig":
    "`VM.Backup` on the archive's guest and `Datastore.AllocateSpace` on its storage (pve-manager VZDump.pm extractconfig)",
  "DELETE /nodes/{node}/storage/{storage}/content/{volume}":
    "`Datastore.Allocate` on `/storage/{storage}`, or for a backup `Datastore.AllocateSpace` there and `VM.Backup` on its guest (pve-storage Content.pm delete)",
  "GET /nodes/{node}/tasks/{upid}/status":
    "the token's own tasks; others' need `Sys.Audit` on `/nodes/{node}`",
  "GET /nodes/{node}/tasks/{upid}/log":
    "the token's own tasks; others' need `Sys.Audit` on `/nodes/{node}`",
};

/** The markdown table. */
export function permissionsTable(): string {
  const rows = packageEndpoints().sort((a, b) => {
    const [, pa] = a.split(" ");
    const [, pb] = b.split(" ");
    return pa === pb ? a.localeCompare(b) : pa.localeCompare(pb);
  }).map((endpoint) => {
    const [method, template] = endpoint.split(" ");
    const p = endpointFacts(method, template)?.permissions;
    const who = p?.check !== undefined
      ? describeCheck(p.check)
      : HANDLER_CHECKS[endpoint] ??
        (p?.user === "all" ? "any authenticated user" : "—");
    return `| \`${method} ${template}\` | ${who} |`;
  });
  return [
    "| endpoint | privileges (PVE 9 schema `permissions`) |",
    "| --- | --- |",
    ...rows,
  ]
    .join("\n") + "\n";
}

if (import.meta.main) console.log(permissionsTable());
