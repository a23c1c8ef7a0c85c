/**
 * The node-side pvesh fixture (pvesh.py) through a real ssh hop: it must show a client what real pvesh
 * shows (see pvesh.py's header for the sources): JSON on stdout; task workers in the foreground with
 * their output first, exit 0 and the UPID even when the task failed; handler errors as a non-zero exit
 * (255 by default: Perl's die fallback, the same number ssh uses) with PVE's words on stderr.
 */
import assert from "node:assert/strict";
import { withEnv } from "../e2e/env.ts";
import { remote } from "./remote.ts";

const JSON_OUT = "--output-format=json";
const UPID_LINE =
  /^"UPID:pve1:[0-9A-F]{8}:[0-9A-F]{8,9}:[0-9A-F]{8}:[^:]+:\d*:[^:]+:"$/;

Deno.test("pvesh: get prints compact JSON with sorted keys and exits 0", async () => {
  await withEnv({ via: "ssh" }, async (env) => {
    const r = await remote(env.ssh!, ["pvesh", "get", "/version", JSON_OUT]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, "");
    assert.equal(
      r.stdout,
      '{"release":"9.0","repoid":"025864202ebb6109","version":"9.0.3"}\n',
    );
    assert.deepEqual((await env.ssh!.calls()).at(-1), [
      "get",
      "/version",
      JSON_OUT,
    ]);
  });
});

Deno.test("pvesh: --k=v, --k v, -k v and -k=v all pass; a repeated key is an array", async () => {
  await withEnv({ via: "ssh" }, async (env) => {
    const r = await remote(env.ssh!, [
      "pvesh",
      "create",
      "/nodes/pve1/qemu/100/agent/exec",
      "--command=printf",
      "--command",
      "%s|%s|%s",
      "-command",
      "a",
      "-command=b",
      "--output-format",
      "json",
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^\{"pid":\d+\}\n$/);
    const sent = env.sim.requests.find((q) => q.path.endsWith("/agent/exec"));
    assert.deepEqual(sent?.form, [
      ["command", "printf"],
      ["command", "%s|%s|%s"],
      ["command", "a"],
      ["command", "b"],
    ]);
  });
});

Deno.test("pvesh: a task runs in the foreground, its output first, then the UPID, exit 0", async () => {
  await withEnv({ via: "ssh" }, async (env) => {
    env.sim.setGuest(100, {
      config: { scsi0: "local-zfs:vm-100-disk-0,size=32G" },
    });
    env.sim.nextTask({
      durationMs: 400,
      warnings: ["no efidisk configured! Using temporary efivars disk."],
    });
    const r = await remote(env.ssh!, [
      "pvesh",
      "set",
      "/nodes/pve1/qemu/100/resize",
      "--disk=scsi0",
      "--size=+1G",
      JSON_OUT,
    ]);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trimEnd().split("\n");
    assert.deepEqual(lines.slice(0, -1), [
      "update VM 100: resize --disk scsi0 --size +1G",
      "WARN: no efidisk configured! Using temporary efivars disk.",
    ]);
    assert.match(lines.at(-1)!, UPID_LINE);
    assert.equal(r.stderr, "Task finished with 1 warning(s)!\n");
    // pvesh returned only once the task had ended.
    const upid = JSON.parse(lines.at(-1)!) as string;
    assert.equal(env.sim.task(upid)?.status, "stopped");
    assert.ok(r.ms >= 400, `returned after ${r.ms} ms`);
  });
});

Deno.test("pvesh: a FAILED task still exits 0 and prints the UPID; the error goes to stderr", async () => {
  await withEnv({ via: "ssh" }, async (env) => {
    env.sim.nextTask({ exitstatus: "start failed: QEMU exited with code 1" });
    const r = await remote(env.ssh!, [
      "pvesh",
      "create",
      "/nodes/pve1/qemu/102/status/start",
      JSON_OUT,
    ]);
    assert.equal(r.code, 0);
    assert.match(r.stdout.trimEnd().split("\n").at(-1)!, UPID_LINE);
    assert.equal(r.stderr, "start failed: QEMU exited with code 1\n");
    assert.equal(env.sim.guest(102)?.status, "stopped", "no effect");
  });
});

Deno.test("pvesh: a handler error exits non-zero (255 by default) with PVE's bare message", async () => {
  await withEnv({ via: "ssh" }, async (env) => {
    const path = "/nodes/pve1/qemu/999/status/current";
    const r = await remote(env.ssh!, ["pvesh", "get", path, JSON_OUT]);
    assert.equal(r.code, 255);
    assert.equal(r.stdout, "");
    assert.equal(
      r.stderr,
      "Configuration file 'nodes/pve1/qemu-server/999.conf' does not exist\n",
    );
    // The number is Perl's die rule (errno, else 255), not a contract: it can be anything non-zero.
    await env.ssh!.setKnobs({ dieExitCode: 2 });
    assert.equal(
      (await remote(env.ssh!, ["pvesh", "get", path, JSON_OUT])).code,
      2,
    );
  });
});

Deno.test("pvesh: an error with an HTTP code prints `<code> <message>` and one line per parameter", async () => {
  await withEnv({ via: "ssh" }, async (env) => {
    env.sim.fault({
      pathRegex: "/qemu/100/status/current$",
      kind: "status",
      status: 403,
      message: "Permission check failed (/vms/100, VM.Audit)",
    });
    const denied = await remote(env.ssh!, [
      "pvesh",
      "get",
      "/nodes/pve1/qemu/100/status/current",
      JSON_OUT,
    ]);
    assert.notEqual(denied.code, 0);
    assert.equal(
      denied.stderr,
      "403 Permission check failed (/vms/100, VM.Audit)\n",
    );
    const bad = await remote(env.ssh!, [
      "pvesh",
      "get",
      "/cluster/resources",
      "--type=qemu",
      JSON_OUT,
    ]);
    assert.notEqual(bad.code, 0);
    assert.equal(
      bad.stderr,
      "400 Parameter verification failed.\n" +
        "type: value 'qemu' does not have a value in the enumeration 'vm, storage, node, sdn'\n",
    );
  });
});

Deno.test("pvesh: an option the endpoint does not have is 400 unable to parse option (Getopt, before validation)", async () => {
  await withEnv({ via: "ssh" }, async (env) => {
    const bad = await remote(env.ssh!, [
      "pvesh",
      "get",
      "/nodes/pve1/qemu/100/status/current",
      "--bogus=1",
      JSON_OUT,
    ]);
    assert.notEqual(bad.code, 0);
    assert.equal(bad.stderr, "400 unable to parse option\n");
  });
});

Deno.test("pvesh: an unknown path exits 1 before anything else", async () => {
  await withEnv({ via: "ssh" }, async (env) => {
    const r = await remote(env.ssh!, ["pvesh", "get", "/nope", JSON_OUT]);
    assert.equal(r.code, 1);
    assert.equal(r.stderr, "No 'get' handler defined for '/nope'\n");
  });
});
