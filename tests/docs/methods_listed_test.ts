/**
 * The pages a user reads first stay current: the registry page (`js/README.md`, what swamp's
 * registry shows) lists every method and check of both models and every record they write, and
 * the project README's "Methods at a glance" table has a row for every method. The lists are read
 * from the model definitions themselves (`js/proxmox_qemu.ts`, `js/proxmox_lxc.ts`), never kept
 * by hand, so a method added to a model without its line fails here.
 */
import assert from "node:assert/strict";
import { model as qemuModel } from "../../js/proxmox_qemu.ts";
import { model as lxcModel } from "../../js/proxmox_lxc.ts";

const MODELS = [
  { short: "qemu", model: qemuModel },
  { short: "lxc", model: lxcModel },
] as const;

const root = new URL("../../", import.meta.url);
const registryPage = await Deno.readTextFile(new URL("js/README.md", root));
const projectReadme = await Deno.readTextFile(new URL("README.md", root));

/** The text of the section of `page` under the heading `heading` (up to the next heading of its level or above). */
function section(page: string, heading: string): string {
  const lines = page.split("\n");
  const start = lines.findIndex((l) => l.trim() === heading);
  assert.ok(start >= 0, `the page has no heading ${heading}`);
  const level = heading.match(/^#+/)![0].length;
  const end = lines.findIndex((l, i) =>
    i > start && /^#+ /.test(l) && l.match(/^#+/)![0].length <= level
  );
  return lines.slice(start + 1, end < 0 ? undefined : end).join("\n");
}

/** The names a bullet list introduces as ``- **`name`**``. */
function bulleted(text: string): string[] {
  return [...text.matchAll(/^- \*\*`([^`]+)`\*\*/gm)].map((m) => m[1]);
}

/** The instance names the models' record specs declare (`(instance vm-<vmid>-exec)`). */
function instances(
  model: { resources: Record<string, { description: string }> },
) {
  return Object.values(model.resources).flatMap((r) =>
    [...r.description.matchAll(/instance ([a-z]+(?:-<[a-z]+>|-[a-z]+)+)/g)].map(
      (
        m,
      ) => m[1],
    )
  );
}

for (const { short, model } of MODELS) {
  const methods = Object.keys(model.methods);

  Deno.test(`registry page: every method of the ${short} model has its line, and no line names another`, () => {
    const listed = bulleted(
      section(registryPage, `## Methods of \`${model.type}\``),
    );
    const missing = methods.filter((m) => !listed.includes(m));
    assert.deepEqual(missing, [], `js/README.md lacks ${missing.join(", ")}`);
    const stale = listed.filter((m) => !methods.includes(m));
    assert.deepEqual(
      stale,
      [],
      `js/README.md lists methods ${model.type} lacks`,
    );
    assert.equal(new Set(listed).size, listed.length, "each method once");
  });

  Deno.test(`registry page: every check of the ${short} model is listed`, () => {
    const listed = bulleted(section(registryPage, "## Checks"));
    for (const check of Object.keys(model.checks)) {
      assert.ok(
        listed.includes(check),
        `js/README.md lacks the check ${check}`,
      );
    }
  });

  Deno.test(`registry page: every record the ${short} model declares is named`, () => {
    const names = instances(model);
    assert.ok(names.length >= 4, `read the instance names: ${names}`);
    const records = section(registryPage, "## Records");
    for (const name of names) {
      assert.ok(
        records.includes(`\`${name}\``),
        `js/README.md's Records lack ${name}`,
      );
    }
  });

  Deno.test(`README: "Methods at a glance" has a row for every method of the ${short} model`, () => {
    const table = section(projectReadme, "## Methods at a glance");
    const rows = [
      ...table.matchAll(/^\| *(both|qemu|lxc) *\| *`([^`]+)` *\|/gm),
    ];
    const covered = rows.filter((r) => r[1] === short || r[1] === "both").map((
      r,
    ) => r[2]);
    const missing = methods.filter((m) => !covered.includes(m));
    assert.deepEqual(missing, [], `README's table lacks ${missing.join(", ")}`);
    const stale = covered.filter((m) => !methods.includes(m));
    assert.deepEqual(
      stale,
      [],
      `README's table claims ${short} methods it lacks`,
    );
  });
}
