/**
 * The argument rules exist twice — zod in the package (what swamp checks) and Rust in the core (what
 * the core checks). These properties prove they accept and reject the same inputs, over generated
 * arguments that mix valid values with every kind of invalid one.
 */
import assert from "node:assert/strict";
import fc from "npm:fast-check@4";
import { model } from "../../js/proxmox_qemu.ts";
import { validateOnCore } from "../../js/_lib/core.ts";

const RUNS = 5000;

const tricky = fc.constantFrom(
  "",
  "pve1",
  "pve-1.lan",
  "Node_9",
  "a b",
  "a/b",
  "..",
  ".",
  "a?b",
  "a#b",
  "a%2f",
  "-x",
  "ü",
  "x\ny",
  "x\ry",
  "x\0y",
  "root",
  "root@pam!swamp",
  "https://pve1:8006",
  "http://127.0.0.1:8006/",
  "https:///x",
  "ftp://x",
  "yes",
  "accept-new",
  "no",
  "off",
  "maybe",
  "\u00a0",
  "\ufeff",
  "a\u2028b",
);
const text = fc.oneof(
  tricky,
  fc.string(),
  fc.string({ unit: "grapheme", maxLength: 8 }),
);
const number = fc.oneof(
  fc.constantFrom(
    0,
    -1,
    1,
    1.5,
    22,
    99,
    100,
    255,
    256,
    3600,
    3601,
    65535,
    65536,
    86400,
    86401,
    604800,
    604801,
  ),
  fc.constantFrom(999999999, 1000000000, 2 ** 53, 1e21, -0),
  fc.integer({ min: -1000, max: 2_000_000_000 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);
const anything = fc.oneof(
  text,
  number,
  fc.boolean(),
  fc.constant(null),
  fc.array(text, { maxLength: 3 }),
  fc.array(number, { maxLength: 3 }),
);
const singleLine = fc.string({ minLength: 1 }).filter((s) =>
  !/[\n\r\0]/.test(s)
);

/** Mostly a valid value, sometimes anything at all: most samples are valid, each field gets broken. */
const mix = <T>(valid: fc.Arbitrary<T>) =>
  fc.oneof(
    { arbitrary: valid, weight: 20 },
    { arbitrary: anything, weight: 1 },
    {
      arbitrary: tricky,
      weight: 1,
    },
  );
/** An optional field: absent, or mixed. */
const opt = <T>(valid: fc.Arbitrary<T>) =>
  fc.option(mix(valid), { nil: undefined, freq: 3 });

function object(
  fields: Record<string, fc.Arbitrary<unknown>>,
): fc.Arbitrary<Record<string, unknown>> {
  return fc.record(fields).map((o) =>
    Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined))
  );
}

const node = fc.constantFrom("pve1", "pve-2.lan", "N_9");
/** An integer in range, with the values on and just past each bound weighted in. */
const bounded = (min: number, max: number) =>
  fc.oneof({ arbitrary: fc.integer({ min, max }), weight: 3 }, {
    arbitrary: fc.constantFrom(min - 1, min, max, max + 1, min + 0.5),
    weight: 1,
  });
const seconds = (max: number) => bounded(1, max);

const apiTransport = object({
  kind: mix(fc.constant("api")),
  node: mix(node),
  apiUrl: mix(fc.constantFrom("https://pve1:8006", "http://127.0.0.1:8006/")),
  tokenId: mix(fc.constantFrom("root@pam!swamp", "ops@pve!ci")),
  tokenSecret: mix(singleLine),
  caCert: opt(fc.string()),
  skipTlsVerify: opt(fc.boolean()),
});

const sshTransport = object({
  kind: mix(fc.constant("ssh")),
  node: mix(node),
  host: mix(fc.constantFrom("pve1.lan", "10.0.0.1", "h")),
  user: opt(fc.constantFrom("root", "admin")),
  port: opt(bounded(1, 65535)),
  proxyJump: opt(singleLine),
  proxyCommand: opt(singleLine),
  identityFile: opt(singleLine),
  identityAgent: opt(singleLine),
  strictHostKeyChecking: opt(fc.constantFrom("yes", "accept-new", "no", "off")),
  connectTimeoutSec: opt(seconds(3600)),
  sshBinary: opt(singleLine),
  pveshBinary: opt(singleLine),
});

const globalArgs = object({
  name: mix(fc.string({ minLength: 1 })),
  transport: fc.oneof({ arbitrary: apiTransport, weight: 10 }, {
    arbitrary: sshTransport,
    weight: 10,
  }, {
    arbitrary: anything,
    weight: 1,
  }),
  taskTimeoutSec: opt(seconds(604800)),
  pollIntervalSec: opt(seconds(3600)),
});

const vmid = bounded(100, 999999999);
const guestRef = { vmid: opt(vmid), vmName: opt(singleLine) };

const methodArgs: Record<string, fc.Arbitrary<Record<string, unknown>>> = {
  lookup: object(guestRef),
  guestExec: object({
    ...guestRef,
    command: mix(
      fc.array(fc.string({ minLength: 1 }).filter((s) => !s.includes("\0")), {
        minLength: 1,
        maxLength: 4,
      }),
    ),
    timeoutSec: opt(seconds(86400)),
    allowNonZeroExit: opt(fc.boolean()),
    allowedExitCodes: opt(
      fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 3 }),
    ),
    inputData: opt(fc.string({ maxLength: 20 })),
  }),
  start: object({
    ...guestRef,
    waitForIp: opt(fc.boolean()),
    allowNoIp: opt(fc.boolean()),
  }),
  stop: object({ ...guestRef, force: opt(fc.boolean()) }),
  shutdown: object({
    ...guestRef,
    timeoutSec: opt(seconds(86400)),
    forceStopAfter: opt(fc.boolean()),
    force: opt(fc.boolean()),
  }),
  delete: object({
    ...guestRef,
    purge: opt(fc.boolean()),
    force: opt(fc.boolean()),
  }),
  clone: object({
    templateId: mix(fc.oneof(vmid, fc.constant(9000))),
    vmid: mix(fc.oneof(vmid, fc.constant(9000))),
    name: opt(singleLine),
    full: opt(fc.boolean()),
    storage: opt(singleLine),
  }),
  getConfig: object(guestRef),
  setConfig: object({
    ...guestRef,
    config: mix(fc.dictionary(
      fc.oneof(
        {
          arbitrary: fc.constantFrom(
            "memory",
            "net0",
            "sshkeys",
            "delete",
            "a_1",
          ),
          weight: 12,
        },
        {
          arbitrary: fc.constantFrom("digest", "vmid", "9x", "a-b", "", "_x"),
          weight: 1,
        },
        { arbitrary: fc.string({ maxLength: 3 }), weight: 1 },
      ),
      fc.oneof(
        { arbitrary: fc.string({ maxLength: 8 }), weight: 6 },
        { arbitrary: number, weight: 6 },
        { arbitrary: fc.constantFrom(true, null), weight: 1 },
      ),
      { minKeys: 0, maxKeys: 2 },
    )),
  }),
  resizeDisk: object({
    ...guestRef,
    disk: opt(
      fc.constantFrom(
        "scsi0",
        "virtio15",
        "sata1",
        "ide3",
        "efidisk0",
        "scsi",
        "scsi0a",
        "SCSI0",
        "scsi\u0663",
      ),
    ),
    size: mix(
      fc.oneof(
        {
          arbitrary: fc.constantFrom("+1G", "50G", "1.5T", "512", "+0"),
          weight: 6,
        },
        {
          arbitrary: fc.constantFrom(
            "1.G",
            "1GB",
            "+",
            "-1G",
            " 1G",
            "1g",
            "1G\n",
            "99999999999999999999999T",
          ),
          weight: 1,
        },
      ),
    ),
  }),
  sync: object({
    ...guestRef,
    scope: opt(fc.constantFrom("node", "cluster", "world")),
    node: opt(node),
  }),
  nodeStatus: object({ node: opt(node) }),
  nodeConfig: object({ node: opt(node) }),
};

type Schema = {
  safeParse(value: unknown): { success: boolean; error?: unknown };
};
const methods = model.methods as unknown as Record<
  string,
  { arguments: Schema }
>;

function zodAccepts(
  method: string,
  global: Record<string, unknown>,
  args: Record<string, unknown>,
): boolean {
  const g = (model.globalArguments as unknown as Schema).safeParse(global);
  return g.success &&
    methods[method].arguments.safeParse({ ...global, ...args }).success;
}

for (const method of Object.keys(methodArgs)) {
  Deno.test(`argument rules: zod and the core agree on ${method}`, () => {
    fc.assert(
      fc.property(globalArgs, methodArgs[method], (global, args) => {
        // A method argument named like a global one (clone's `name`) shadows it in the merged
        // object the core receives; the global checks then apply to what the core sees.
        const merged = { ...global, ...args };
        const seen = Object.fromEntries(
          Object.keys(global).map((k) => [k, merged[k]]),
        );
        const zod = zodAccepts(method, seen, args);
        const core = validateOnCore("qemu", method, merged);
        assert.equal(
          zod,
          core === undefined,
          `zod ${zod ? "accepts" : "rejects"}, core says: ${core ?? "valid"}`,
        );
      }),
      { numRuns: RUNS, seed: 20261129 },
    );
  });

  Deno.test(`argument rules: the generator of ${method} yields both valid and invalid arguments`, () => {
    const verdicts = fc.sample(fc.tuple(globalArgs, methodArgs[method]), {
      numRuns: 500,
      seed: 7,
    })
      .map(([global, args]) =>
        validateOnCore("qemu", method, { ...global, ...args }) === undefined
      );
    const valid = verdicts.filter(Boolean).length;
    // Without both kinds, agreement on one side would go untested.
    assert.ok(valid > 50 && valid < 450, `${valid} of 500 samples valid`);
  });
}

Deno.test("argument rules: the core's errors name the field", () => {
  const global = {
    name: "x",
    transport: {
      kind: "api",
      node: "a/b",
      apiUrl: "http://h",
      tokenId: "t",
      tokenSecret: "s",
    },
  };
  assert.match(
    validateOnCore("qemu", "lookup", { ...global, vmid: 100 }) ?? "",
    /`transport\.node`/,
  );
});
