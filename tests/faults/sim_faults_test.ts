/**
 * The simulator fault options the matrix relies on: `skip` (pick one phase of a repeated request),
 * `afterHandler` (the effect happens, only the answer is lost) and a `body` fault's `status`.
 */
import assert from "node:assert/strict";
import { api, tokenHeader } from "../../simulator/sim_client.ts";
import { type Simulator, startSimulator } from "../../simulator/simulator.ts";
import { HTML_PAGE } from "./faults.ts";

const TOKEN = { id: "root@pam!t", secret: "s" };
const AUTH = { auth: tokenHeader(TOKEN.id, TOKEN.secret) };

async function withSim(fn: (sim: Simulator) => Promise<void>) {
  const sim = await startSimulator({
    nodes: ["pve1"],
    guests: [{
      vmid: 120,
      node: "pve1",
      type: "qemu",
      name: "m",
      status: "stopped",
    }],
    tokens: [TOKEN],
    taskDurationMs: 10,
  });
  try {
    await fn(sim);
  } finally {
    await sim.close();
  }
}

const status = (sim: Simulator) =>
  api(sim.url, "GET", "/nodes/pve1/qemu/120/status/current", {}, AUTH);

Deno.test("sim fault: skip lets the first matching requests through", async () => {
  await withSim(async (sim) => {
    sim.fault({
      pathRegex: "/status/current$",
      kind: "status",
      status: 500,
      message: "boom",
      skip: 2,
    });
    assert.deepEqual(
      [
        (await status(sim)).status,
        (await status(sim)).status,
        (await status(sim)).status,
        (await status(sim)).status,
      ],
      [200, 200, 500, 200],
    );
  });
});

Deno.test("sim fault: a reset afterHandler loses the answer but keeps the effect", async () => {
  await withSim(async (sim) => {
    sim.fault({
      method: "POST",
      pathRegex: "/status/start$",
      kind: "reset",
      afterHandler: true,
    });
    await assert.rejects(
      () => api(sim.url, "POST", "/nodes/pve1/qemu/120/status/start", {}, AUTH),
      TypeError,
    );
    assert.equal(sim.requests.at(-1)?.status, 0, "no answer was delivered");
    assert.equal(sim.tasks().length, 1, "the start task was created");
    for (let i = 0; i < 100 && sim.guest(120)?.status !== "running"; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    assert.equal(sim.guest(120)?.status, "running");
  });
});

Deno.test("sim fault: a reset before the handler has no effect", async () => {
  await withSim(async (sim) => {
    sim.fault({ method: "POST", pathRegex: "/status/start$", kind: "reset" });
    await assert.rejects(
      () => api(sim.url, "POST", "/nodes/pve1/qemu/120/status/start", {}, AUTH),
      TypeError,
    );
    assert.equal(sim.tasks().length, 0);
    assert.equal(sim.guest(120)?.status, "stopped");
  });
});

Deno.test("sim fault: a body fault can carry a status (a proxy's HTML error page)", async () => {
  await withSim(async (sim) => {
    sim.fault({
      pathRegex: "/status/current$",
      kind: "body",
      status: 502,
      body: HTML_PAGE,
      contentType: "text/html",
    });
    const res = await fetch(
      `${sim.url}/api2/json/nodes/pve1/qemu/120/status/current`,
      { headers: { authorization: AUTH.auth } },
    );
    assert.equal(res.status, 502);
    assert.equal(res.headers.get("content-type"), "text/html");
    assert.equal(await res.text(), HTML_PAGE);
  });
});
