/**
 * Applies swamp's `extension push` rules to `js/` (swamp-contract.md section 6) and exits 1 on a
 * violation: allowed file types, no hidden files or symlinks, per-file and total sizes, file count,
 * forbidden substrings, no dynamic import, literal `type` and `version`, manifest entries present.
 * The manifest's `binaries` are exempt from the file-type rule, as push exempts them.
 * (`deno fmt --check`, `deno lint` and `deno check` on js/ run as separate gates in test.sh.)
 *
 * Usage: deno run --allow-read --allow-env=LOG_TOKENS,LOG_STREAM scripts/push_check.ts [package dir]
 * (the yaml parser reads those two variables)
 */
import { parse } from "npm:yaml@2";

const root = Deno.args[0] ?? "js";
const ALLOWED = /\.(ts|json|md|yaml|yml|txt)$/;
const LICENSE_LIKE = /^(LICENSE|LICENCE|COPYING|NOTICE)(\.[a-z]+)?$/i;
const MAX_FILE = 1_000_000;
const MAX_TOTAL = 10_000_000;
const MAX_FILES = 150;
const CALVER = /^\d{4}\.\d{2}\.\d{2}\.\d+$/;

const problems: string[] = [];
const manifest = await Deno.readTextFile(`${root}/manifest.yaml`).catch(() =>
  ""
);

/** The manifest's `binaries` entries, relative to the package root. */
function declaredBinaries(text: string): Set<string> {
  try {
    const listed = (parse(text) as { binaries?: unknown } | null)?.binaries;
    return new Set(Array.isArray(listed) ? listed.map(String) : []);
  } catch (error) {
    problems.push(`manifest.yaml is not YAML: ${(error as Error).message}`);
    return new Set();
  }
}
const binaries = declaredBinaries(manifest);

const warnings: string[] = [];
let total = 0;
let count = 0;

async function walk(dir: string): Promise<void> {
  for await (const entry of Deno.readDir(dir)) {
    const path = `${dir}/${entry.name}`;
    const rel = path.slice(root.length + 1);
    if (entry.name.startsWith(".")) {
      problems.push(`${rel}: hidden files are refused`);
    }
    if (entry.isSymlink) {
      problems.push(`${rel}: symlinks are refused`);
      continue;
    }
    if (entry.isDirectory) {
      await walk(path);
      continue;
    }
    count++;
    const size = (await Deno.stat(path)).size;
    total += size;
    if (size > MAX_FILE) {
      problems.push(`${rel}: ${size} bytes (limit ${MAX_FILE})`);
    }
    const typed = ALLOWED.test(entry.name) || LICENSE_LIKE.test(entry.name);
    if (!typed && !binaries.has(rel)) {
      problems.push(`${rel}: file type not accepted by push`);
    }
    if (entry.name.endsWith(".ts")) {
      checkSource(rel, await Deno.readTextFile(path));
    }
  }
}

function checkSource(rel: string, text: string): void {
  for (const needle of ["eval(", "new Function("]) {
    if (text.includes(needle)) {
      problems.push(`${rel}: contains the substring ${needle}`);
    }
  }
  if (/\bimport\s*\(/.test(text)) {
    problems.push(`${rel}: dynamic import() is refused`);
  }
  text.split("\n").forEach((line, i) => {
    if (line.replace(/\s/g, "").length > 500) {
      warnings.push(`${rel}:${i + 1}: line over 500 characters`);
    }
    if (/[A-Za-z0-9+/=]{100,}/.test(line)) {
      warnings.push(`${rel}:${i + 1}: base64-looking run`);
    }
  });
  if (/export const model = \{/.test(text)) {
    const type = text.match(/^\s*type:\s*"([^"]+)"/m)?.[1];
    const version = text.match(/^\s*version:\s*"([^"]+)"/m)?.[1];
    if (!type) problems.push(`${rel}: model type is not a string literal`);
    if (!version || !CALVER.test(version)) {
      problems.push(`${rel}: model version is not a literal CalVer string`);
    }
  }
}

await walk(root);
if (count > MAX_FILES) problems.push(`${count} files (limit ${MAX_FILES})`);
if (total > MAX_TOTAL) {
  problems.push(`${total} bytes in all (limit ${MAX_TOTAL})`);
}

if (!manifest) problems.push("manifest.yaml is missing");
const manifestVersion = manifest.match(/^version:\s*"?([^"\n]+)"?/m)?.[1];
if (!manifestVersion || !CALVER.test(manifestVersion)) {
  problems.push("manifest.yaml: version is not CalVer");
}
// `reports:` entries resolve in the reports folder (swamp's extensions/reports/, shipped as
// js/reports/); the other .ts entries (models) beside the manifest.
const entries = [...manifest.matchAll(/^(\w+):|^\s+-\s+(\S+\.ts)\s*$/gm)];
let key = "";
for (const entry of entries) {
  if (entry[1]) {
    key = entry[1];
    continue;
  }
  const dir = key === "reports" ? `${root}/reports` : root;
  const exists = await Deno.stat(`${dir}/${entry[2]}`).then(
    () => true,
    () => false,
  );
  if (!exists) {
    problems.push(`manifest.yaml lists ${entry[2]}, which does not exist`);
  }
}

for (const w of warnings) console.log(`push warning: ${w}`);
if (problems.length > 0) {
  for (const p of problems) console.log(`push refusal: ${p}`);
  Deno.exit(1);
}
console.log(
  `push readiness: ${count} files, ${total} bytes, no refusal (${warnings.length} warnings)`,
);
