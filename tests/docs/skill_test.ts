/**
 * The agent skill the package ships (`skills:` in js/manifest.yaml, js/skills/<name>/) stays true
 * to the package: its method table equals the models' method lists (read from the model
 * definitions, never kept by hand), it names every workflow the manifest ships, its SKILL.md has
 * the frontmatter swamp's push requires (`name`, `description`), and every reference is linked.
 */
import assert from "node:assert/strict";
import { parse } from "npm:yaml@2";
import { model as qemuModel } from "../../js/proxmox_qemu.ts";
import { model as lxcModel } from "../../js/proxmox_lxc.ts";
import { manifestList } from "../../harness/manifest_files.ts";
import { packageWorkflow } from "../../harness/project_package.ts";

const root = new URL("../../js/", import.meta.url);
const manifest = new URL("manifest.yaml", root);
const [skill, ...others] = manifestList(manifest, "skills");
const dir = new URL(`skills/${skill}/`, root);
const read = (rel: string) => Deno.readTextFileSync(new URL(rel, dir));

Deno.test("skill: the manifest ships exactly one skill, kept in js/skills/<name>/", () => {
  assert.deepEqual(others, []);
  assert.ok(Deno.statSync(new URL("SKILL.md", dir)).isFile);
});

Deno.test("skill: SKILL.md's frontmatter names the skill and describes it (swamp's push requires both)", () => {
  const text = read("SKILL.md");
  const front = text.match(/^---\n([\s\S]*?)\n---\n/)?.[1];
  assert.ok(front, "SKILL.md starts with --- frontmatter ---");
  const meta = parse(front) as { name?: string; description?: string };
  assert.equal(meta.name, skill);
  assert.ok((meta.description ?? "").trim().length > 40);
});

Deno.test("skill: every reference is linked from SKILL.md and every link resolves", () => {
  const text = read("SKILL.md");
  const links = [...text.matchAll(/\]\((references\/[^)]+)\)/g)].map((m) =>
    m[1]
  );
  const files = [...Deno.readDirSync(new URL("references/", dir))].map((e) =>
    `references/${e.name}`
  );
  assert.deepEqual([...new Set(links)].sort(), files.sort());
});

/** The methods table of references/methods.md: method → models column. */
function methodTable(): Map<string, string> {
  const rows = read("references/methods.md").split("\n").filter((l) =>
    /^\| `[A-Za-z]+` /.test(l)
  );
  return new Map(rows.map((l) => {
    const [, method, models] = l.split("|").map((c) => c.trim());
    return [method.replaceAll("`", ""), models];
  }));
}

Deno.test("skill: its method table is the catalog — every method of both models, with the models that have it", () => {
  const qemu = Object.keys(qemuModel.methods);
  const lxc = Object.keys(lxcModel.methods);
  const expected = new Map<string, string>();
  for (const m of [...qemu, ...lxc]) {
    expected.set(
      m,
      qemu.includes(m) && lxc.includes(m)
        ? "both"
        : qemu.includes(m)
        ? "qemu"
        : "lxc",
    );
  }
  const table = methodTable();
  assert.deepEqual(
    [...table].sort(),
    [...expected].sort(),
    "references/methods.md must list each method once, with `both`, `qemu` or `lxc`",
  );
});

Deno.test("skill: it names every workflow the manifest ships", () => {
  const text = read("references/workflows.md");
  for (const file of manifestList(manifest, "workflows")) {
    const name = (parse(packageWorkflow(file)) as { name: string }).name;
    const short = name.split("/").at(-1);
    assert.match(text, new RegExp(`\\*\\*\`${short}\`\\*\\*`), name);
  }
});
