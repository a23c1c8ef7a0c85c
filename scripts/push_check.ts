/**
 * Applies swamp's `extension push` rules to `js/` (swamp-contract.md section 6) and exits 1 on a
 * violation: allowed file types, no hidden files or symlinks, per-file and total sizes, file count,
 * forbidden substrings, no dynamic import, literal `type` and `version`, manifest entries present.
 * The manifest's `binaries` are exempt from the file-type rule, as push exempts them.
 * The manifest's keys are those swamp's manifest schema knows (`extension_manifest.ts`: any other
 * would be dropped silently), `releaseNotes` at most 5000 characters; each `workflows:` entry is a
 * workflow file in js/workflows/ named in the package's collective (`extension_collective_validator
 * .ts`), each `skills:` entry a folder in js/skills/ with a SKILL.md whose frontmatter has `name` and
 * `description`, files within 500 KB and 2 MB in all (`extension_skill_validator.ts`).
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
const fields = (() => {
  try {
    return (parse(manifest) ?? {}) as Record<string, unknown>;
  } catch {
    return {}; // reported by declaredBinaries
  }
})();
const KNOWN_KEYS = [
  "manifestVersion",
  "name",
  "version",
  "description",
  "repository",
  "paths",
  "workflows",
  "models",
  "vaults",
  "drivers",
  "datastores",
  "reports",
  "skills",
  "include",
  "additionalFiles",
  "binaries",
  "platforms",
  "labels",
  "releaseNotes",
  "dependencies",
];
for (const key of Object.keys(fields)) {
  if (!KNOWN_KEYS.includes(key)) {
    problems.push(`manifest.yaml: ${key} is not a manifest key`);
  }
}
const notes = fields.releaseNotes;
if (notes !== undefined && (typeof notes !== "string" || notes.length > 5000)) {
  problems.push(
    "manifest.yaml: releaseNotes must be text of at most 5000 characters",
  );
}
const list = (key: string) =>
  Array.isArray(fields[key]) ? (fields[key] as unknown[]).map(String) : [];
const exists = (path: string) => Deno.stat(path).then(() => true, () => false);

// Where each kind's entries are kept in js/: models beside the manifest, reports in reports/
// (swamp's extensions/reports/), workflows in workflows/ (extensions/workflows/), skills in
// skills/ (a tool's skills folder); the tests install them there.
for (const [key, dir] of [["models", root], ["reports", `${root}/reports`]]) {
  for (const entry of list(key)) {
    if (!(await exists(`${dir}/${entry}`))) {
      problems.push(`manifest.yaml lists ${entry}, which does not exist`);
    }
  }
}
const collective = String(fields.name ?? "").split("/")[0] + "/";
for (const entry of list("workflows")) {
  const path = `${root}/workflows/${entry}`;
  if (!(await exists(path))) {
    problems.push(
      `manifest.yaml lists workflow ${entry}, which does not exist`,
    );
    continue;
  }
  const name = (parse(await Deno.readTextFile(path)) as { name?: unknown })
    ?.name;
  if (typeof name !== "string" || !name.startsWith(collective)) {
    problems.push(
      `workflows/${entry}: its name ${name} is not in the collective ${collective}`,
    );
  }
}
for (const entry of list("skills")) {
  problems.push(...await skillProblems(entry, `${root}/skills/${entry}`));
}

/** swamp's push-time checks of one skill folder (extension_skill_validator.ts). */
async function skillProblems(name: string, dir: string): Promise<string[]> {
  const text = await Deno.readTextFile(`${dir}/SKILL.md`).catch(() => null);
  if (text === null) return [`skills/${name}: no SKILL.md`];
  const out: string[] = [];
  const front = text.match(/^---\n([\s\S]*?)\n---/)?.[1];
  const meta = front ? parse(front) as Record<string, unknown> : null;
  for (const field of ["name", "description"]) {
    const value = meta?.[field];
    if (typeof value !== "string" || value.trim() === "") {
      out.push(`skills/${name}/SKILL.md: frontmatter lacks ${field}`);
    }
  }
  let size = 0;
  const walkSkill = async (at: string): Promise<void> => {
    for await (const e of Deno.readDir(at)) {
      const path = `${at}/${e.name}`;
      if (e.isDirectory) await walkSkill(path);
      else {
        const bytes = (await Deno.stat(path)).size;
        size += bytes;
        if (bytes > 500 * 1024) out.push(`${path}: over 500 KB`);
      }
    }
  };
  await walkSkill(dir);
  if (size > 2 * 1024 * 1024) out.push(`skills/${name}: over 2 MB in all`);
  return out;
}

for (const w of warnings) console.log(`push warning: ${w}`);
if (problems.length > 0) {
  for (const p of problems) console.log(`push refusal: ${p}`);
  Deno.exit(1);
}
console.log(
  `push readiness: ${count} files, ${total} bytes, no refusal (${warnings.length} warnings)`,
);
