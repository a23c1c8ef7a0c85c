/**
 * Runs a command with the PVE simulator (demo cluster, a real qemu-ga) up for its whole duration,
 * its URL and token in the environment: `PVE_SIM_URL`, `PVE_SIM_TOKEN_ID`, `PVE_SIM_TOKEN_SECRET`.
 * Exits with the command's status. Used by ./test.sh for the wasm-bindgen-test layer, whose
 * tests/wasm_simulator.rs reads them at build time.
 *
 *   deno run --allow-all scripts/with_simulator.ts <command> [args…]
 *
 * @module
 */
import { DEMO_NODES, demoGuests } from "../simulator/demo_cluster.ts";
import { startGuestAgent } from "../simulator/qga.ts";
import { startSimulator } from "../simulator/simulator.ts";

const [program, ...args] = Deno.args;
if (!program) {
  console.error("usage: with_simulator.ts <command> [args…]");
  Deno.exit(2);
}
const token = { id: "root@pam!wasm", secret: crypto.randomUUID() };
const agent = await startGuestAgent();
const sim = await startSimulator({
  nodes: DEMO_NODES,
  guests: demoGuests(),
  tokens: [token],
  agent,
});
let code = 1;
try {
  const child = new Deno.Command(program, {
    args,
    env: {
      PVE_SIM_URL: sim.url,
      PVE_SIM_TOKEN_ID: token.id,
      PVE_SIM_TOKEN_SECRET: token.secret,
    },
    stdin: "null",
  }).spawn();
  code = (await child.status).code;
} finally {
  await sim.close();
  await agent.stop();
}
Deno.exit(code);
