/**
 * The front door stays a front door: README holds what a newcomer needs in under 250 lines and
 * links every reference page in docs/; no page links to a file that is not there.
 */
import assert from "node:assert/strict";

const root = new URL("../../", import.meta.url);
const readme = await Deno.readTextFile(new URL("README.md", root));
const pages = [...Deno.readDirSync(new URL("docs/", root))]
  .filter((e) => e.isFile && e.name.endsWith(".md"))
  .map((e) => `docs/${e.name}`)
  .sort();

/** The relative link targets of a markdown text (no URLs, no in-page anchors). */
function links(text: string): string[] {
  return [...text.matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)]
    .map((m) => m[1])
    .filter((t) => !/^[a-z]+:/.test(t));
}

Deno.test("README: under 250 lines", () => {
  const lines = readme.split("\n").length;
  assert.ok(lines < 250, `README.md has ${lines} lines`);
});

Deno.test("README: links every page of docs/", () => {
  const linked = new Set(links(readme));
  assert.ok(pages.length > 0);
  assert.deepEqual(pages.filter((p) => !linked.has(p)), []);
});

Deno.test("README and docs/: every relative link names a file that exists", async () => {
  for (const page of ["README.md", ...pages]) {
    const text = await Deno.readTextFile(new URL(page, root));
    const base = new URL(page, root);
    for (const target of links(text)) {
      const exists = await Deno.stat(new URL(target, base)).then(
        () => true,
        () => false,
      );
      assert.ok(exists, `${page} links to ${target}, which is not there`);
    }
  }
});
