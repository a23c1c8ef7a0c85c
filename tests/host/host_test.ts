/**
 * The wrapper's host (js/_lib/host.ts): what a run leaves behind once it has ended, and how it
 * hands log lines to swamp's logger.
 */
import assert from "node:assert/strict";
import { createHost, log } from "../../js/_lib/host.ts";
import { createCelEnvironment } from "../../harness/cel.ts";

const quiet = { logger: { info() {}, error() {} } };

Deno.test("host: closing a run's host ends the pauses it left behind", async () => {
  const host = createHost(quiet);
  // A pause the core raced against a shared list read and dropped: nobody awaits it any more.
  const pause = host.sleep(600_000).then(() => "ended");
  host.close();
  const later = new Promise<string>((resolve) => {
    const timer = setTimeout(() => resolve("still pending"), 50);
    pause.then(() => clearTimeout(timer));
  });
  assert.equal(await Promise.race([pause, later]), "ended");
});

Deno.test("host: a fleet's runs leave nothing that keeps the process alive after them", async () => {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-all",
      new URL("./fleet_child.ts", import.meta.url).pathname,
    ],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  // A guard only, not a figure: without the fix a dropped pause held the child for its budget.
  const guard = setTimeout(() => child.kill("SIGKILL"), 60_000);
  const out = await child.output();
  clearTimeout(guard);
  const text = new TextDecoder().decode(out.stdout).trim();
  assert.equal(text, "succeeded,succeeded,succeeded");
  assert.equal(
    out.signal,
    null,
    "the child had to be killed: something held it after the runs",
  );
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
});

Deno.test("host: a log message with braces goes as a property, not as a template swamp's logger would blank", () => {
  const calls: unknown[][] = [];
  const logger = {
    info: (...args: unknown[]) => void calls.push(["info", ...args]),
    warning: (...args: unknown[]) => void calls.push(["warning", ...args]),
    error: (...args: unknown[]) => void calls.push(["error", ...args]),
  };
  log({ logger }, "info", 'VM 100: started ["awk", "{print $1}"]');
  log({ logger }, "warning", "no braces here");
  assert.deepEqual(calls, [
    ["info", "{message}", { message: 'VM 100: started ["awk", "{print $1}"]' }],
    ["warning", "no braces here"],
  ]);
});

Deno.test("host: select evaluates in the run's swamp CEL environment, compiling each expression once", () => {
  let environments = 0;
  const host = createHost({
    ...quiet,
    createCelEnvironment: () => {
      environments++;
      return createCelEnvironment();
    },
  });
  const where = 'vmid % 2 == 0 && "web" in tags';
  assert.equal(host.select(where, '{"vmid":100,"tags":["web"]}'), true);
  assert.equal(host.select(where, '{"vmid":101,"tags":["web"]}'), false);
  assert.equal(environments, 1);
  assert.throws(() => host.select("vmid ==", "{}"), /Unexpected token/);
  host.close();
});

Deno.test("host: select without swamp's CEL environment throws saying so", () => {
  const host = createHost(quiet);
  assert.throws(
    () => host.select("true", "{}"),
    /no CEL environment \(ctx\.createCelEnvironment\)/,
  );
  host.close();
});

Deno.test("host: writeFile stores the text with swamp's file writer, returns the stored name and keeps the handle", async () => {
  const written: [string, string, string][] = [];
  const host = createHost({
    ...quiet,
    createFileWriter: (spec, name) => ({
      writeText: (text) => {
        written.push([spec, name, text]);
        return Promise.resolve({ name: `${name}-stored` });
      },
    }),
  });
  assert.equal(
    await host.writeFile("taskLog", "tasklog-pve1-1-2", "a\nb\n"),
    "tasklog-pve1-1-2-stored",
  );
  assert.deepEqual(written, [["taskLog", "tasklog-pve1-1-2", "a\nb\n"]]);
  assert.deepEqual(host.files, [{ name: "tasklog-pve1-1-2-stored" }]);
  host.close();
});

Deno.test("host: writeFile without swamp's file writer stores nothing and answers null", async () => {
  const host = createHost(quiet);
  assert.equal(
    await host.writeFile("taskLog", "tasklog-pve1-1-2", "a\n"),
    null,
  );
  assert.deepEqual(host.files, []);
  host.close();
});

Deno.test("host: readRecords reads the records in order, a few at a time, with null for one missing or unreadable", async () => {
  let inFlight = 0;
  let most = 0;
  const stored: Record<string, unknown> = {
    "vm-1": { name: "a" },
    "vm-3": { name: "c" },
  };
  const host = createHost({
    ...quiet,
    async readResource(instance: string) {
      inFlight++;
      most = Math.max(most, inFlight);
      await new Promise((resolve) => setTimeout(resolve, 1));
      inFlight--;
      if (instance === "vm-4") throw new Error("unreadable");
      return stored[instance] ?? null;
    },
  });
  const names = Array.from({ length: 40 }, (_, i) => `vm-${i + 1}`);
  const records = await host.readRecords(names);
  assert.equal(records.length, 40);
  assert.deepEqual(records.slice(0, 4), [
    { name: "a" },
    null,
    { name: "c" },
    null,
  ]);
  assert.ok(
    most > 1 && most <= 8,
    `at most 8 reads at once, and more than one: ${most}`,
  );
  host.close();
});

Deno.test("host: readRecords without swamp's readResource answers null for each", async () => {
  const host = createHost(quiet);
  assert.deepEqual(await host.readRecords(["vm-1", "vm-2"]), [null, null]);
  host.close();
});
