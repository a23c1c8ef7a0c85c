/**
 * The method-scope report on scripted runs: a success lists what its records say; a failure shows
 * its error.
 *
 * @module
 */
import assert from "node:assert/strict";
import { report } from "./observed_method_report.ts";
import { rowOf } from "./observed.ts";

function context(
  status: string,
  records: Record<string, unknown>,
  error?: string,
) {
  return {
    modelType: "@stateless/proxmox/qemu",
    modelId: "m-1",
    definition: { name: "fleet" },
    methodName: "setConfig",
    executionStatus: status,
    ...(error ? { errorMessage: error } : {}),
    dataHandles: Object.keys(records).map((name) => ({
      name,
      version: 1,
      kind: "resource",
    })),
    dataRepository: {
      findAllForModel: () => Promise.resolve([]),
      getContent: (_t: unknown, _id: string, name: string) =>
        Promise.resolve(
          new TextEncoder().encode(JSON.stringify(records[name])),
        ),
    },
  };
}

Deno.test("method report: a setConfig that left keys pending shows them", async () => {
  const result = await report.execute(context("succeeded", {
    "vm-100": {
      vmid: 100,
      present: true,
      status: "running",
      pending: { memory: 4096 },
      pendingDelete: ["net1"],
    },
  }));
  assert.match(
    result.markdown,
    /\| {2}\| setConfig \| succeeded \| running \| memory, -net1 \|/,
  );
  assert.deepEqual(result.json.rows[0].pending, ["memory", "-net1"]);
});

Deno.test("method report: a failed run shows its error", async () => {
  const result = await report.execute(
    context("failed", {}, "VM 100 did not reach status running"),
  );
  assert.match(
    result.markdown,
    /setConfig: failed — VM 100 did not reach status running/,
  );
  assert.equal(result.json.error, "VM 100 did not reach status running");
});

Deno.test("method report: a backup's archive and a listing show under their guest", () => {
  const archive = rowOf(
    "vm-120-backup",
    {
      volid: "local:backup/vzdump-qemu-120-2026_12_01-10_00_00.vma",
      size: 4096,
    },
    "backup",
    "succeeded",
  );
  assert.equal(archive.subject, "vm-120");
  assert.equal(
    archive.observed,
    "archive local:backup/vzdump-qemu-120-2026_12_01-10_00_00.vma",
  );
  const listing = rowOf(
    "ct-300-backups",
    { backups: [{}, {}] },
    "listBackups",
    "succeeded",
  );
  assert.equal(listing.subject, "ct-300");
  assert.equal(listing.observed, "2 backup(s) listed");
});
