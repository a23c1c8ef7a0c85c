/**
 * The simulator's long-tail situations: a proxy that echoes the Authorization header (in a 401, a
 * 200 page, a task log line, in several spellings) or a password the request carried, a guest whose
 * stored value keeps a property a config change dropped, and a clone that stores other values than
 * asked.
 */
import assert from "node:assert/strict";
import { echoed, echoedParam } from "../../simulator/faults.ts";
import {
  api,
  type ApiParams,
  tokenHeader,
  waitTask,
} from "../../simulator/sim_client.ts";
import type { EchoForm, ParamEchoForm } from "../../simulator/types.ts";
import { startSimulator } from "../../simulator/simulator.ts";
import type { Simulator } from "../../simulator/simulator.ts";

const TOKEN = { id: "root@pam!ci", secret: "echo-secret-1" };
const AUTH = { auth: tokenHeader(TOKEN.id, TOKEN.secret) };
const HEADER = `PVEAPIToken=${TOKEN.id}=${TOKEN.secret}`;

async function withSim(fn: (sim: Simulator) => Promise<void>) {
  const sim = await startSimulator({
    nodes: ["pve1"],
    tokens: [TOKEN],
    taskDurationMs: 20,
    guests: [{
      vmid: 100,
      node: "pve1",
      type: "qemu",
      name: "web",
      status: "stopped",
      keeps: { net0: "firewall=1" },
      config: { net0: "virtio=BC:24:11:00:01:00,bridge=vmbr0,firewall=1" },
    }],
  });
  try {
    await fn(sim);
  } finally {
    await sim.close();
  }
}

Deno.test("echo: every spelling of the header an echoing proxy may use", () => {
  const b64 = (t: string) => btoa(t);
  assert.equal(echoed("header", HEADER), HEADER);
  assert.equal(echoed("secret", HEADER), TOKEN.secret);
  assert.equal(echoed("percent", HEADER), encodeURIComponent(HEADER));
  assert.equal(echoed("base64", HEADER), b64(HEADER));
  assert.equal(echoed("base64-secret", HEADER), b64(TOKEN.secret));
  assert.equal(
    echoed("base64-pair", HEADER),
    b64(`${TOKEN.id}=${TOKEN.secret}`),
  );
});

Deno.test("echo: a 401 and a 200 page quote the request's header", async () => {
  await withSim(async (sim) => {
    sim.fault({
      pathRegex: "/version$",
      kind: "echo",
      into: "401",
      form: "header",
    });
    const denied = await api(sim.url, "GET", "/version", {}, AUTH);
    assert.equal(denied.status, 401);
    assert.match(
      String(denied.body.message),
      new RegExp(HEADER.replace(/[!]/g, "\\!")),
    );
    sim.fault({
      pathRegex: "/version$",
      kind: "echo",
      into: "page",
      form: "base64",
    });
    const page = await fetch(`${sim.url}/api2/json/version`, {
      headers: { Authorization: HEADER },
    });
    assert.equal(page.status, 200);
    assert.match(
      await page.text(),
      new RegExp(btoa(HEADER).replace(/[+/=]/g, ".")),
    );
  });
});

/**
 * The last line of a start task's log read under a log echo fault: the task is started with
 * `params` and waited for, then `echo` (the fault's own fields) applies to the log read.
 */
async function lastLogLineUnderEcho(
  sim: Simulator,
  params: ApiParams,
  echo: { form: EchoForm } | { param: string; form: ParamEchoForm },
): Promise<string | undefined> {
  const start = await api(
    sim.url,
    "POST",
    "/nodes/pve1/qemu/100/status/start",
    params,
    AUTH,
  );
  const upid = String(start.body.data);
  await waitTask(sim.url, upid, AUTH);
  sim.fault({ pathRegex: "/log$", kind: "echo", into: "log", ...echo });
  const log = await api(
    sim.url,
    "GET",
    `/nodes/pve1/tasks/${upid}/log`,
    {},
    AUTH,
  );
  return (log.body.data as { n: number; t: string }[]).at(-1)?.t;
}

Deno.test("echo: a task log gets one more line quoting the header", async () => {
  await withSim(async (sim) => {
    assert.equal(
      await lastLogLineUnderEcho(sim, {}, { form: "secret" }),
      `proxy: Authorization: ${TOKEN.secret}`,
    );
  });
});

Deno.test("keeps: a property the change dropped stays in the stored value", async () => {
  await withSim(async (sim) => {
    const r = await api(sim.url, "PUT", "/nodes/pve1/qemu/100/config", {
      net0: "virtio=BC:24:11:00:01:00,bridge=vmbr1",
    }, AUTH);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(
      sim.guest(100)?.config.net0,
      "virtio=BC:24:11:00:01:00,bridge=vmbr1,firewall=1",
    );
  });
});

Deno.test("echo: every spelling of a parameter the request carried", () => {
  const value = "pw 1/ä";
  assert.equal(echoedParam("raw", "cipassword", value), `cipassword=${value}`);
  assert.equal(
    echoedParam("percent", "cipassword", value),
    `cipassword=${encodeURIComponent(value)}`,
  );
  assert.equal(
    echoedParam("form", "cipassword", value),
    "cipassword=pw+1%2F%C3%A4",
  );
  assert.equal(
    echoedParam("base64", "cipassword", value),
    `cipassword=${btoa("pw 1/\xc3\xa4")}`,
  );
  const quoted = "it's <&>";
  assert.equal(
    echoedParam("html", "password", quoted),
    "password=it&#39;s &lt;&amp;&gt;",
  );
  assert.equal(
    echoedParam("shell", "password", quoted),
    "password='it'\\''s <&>'",
  );
  assert.equal(
    echoedParam("hex-escaped", "cipassword", value),
    "cipassword=pw\\x201\\x2f\\xc3\\xa4",
  );
});

Deno.test("echo: a 500 quotes the password its own request carried", async () => {
  await withSim(async (sim) => {
    sim.fault({
      pathRegex: "/config$",
      kind: "echo",
      into: "500",
      param: "cipassword",
      form: "percent",
    });
    const r = await api(sim.url, "PUT", "/nodes/pve1/qemu/100/config", {
      cipassword: "s3cret pw",
    }, AUTH);
    assert.equal(r.status, 500);
    assert.match(String(r.body.message), /cipassword=s3cret%20pw/);
    assert.equal(sim.guest(100)?.config.cipassword, undefined, "not applied");
  });
});

Deno.test("echo: a task log quotes a parameter an earlier request carried", async () => {
  await withSim(async (sim) => {
    assert.equal(
      await lastLogLineUnderEcho(sim, { timeout: 30 }, {
        param: "timeout",
        form: "raw",
      }),
      "proxy: timeout=30",
    );
  });
});

Deno.test("stores: a clone runs to its end but stores the fault's values", async () => {
  await withSim(async (sim) => {
    sim.fault({
      method: "POST",
      pathRegex: "/clone$",
      kind: "stores",
      config: { memory: 512 },
    });
    const clone = await api(sim.url, "POST", "/nodes/pve1/qemu/100/clone", {
      newid: 300,
      name: "web2",
    }, AUTH);
    assert.equal(clone.status, 200, JSON.stringify(clone.body));
    await waitTask(sim.url, String(clone.body.data), AUTH);
    assert.equal(sim.guest(300)?.name, "web2");
    assert.equal(sim.guest(300)?.config.memory, 512);
  });
});
