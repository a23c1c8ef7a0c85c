/**
 * The workflow recipes of docs/recipes.md, read out of the file so that what the
 * page shows is what the real-swamp layer runs: each is a ```yaml block whose first line is
 * `# recipe: <name>`.
 *
 * @module
 */
import { join } from "node:path";
import type { RealSwamp } from "./fixture.ts";
import { PROJECT_ROOT } from "./swamp_cli.ts";

/** docs/recipes.md's recipes by name. */
export async function readmeRecipes(): Promise<Map<string, string>> {
  const readme = await Deno.readTextFile(
    join(PROJECT_ROOT, "docs", "recipes.md"),
  );
  const recipes = new Map<string, string>();
  for (const [, body] of readme.matchAll(/```yaml\n([\s\S]*?)```/g)) {
    const name = body.match(/^# recipe: (\S+)\n/)?.[1];
    if (name) recipes.set(name, body);
  }
  return recipes;
}

/** Writes recipe `name` (with `edit` applied) as a workflow of the fixture's repository. */
export async function writeRecipe(
  env: RealSwamp,
  name: string,
  edit: (text: string) => string = (t) => t,
): Promise<void> {
  const text = (await readmeRecipes()).get(name);
  if (!text) throw new Error(`docs/recipes.md has no recipe ${name}`);
  await env.cli.write(`workflows/workflow-${name}.yaml`, edit(text));
}

/**
 * Creates one definition per guest (`guest-<vmid>`), reaching the fixture's simulator, with
 * `extra` global arguments (e.g. `pollIntervalSec`).
 */
export async function definitionPerGuest(
  env: RealSwamp,
  vmids: number[],
  extra: Record<string, string | number> = {},
): Promise<void> {
  for (const vmid of vmids) {
    await env.cli.json([
      "model",
      "create",
      "@stateless/proxmox/qemu",
      `guest-${vmid}`,
      ...env.globalArgs(`guest-${vmid}`, extra),
    ]);
  }
}
