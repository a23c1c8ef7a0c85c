/**
 * The registry page (js/README.md) documents every workflow the manifest ships, each under its own
 * heading with every input the workflow declares; read from the workflow files, never kept by hand.
 */
import assert from "node:assert/strict";
import { parse } from "npm:yaml@2";
import { manifestList } from "../../harness/manifest_files.ts";
import { packageWorkflow } from "../../harness/project_package.ts";

const root = new URL("../../js/", import.meta.url);
const page = await Deno.readTextFile(new URL("README.md", root));

/** The text under `### <heading>` up to the next heading. */
function section(heading: string): string {
  const lines = page.split("\n");
  const start = lines.indexOf(heading);
  assert.ok(start >= 0, `js/README.md has no heading ${heading}`);
  const end = lines.findIndex((l, i) => i > start && /^#+ /.test(l));
  return lines.slice(start + 1, end < 0 ? undefined : end).join("\n");
}

for (const file of manifestList(new URL("manifest.yaml", root), "workflows")) {
  const wf = parse(packageWorkflow(file)) as {
    name: string;
    inputs?: { properties?: Record<string, unknown>; required?: string[] };
  };
  Deno.test(`registry page: ${wf.name} is documented with every input it takes`, () => {
    const text = section(`### \`${wf.name}\``);
    const inputs = Object.keys(wf.inputs?.properties ?? {});
    const missing = inputs.filter((i) => !text.includes(`\`${i}\``));
    assert.deepEqual(missing, [], `js/README.md: ${wf.name} lacks inputs`);
    for (const required of wf.inputs?.required ?? []) {
      assert.match(
        text,
        new RegExp(`\`${required}\`[^\\n]*\\(required`),
        `${required} is said to be required`,
      );
    }
  });
}
