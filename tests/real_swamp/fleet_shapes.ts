/**
 * Measures docs/recipes.md's two fleet shapes in real swamp against the simulator: the same `guestExec` on
 * N guests through one definition (swamp's per-definition lock: one step at a time) and through one
 * definition per guest (side by side). Prints the wall time of each `swamp workflow run`.
 *
 *   deno run -A tests/real_swamp/fleet_shapes.ts [N=20]
 *
 * @module
 */
import { demoGuests } from "../../simulator/demo_cluster.ts";
import { extraGuest, withRealSwamp } from "./fixture.ts";
import { definitionPerGuest, writeRecipe } from "./recipes.ts";

const count = Number(Deno.args[0] ?? 20);
const vmids = Array.from({ length: count }, (_, i) => 300 + i);
const guests = [
  ...demoGuests(),
  ...vmids.map((vmid) =>
    extraGuest({
      vmid,
      name: `fleet-${vmid}`,
      status: "running",
      config: {
        smbios1: `uuid=00000000-0000-4000-8000-${
          String(vmid).padStart(12, "0")
        }`,
      },
    })
  ),
];

await withRealSwamp({ guests }, async (env) => {
  await definitionPerGuest(env, vmids);
  const input = `vmids:json=${JSON.stringify(vmids)}`;
  for (const recipe of ["fleet-one-definition", "fleet-per-guest"]) {
    await writeRecipe(env, recipe);
    const started = performance.now();
    const r = await env.cli.json(["workflow", "run", recipe, "--input", input]);
    const seconds = (performance.now() - started) / 1000;
    console.log(
      `${recipe}: ${count} guests, ${seconds.toFixed(1)} s (${r.json.status})`,
    );
  }
});
