/** `--input` pairs read as the swamp CLI reads them (harness/cli_inputs.ts). */
import assert from "node:assert/strict";
import { InputError, parseInputPairs } from "../../harness/cli_inputs.ts";

Deno.test("--input: the key ends at the first '=', the value keeps the rest", () => {
  assert.deepEqual(parseInputPairs(["net=virtio,bridge=vmbr0"]), {
    net: "virtio,bridge=vmbr0",
  });
});

Deno.test("--input: dotted keys build one nested object", () => {
  assert.deepEqual(
    parseInputPairs([
      "config.virtio0=local-lvm:0,import-from=local:import/a.qcow2",
      "config.net0=virtio,bridge=vmbr0",
      "vmid=120",
    ]),
    {
      config: {
        virtio0: "local-lvm:0,import-from=local:import/a.qcow2",
        net0: "virtio,bridge=vmbr0",
      },
      vmid: "120",
    },
  );
});

Deno.test("--input: a ':json' key parses its value as JSON", () => {
  assert.deepEqual(parseInputPairs(['config:json={"cores":2}']), {
    config: { cores: 2 },
  });
});

Deno.test("--input: a pair without '=', an empty key, bad JSON and __proto__ are refused", () => {
  for (
    const bad of ["vmid", "=1", "config:json={", "__proto__.polluted=1"]
  ) {
    assert.throws(() => parseInputPairs([bad]), InputError, bad);
  }
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
});
