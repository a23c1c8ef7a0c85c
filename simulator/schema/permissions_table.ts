/**
 * The privileges PVE checks for every endpoint the package uses, on PVE 9 and
 * PVE 8: the API schema's `permissions` (PVE 9's apidata.json) and what the
 * handlers and their workers check inside, with PVE 8's differences — the facts
 * of pve_inside_checks.json, read from PVE's Perl. Two products are made from
 * them, so they cannot disagree: docs/pve.md's endpoint table
 * (`deno run --allow-read simulator/schema/permissions_table.ts`; a test keeps
 * the page equal to it) and the core's table `src/pve/privileges.rs`
 * (`--rust`; a test regenerates and compares).
 *
 * @module
 */

import { endpointFacts } from "./facts.ts";
import { packageEndpoints } from "./report.ts";
import inside from "./pve_inside_checks.json" with { type: "json" };

/** A PVE major version the table knows. */
export type Major = 8 | 9;

/** One endpoint's facts beyond the schema (pve_inside_checks.json `endpoints`). */
interface InsideFacts {
  /** The handler: repository, file and sub. */
  at: string;
  /** PVE 8's schema check where it differs from PVE 9's; `null`: PVE 8 has no such endpoint. */
  pve8?: unknown;
  /** The checks inside the handler and its workers, each with where PVE makes it. */
  inside?: { check: unknown; at: string }[];
  /** What a listing shows, where the schema says only `user: all`. */
  listing?: string;
  /** What else the audit found (checks on parameters the package never sends, what is filtered). */
  found?: string;
}

const FACTS = inside as unknown as {
  privileges: Record<"both" | "8" | "9", string[]>;
  options: Record<
    string,
    { at: string; classes: [string, string][]; found?: string }
  >;
  endpoints: Record<string, InsideFacts>;
};

/** The privileges PVE `major` has (pve-access-control `$privgroups`). */
export function privilegesOf(major: Major): Set<string> {
  return new Set([...FACTS.privileges.both, ...FACTS.privileges[major]]);
}

/** The inside facts of `endpoint`; every endpoint the package uses has them (it was audited). */
export function insideFacts(endpoint: string): InsideFacts | undefined {
  return FACTS.endpoints[endpoint];
}

/** The config option classes of `table` (`qemu`, `lxc`): `[privileges, keys]`. */
export function optionClasses(table: string): [string, string][] {
  return FACTS.options[table]?.classes ?? [];
}

/** `check` as it applies on `major`: `["pve", v, c]` kept (unwrapped) only for `v`. */
export function forMajor(check: unknown, major: Major): unknown {
  if (!Array.isArray(check)) return check;
  const [op, ...rest] = check;
  if (op === "pve") {
    return rest[0] === major ? forMajor(rest[1], major) : undefined;
  }
  if (op === "when") {
    const inner = forMajor(rest[1], major);
    return inner === undefined ? undefined : ["when", rest[0], inner];
  }
  if (op === "and" || op === "or") {
    const parts = rest.map((c) => forMajor(c, major)).filter((c) =>
      c !== undefined
    );
    return parts.length === 0
      ? undefined
      : parts.length === 1
      ? parts[0]
      : [op, ...parts];
  }
  return check;
}

/** A condition in words: `p` given, `p=v`, `!p` not given. */
function condition(cond: string): string {
  if (cond.startsWith("!")) return `without \`${cond.slice(1)}\``;
  return `with \`${cond}\``;
}

/** PVE's check expression in words: `` `VM.Audit` on `/vms/{vmid}` ``, `and`/`or` lists. */
export function describeCheck(check: unknown): string {
  if (!Array.isArray(check)) return "—";
  const [op, ...rest] = check;
  if (op === "perm") {
    const [path, privs, ...flags] = rest as [string, string[], ...unknown[]];
    const any = flags.includes("any");
    const list = privs.map((p) => `\`${p}\``).join(any ? " or " : " and ");
    const needs = flags.indexOf("require_param");
    const cond = needs >= 0 ? ` (${condition(String(flags[needs + 1]))})` : "";
    return `${list} on \`${path}\`${cond}`;
  }
  if (op === "and" || op === "or") {
    return rest.map(describeCheck).join(op === "and" ? "; and " : "; or ");
  }
  if (op === "when") return `${condition(rest[0])}: ${describeCheck(rest[1])}`;
  if (op === "pve") return `PVE ${rest[0]}: ${describeCheck(rest[1])}`;
  if (op === "options") {
    return `each config option's privilege on \`${rest[0]}\` (${
      rest[1]
    } options, below)`;
  }
  return JSON.stringify(check);
}

/** What an endpoint requires on one PVE major version. */
export interface EndpointRequirement {
  endpoint: string;
  /** PVE's check expression; undefined when any authenticated user may call it. */
  check?: unknown;
  /** What a listing endpoint filters by (no privilege is required to call it). */
  listing?: string;
  /** PVE `major` has no such endpoint. */
  absent?: boolean;
}

/** The schema's check of `endpoint` on `major` (PVE 8's from the facts where it differs). */
function schemaCheck(endpoint: string, major: Major): unknown {
  const [method, template] = endpoint.split(" ");
  const nine = endpointFacts(method, template)?.permissions?.check;
  const facts = insideFacts(endpoint);
  return major === 8 && facts && "pve8" in facts ? facts.pve8 : nine;
}

/** The schema's check and the inside checks together, for both versions (`pve` where they differ). */
export function combinedCheck(endpoint: string): unknown {
  const nine = schemaCheck(endpoint, 9);
  const eight = schemaCheck(endpoint, 8);
  const base = JSON.stringify(nine) === JSON.stringify(eight)
    ? nine
    : ["and", ["pve", 9, nine], ...(eight === null ? [] : [["pve", 8, eight]])];
  const parts = [
    base,
    ...(insideFacts(endpoint)?.inside ?? []).map((i) => i.check),
  ].filter((c) => c !== undefined);
  return parts.length === 0
    ? undefined
    : parts.length === 1
    ? parts[0]
    : ["and", ...parts];
}

/** The requirement of `endpoint` on PVE `major`. */
export function requirementOf(
  endpoint: string,
  major: Major = 9,
): EndpointRequirement {
  const facts = insideFacts(endpoint);
  if (major === 8 && facts?.pve8 === null) return { endpoint, absent: true };
  return {
    endpoint,
    check: forMajor(combinedCheck(endpoint), major),
    listing: facts?.listing,
  };
}

/** The endpoints the package uses, sorted by path then method. */
export function sortedEndpoints(): string[] {
  return packageEndpoints().sort((a, b) => {
    const [, pa] = a.split(" ");
    const [, pb] = b.split(" ");
    return pa === pb ? a.localeCompare(b) : pa.localeCompare(pb);
  });
}

/** A requirement in words, one part per check (each inside one with where PVE makes it). */
function words(endpoint: string, major: Major): string[] {
  const r = requirementOf(endpoint, major);
  if (r.absent) return ["no such endpoint"];
  if (r.listing) return [r.listing];
  const schema = forMajor(schemaCheck(endpoint, major), major);
  const parts = schema === undefined ? [] : [describeCheck(schema)];
  for (const i of insideFacts(endpoint)?.inside ?? []) {
    const check = forMajor(i.check, major);
    if (check !== undefined) parts.push(`${describeCheck(check)} [${i.at}]`);
  }
  return parts.length > 0 ? parts : ["any authenticated user"];
}

/** PVE 8's cell: `as PVE 9`, `as PVE 9, without …` where it checks less, or its own words. */
function eightWords(nine: string[], eight: string[]): string {
  const more = nine.filter((w) => !eight.includes(w));
  if (!eight.every((w) => nine.includes(w))) return eight.join("; ");
  return more.length === 0
    ? "as PVE 9"
    : `as PVE 9, without ${more.join("; ")}`;
}

/** The markdown tables: per endpoint PVE 9, PVE 8 and PVE's source; then the option classes. */
export function permissionsTable(): string {
  const rows = sortedEndpoints().map((endpoint) => {
    const facts = insideFacts(endpoint);
    const nine = words(endpoint, 9);
    const found = facts?.found && facts.found !== "no check inside"
      ? `. Also: ${facts.found}`
      : "";
    return `| \`${endpoint}\` | ${nine.join("; ")}${found} | ${
      eightWords(nine, words(endpoint, 8))
    } | ${facts?.at ?? "—"} |`;
  });
  const options = Object.entries(FACTS.options).flatMap(([table, o]) =>
    o.classes.map(([privs, keys], i) => {
      const source = i === 0
        ? o.at
        : i === o.classes.length - 1 && o.found
        ? `Also: ${o.found}`
        : "";
      return `| ${table} | ${
        privs ? privilegeWords(privs) : "none (not checked)"
      } | ${
        keys === "*"
          ? "every other key"
          : keys.split(" ").map((k) => `\`${k.replace("#", "N")}\``).join(", ")
      } | ${source} |`;
    })
  );
  return [
    "| endpoint | privileges (PVE 9) | PVE 8 | PVE's source |",
    "| --- | --- | --- | --- |",
    ...rows,
    "",
    "| options | privileges on the guest | config options | PVE's source |",
    "| --- | --- | --- | --- |",
    ...options,
  ].join("\n") + "\n";
}

/** An option class's privileges (`A|B` any, `A&B` all, `/:A` on `/`) in words. */
function privilegeWords(privs: string): string {
  const [path, list] = privs.includes(":")
    ? privs.split(":")
    : [undefined, privs];
  const any = list.includes("|");
  const names = list.split(/[|&]/).map((p) => `\`${p}\``);
  const on = path ? ` on \`${path}\`` : "";
  return names.join(any ? " or " : " and ") + on;
}

/** The positions of a check expression that hold a check (not a path or privileges). */
function checkParts(check: unknown[]): number[] {
  const [op] = check;
  if (op === "and" || op === "or") return check.map((_, i) => i).slice(1);
  return op === "when" || op === "pve" ? [2] : [];
}

/**
 * The `CHECKS` text of `checks` (JSON, in order): each part at least two checks share (counted
 * where the shared parts are already written once), if longer than its number, is written once,
 * after them, and named by its index where it occurs (issue 32).
 */
function sharedChecks(checks: string[]): string[] {
  const table = [...checks];
  const encode = (check: unknown, top: boolean): string => {
    if (!Array.isArray(check)) return JSON.stringify(check);
    const text = JSON.stringify(check);
    if (!top && table.includes(text)) return String(table.indexOf(text));
    const parts = checkParts(check);
    return `[${
      check.map((part, i) =>
        parts.includes(i) ? encode(part, false) : JSON.stringify(part)
      ).join(",")
    }]`;
  };
  for (;;) {
    // How often each part occurs in the table as written now.
    const count = new Map<string, number>();
    const visit = (check: unknown, top: boolean) => {
      if (!Array.isArray(check)) return;
      const text = JSON.stringify(check);
      if (!top && table.includes(text)) {
        count.set(text, (count.get(text) ?? 0) + 1);
        return;
      }
      if (!top) count.set(text, (count.get(text) ?? 0) + 1);
      for (const i of checkParts(check)) visit(check[i], false);
    };
    for (const text of table) visit(JSON.parse(text), true);
    const shared = [...count.entries()].filter(([text, n]) =>
      !table.includes(text) && n >= 2 && text.length > 4
    ).sort((a, b) => b[0].length - a[0].length);
    if (shared.length === 0) break;
    table.push(shared[0][0]);
  }
  return table.map((text) => encode(JSON.parse(text), true));
}

/**
 * `src/pve/privileges.rs`: the same requirements for the core's `preflight` and
 * `permissions` check — each endpoint's check as one JSON expression for both
 * versions (`["pve", 8, …]` where they differ), and the option classes.
 */
export function privilegesRust(): string {
  // Each check expression once (`CHECKS`); the endpoint tables name them by index.
  const checks: string[] = [];
  const indexOf = (endpoint: string): number => {
    const check = combinedCheck(endpoint);
    const text = check === undefined ? "" : JSON.stringify(check);
    if (!checks.includes(text)) checks.push(text);
    return checks.indexOf(text);
  };
  const UNDER = /^(\S+) \/nodes\/\{node\}\/(qemu|lxc)\/\{vmid\}(.*)$/;
  const guest = new Map<string, { qemu?: number; lxc?: number }>();
  const rows: string[] = [];
  for (const endpoint of sortedEndpoints()) {
    const under = endpoint.match(UNDER);
    if (under) {
      const key = `${under[1]} /{vmid}${under[3]}`;
      const row = guest.get(key) ?? {};
      row[under[2] as "qemu" | "lxc"] = indexOf(endpoint);
      guest.set(key, row);
      continue;
    }
    const kind = combinedCheck(endpoint) !== undefined
      ? `Check(${indexOf(endpoint)})`
      : insideFacts(endpoint)?.listing !== undefined
      ? "Listing"
      : "Anyone";
    rows.push(`    (${JSON.stringify(endpoint)}, ${kind}),`);
  }
  const table = sharedChecks(checks);
  const guestRows = [...guest.entries()].map(([key, { qemu, lxc }]) =>
    `    (${JSON.stringify(key)}, ${qemu ?? "NO"}, ${lxc ?? "NO"}),`
  );
  const options = Object.entries(FACTS.options).flatMap(([table, o]) =>
    o.classes.map(([privs, keys]) => `${table};${privs};${keys}`)
  );
  if (
    options.some((line) => line.split(";").length !== 3 || /["\\]/.test(line))
  ) {
    throw new Error(
      "a config option class with a ; or a quote cannot be a line of OPTIONS",
    );
  }
  return [
    "//! GENERATED by simulator/schema/permissions_table.ts (`--rust`) from PVE's API schema",
    "//! (`permissions` of apidata.json) and the checks inside the handlers and their workers, on PVE 8",
    "//! and 9 (simulator/schema/pve_inside_checks.json, read from PVE's Perl): do not edit. The",
    "//! docs/pve.md's endpoint table is made from the same facts.",
    "",
    "/// What calling an endpoint requires.",
    "#[derive(Debug, Clone, Copy, PartialEq, Eq)]",
    "pub enum Requirement {",
    "    /// PVE's check expression: line `.0` of `CHECKS`.",
    "    Check(u8),",
    "    /// A listing: any token may call it; it shows only what the token may audit.",
    "    Listing,",
    "    /// Any authenticated user.",
    "    Anyone,",
    "}",
    "",
    "use Requirement::{Anyone, Check, Listing};",
    "",
    '/// The check expressions, each once, as JSON (`["perm", path, [privs], …]`): the endpoint tables',
    "/// name them by index, so a check many endpoints share is stored once; a part several checks",
    "/// share is written once too, and a number in a check's place stands for check n (issue 32).",
    "/// One a line, check n on line n after the opening: one text, no table of pointers (issue 32).",
    "#[rustfmt::skip]",
    'pub const CHECKS: &str = r#"',
    ...table,
    '"#;',
    "",
    "/// Check expression `at` of [`CHECKS`]: its line `at`, counted from the one after the opening.",
    "pub fn check(at: usize) -> Option<&'static str> {",
    "    CHECKS.split('\\n').skip(1).nth(at)",
    "}",
    "",
    '/// Every endpoint the package uses outside one guest: `"<METHOD> <path template>"`, its',
    "/// requirement.",
    "#[rustfmt::skip]",
    "pub const ENDPOINTS: &[(&str, Requirement)] = &[",
    ...rows,
    "];",
    "",
    "/// A guest's endpoint of one kind only: the other kind has no such endpoint.",
    "pub const NO: u8 = u8::MAX;",
    "",
    '/// Every endpoint the package uses on one guest: `"<METHOD> /{vmid}<path>"` (under',
    "/// `/nodes/{node}/{kind}`, as `guest::permission_needs` writes it), the check of a VM (qemu) and",
    "/// of a container (lxc) as lines of `CHECKS` (each is checked). The kinds share a row.",
    "#[rustfmt::skip]",
    "pub const GUEST_ENDPOINTS: &[(&str, u8, u8)] = &[",
    ...guestRows,
    "];",
    "",
    "/// The privileges only one PVE major version has (pve-access-control `$privgroups`): one the",
    "/// token holds tells the node's version without asking it. One a line after the opening,",
    "/// `<major> <privilege>`: one text, no table of pointers (issue 32).",
    "#[rustfmt::skip]",
    `pub const ONLY_IN: &str = "\n${
      ([8, 9] as Major[]).flatMap((major) =>
        FACTS.privileges[major].map((p) => `${major} ${p}`)
      ).join("\n")
    }";`,
    "",
    "/// The config option classes of PVE's per-option checks, one a line after the opening:",
    "/// `table;privileges;keys`. Privileges `A|B` any, `A&B` all, `/:A` on `/` instead of the guest,",
    "/// empty: none; keys space-separated, `#` for an index, `*` every key no other class names. One",
    "/// text, no table of pointers (issue 32).",
    "#[rustfmt::skip]",
    'pub const OPTIONS: &str = "',
    ...options.slice(0, -1),
    `${options[options.length - 1]}";`,
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
