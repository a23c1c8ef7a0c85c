/**
 * A password the method itself sent, echoed back (a proxy's or a hook's 500, a 400's per-parameter
 * error, a task log line), in every spelling the simulator's echo fault has: raw, percent-encoded,
 * as the form body carried it, base64. It must reach no error, log line or record.
 */
import assert from "node:assert/strict";
import { demoGuests } from "../../simulator/demo_cluster.ts";
import type {
  EchoInto,
  ParamEchoForm,
  SimGuest,
} from "../../simulator/types.ts";
import { CREATE_400, withCt } from "./lxc_fixture.ts";
import { type Env, withEnv } from "./env.ts";
import type { RunResult } from "../../harness/types.ts";

/**
 * Space, slash, plus, a quote, an ampersand, a less-than and a non-ASCII letter: every spelling
 * differs from the raw value.
 */
const PASSWORD = "pw Zq/8'1+&<nié";
const FORMS: ParamEchoForm[] = [
  "raw",
  "percent",
  "form",
  "base64",
  "html",
  "shell",
  "hex-escaped",
];

const spellings = [
  PASSWORD,
  encodeURIComponent(PASSWORD),
  new URLSearchParams([["p", PASSWORD]]).toString().slice(2),
  btoa(String.fromCharCode(...new TextEncoder().encode(PASSWORD))),
  "pw Zq/8&#39;1+&amp;&lt;nié",
  "pw Zq/8'\\''1+&<nié",
  "pw\\x20Zq\\x2f8\\x271\\x2b\\x26\\x3cni\\xc3\\xa9",
];

/** The run's error, log lines and records hold no spelling of the password, and show the cut. */
function assertScrubbed(r: RunResult, what: string) {
  assert.equal(r.status, "failed", what);
  assert.match(
    r.error ?? "",
    /='?\*\*\*/,
    `${what}: the echo is shown redacted`,
  );
  // Every string as it is (a JSON text of them would double the backslashes of two spellings).
  const said = stringsIn({ e: r.error, l: r.logs, w: r.written });
  for (const s of spellings) {
    assert.ok(!said.some((t) => t.includes(s)), `${what} leaks ${s}`);
  }
}

function stringsIn(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (value === null || typeof value !== "object") return [];
  return Object.entries(value).flatMap(([key, v]) => [key, ...stringsIn(v)]);
}

function echo(
  env: Env,
  into: EchoInto,
  param: string,
  form: ParamEchoForm,
  method: string,
  pathRegex: string,
) {
  env.sim.fault({ method, pathRegex, kind: "echo", into, param, form });
}

for (const via of ["api", "ssh"] as const) {
  Deno.test(`setConfig (${via}): a 400 quoting the cipassword it sent leaks it nowhere`, async () => {
    await withEnv({ via }, async (env) => {
      for (const form of FORMS) {
        echo(env, "400", "cipassword", form, "PUT", "/qemu/102/config$");
        const r = await env.run("setConfig", {
          vmid: 102,
          config: { cipassword: PASSWORD },
        });
        assertScrubbed(r, `setConfig (${form})`);
      }
    });
  });
}

const ciVm: SimGuest = {
  vmid: 740,
  node: "pve1",
  type: "qemu",
  name: "web",
  status: "stopped",
  tags: ["swamp"],
  config: {
    ide2: "local-lvm:vm-740-cloudinit,media=cdrom",
    scsi0: "local-lvm:vm-740-disk-0,size=8G",
  },
};

Deno.test("cloudInit: a 500 of the regeneration quoting the cipassword sent before leaks it nowhere", async () => {
  await withEnv({ guests: [...demoGuests(), ciVm] }, async (env) => {
    for (const form of FORMS) {
      echo(env, "500", "cipassword", form, "PUT", "/qemu/740/cloudinit$");
      const r = await env.run("cloudInit", {
        vmid: 740,
        ciuser: "ops",
        cipassword: PASSWORD,
      });
      assertScrubbed(r, `cloudInit (${form})`);
    }
  });
});

const createArgs = { ...CREATE_400, config: { password: PASSWORD } };

for (const via of ["api", "ssh"] as const) {
  Deno.test(`lxc create (${via}): a 500 quoting the password it sent leaks it nowhere`, async () => {
    await withCt({ via }, async (env) => {
      for (const form of FORMS) {
        echo(
          env,
          "500",
          "password",
          form,
          "POST",
          "^/api2/json/nodes/pve1/lxc$",
        );
        assertScrubbed(await env.run("create", createArgs), `create (${form})`);
      }
    });
  });
}

Deno.test("lxc create: a task log quoting the password it sent leaks it nowhere", async () => {
  await withCt({}, async (env) => {
    for (const form of FORMS) {
      env.sim.nextTask({ exitstatus: "unable to create CT 400 - boom" });
      echo(env, "log", "password", form, "GET", "/tasks/.*/log$");
      assertScrubbed(await env.run("create", createArgs), `create (${form})`);
    }
  });
});
