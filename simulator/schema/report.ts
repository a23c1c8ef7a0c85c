/**
 * The conformance layer's verdict (test.sh): reads the JSON lines the
 * simulators of the end-to-end and fault tests wrote to
 * `$PVE_CONFORMANCE_LOG` (conformance.ts) — every request the package sent,
 * over both transports — and prints `N requests validated over M endpoints`.
 * It fails, naming the request and the rule, when a request broke PVE's
 * schema (unless its test expected the refusal), when an answer of the
 * simulator broke `returns`, or when an endpoint the simulator serves for
 * the package was never exercised.
 *
 * Usage: `deno run --allow-read simulator/schema/report.ts <log.jsonl>`
 *
 * @module
 */

import type { ConformanceEntry } from "./conformance.ts";
import { simulatorEndpoints } from "../simulator.ts";

/**
 * Endpoints the simulator serves that the package never calls (src/pve/endpoints.rs builds no
 * request for them): served for the simulator's own tests and for hand-driven use.
 */
const NOT_THE_PACKAGES: ReadonlySet<string> = new Set([
  "POST /nodes/{node}/qemu/{vmid}/config",
  "POST /nodes/{node}/qemu/{vmid}/agent/ping",
  "GET /nodes/{node}/lxc/{vmid}",
  "GET /nodes/{node}/lxc/{vmid}/interfaces",
  "GET /nodes/{node}/storage/{storage}/status",
  // The firewall's IP sets and aliases, one rule by position and the cluster switch's write: served
  // for the simulator's own tests; no method of the package calls them (yet).
  "PUT /cluster/firewall/options",
  ...["qemu", "lxc"].flatMap((kind) =>
    [
      "GET rules/{pos}",
      "GET ipset",
      "POST ipset",
      "GET ipset/{name}",
      "POST ipset/{name}",
      "DELETE ipset/{name}",
      "GET ipset/{name}/{cidr}",
      "PUT ipset/{name}/{cidr}",
      "DELETE ipset/{name}/{cidr}",
      "GET aliases",
      "POST aliases",
      "GET aliases/{name}",
      "PUT aliases/{name}",
      "DELETE aliases/{name}",
    ].map((e) => e.replace(" ", ` /nodes/{node}/${kind}/{vmid}/firewall/`))
  ),
]);

/** The problems found in `entries`, one line each. */
export function problemsOf(entries: ConformanceEntry[]): string[] {
  const problems: string[] = [];
  for (const e of entries) {
    const request = `${e.method} ${e.path} (${e.decoding}; params ${
      e.params.join(",") || "none"
    })`;
    if (!e.expected) {
      for (const [param, rule] of Object.entries(e.paramErrors ?? {})) {
        problems.push(`${request}: parameter ${param}: ${rule.trim()}`);
      }
      if (e.refusal) {
        problems.push(`${request}: pvesh refuses it: ${e.refusal}`);
      }
    }
    for (const v of e.answerViolations ?? []) {
      problems.push(`${request}: the simulator's answer ${v.at} ${v.rule}`);
    }
  }
  return [...new Set(problems)];
}

/** The endpoints the package uses: what the simulator serves, less what it serves for tests only. */
export function packageEndpoints(): string[] {
  return simulatorEndpoints().filter((e) => !NOT_THE_PACKAGES.has(e));
}

/** Endpoints the package uses that no entry exercised. */
export function uncovered(entries: ConformanceEntry[]): string[] {
  const seen = new Set(entries.map((e) => `${e.method} ${e.template}`));
  return packageEndpoints().filter((e) => !seen.has(e));
}

if (import.meta.main) {
  const file = Deno.args[0];
  if (!file) {
    console.error("usage: report.ts <conformance.jsonl>");
    Deno.exit(2);
  }
  const entries = (await Deno.readTextFile(file)).split("\n").filter((l) =>
    l.trim() !== ""
  )
    .map((l) => JSON.parse(l) as ConformanceEntry);
  const endpoints = new Set(entries.map((e) => `${e.method} ${e.template}`));
  const byDecoding = (d: string) =>
    entries.filter((e) => e.decoding === d).length;
  console.log(
    `${entries.length} requests validated over ${endpoints.size} endpoints ` +
      `(${byDecoding("http")} over HTTP, ${byDecoding("cli")} through pvesh; ` +
      `${
        entries.filter((e) => e.expected).length
      } refusals the tests asked for)`,
  );
  const problems = problemsOf(entries);
  const missing = uncovered(entries);
  for (const p of problems) console.log(`VIOLATION ${p}`);
  for (const m of missing) {
    console.log(`NOT COVERED ${m}: no end-to-end or fault test sent it`);
  }
  if (problems.length + missing.length > 0) {
    console.log(
      `${problems.length} violations, ${missing.length} endpoints not covered`,
    );
    Deno.exit(1);
  }
  console.log(
    "every request held to PVE 9's schema; every endpoint the package uses covered",
  );
}
