/**
 * guestExec's bytes end to end, over both transports: the guest receives exactly the UTF-8 bytes of
 * `inputData` (PVE would turn `ü` into a Latin-1 byte and die on `€`), and the record holds the
 * guest's output decoded as UTF-8 (PVE double-encodes it), with byte counts; invalid UTF-8 is
 * replaced and flagged.
 */
import assert from "node:assert/strict";
import { withEnv, written } from "./env.ts";

const TRANSPORTS = ["api", "ssh"] as const;
const TEXT = "grüße 5 € 🚀";

/** `od`'s hex dump of a text's UTF-8 bytes, as the guest's `od -An -tx1 -v` prints it (joined). */
function hexOf(text: string): string {
  return [...new TextEncoder().encode(text)].map((b) =>
    b.toString(16).padStart(2, "0")
  ).join(
    " ",
  );
}

for (const via of TRANSPORTS) {
  Deno.test(`guestExec over ${via}: inputData reaches the guest as its exact UTF-8 bytes (ü, €, an emoji)`, async () => {
    await withEnv({ via }, async (env) => {
      const r = await env.run("guestExec", {
        vmid: 100,
        command: ["od", "-An", "-tx1", "-v"],
        inputData: TEXT,
      });
      assert.equal(r.status, "succeeded", r.error);
      const dump = String(written(r, "vm-100-exec").stdout).trim().split(/\s+/)
        .join(" ");
      assert.equal(dump, hexOf(TEXT));
    });
  });

  Deno.test(`guestExec over ${via}: UTF-8 output is recorded as the text the guest wrote, with its byte count`, async () => {
    await withEnv({ via }, async (env) => {
      const r = await env.run("guestExec", {
        vmid: 100,
        command: ["cat"],
        inputData: TEXT,
      });
      assert.equal(r.status, "succeeded", r.error);
      const rec = written(r, "vm-100-exec");
      assert.equal(rec.stdout, TEXT);
      assert.equal(rec.stdoutBytes, new TextEncoder().encode(TEXT).length);
      assert.equal(rec.stdoutInvalidUtf8, false);
      assert.equal(rec.stdoutTruncated, false);
    });
  });

  Deno.test(`guestExec over ${via}: a NUL in the output is kept`, async () => {
    await withEnv({ via }, async (env) => {
      const r = await env.run("guestExec", {
        vmid: 100,
        command: ["printf", "a\\000b"],
      });
      assert.equal(r.status, "succeeded", r.error);
      const rec = written(r, "vm-100-exec");
      assert.equal(rec.stdout, "a\0b");
      assert.equal(rec.stdoutBytes, 3);
    });
  });

  Deno.test(`guestExec over ${via}: invalid UTF-8 output is replaced by U+FFFD and flagged`, async () => {
    await withEnv({ via }, async (env) => {
      const r = await env.run("guestExec", {
        vmid: 100,
        command: ["bash", "-c", "printf 'ok \\377\\376' >&2"],
      });
      assert.equal(r.status, "succeeded", r.error);
      const rec = written(r, "vm-100-exec");
      assert.equal(rec.stderr, "ok \ufffd\ufffd");
      assert.equal(rec.stderrBytes, 5);
      assert.equal(rec.stderrInvalidUtf8, true);
      assert.equal(rec.stdoutInvalidUtf8, false);
      assert.match(
        r.logs.map((l) => l.message).join("\n"),
        /stderr \(5 bytes\) is not valid UTF-8/,
      );
    });
  });
}
