/**
 * The core compares config values by their type in PVE's schema: `src/pve/config_keys.rs` is
 * generated from apidata.json by scripts/gen_config_keys.ts. These tests prove the committed table
 * is what the generator makes of the schema today (it cannot drift), and that every key the schema
 * has — hyphenated ones included — passes both the zod rule and the core's rule for option keys.
 */
import assert from "node:assert/strict";
import { generate, OUTPUT } from "../../scripts/gen_config_keys.ts";
import { readApidata } from "../../simulator/schema/apidata.ts";
import { model } from "../../js/proxmox_qemu.ts";
import { model as lxcModel } from "../../js/proxmox_lxc.ts";
import { validateOnCore } from "../../js/_lib/core.ts";
import { NOT_CONFIG_KEYS } from "../../js/_lib/schemas.ts";
import { PACKAGE } from "../../harness/project_package.ts";

type ApiNode = Parameters<typeof generate>[0][number];
const apidata = await readApidata<ApiNode[]>();
function keysOf(path: string): string[] {
  const walk = (nodes: ApiNode[]): ApiNode | undefined => {
    for (const node of nodes) {
      if (node.path === path) return node;
      const hit = walk(node.children ?? []);
      if (hit) return hit;
    }
  };
  const props = walk(apidata)?.info?.PUT?.parameters?.properties ?? {};
  return Object.keys(props).map((k) => k.replace("[n]", "0"))
    .filter((k) => !NOT_CONFIG_KEYS.includes(k) && k !== "delete");
}

Deno.test("config keys: the committed table is the one the schema generates", async () => {
  assert.equal(await Deno.readTextFile(OUTPUT), generate(apidata));
});

const global = {
  name: "x",
  transport: {
    kind: "api",
    node: "pve1",
    apiUrl: "https://pve1:8006",
    tokenId: "root@pam!t",
    tokenSecret: "s3cret-s3cret",
  },
};

for (
  const [name, methods, path] of [
    ["qemu", model.methods, "/nodes/{node}/qemu/{vmid}/config"],
    ["lxc", lxcModel.methods, "/nodes/{node}/lxc/{vmid}/config"],
  ] as const
) {
  Deno.test(`config keys: zod and the core accept every ${name} schema key, hyphens included`, () => {
    const keys = keysOf(path);
    assert.ok(keys.length > 30, `${keys.length} keys`);
    if (name === "qemu") {
      for (const k of ["allow-ksm", "amd-sev", "intel-tdx"]) {
        assert.ok(keys.includes(k), k);
      }
    }
    for (const key of keys) {
      const args = { vmid: 100, config: { [key]: "1" } };
      const zod = methods.setConfig.arguments.safeParse(args);
      assert.ok(zod.success, `zod refused ${key}`);
      const core = validateOnCore(PACKAGE, name, "setConfig", {
        ...global,
        ...args,
      });
      assert.equal(core, undefined, `core refused ${key}: ${core}`);
    }
  });
}
