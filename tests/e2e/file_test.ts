/**
 * fileWrite and fileRead end to end through the real qemu-ga behind the simulator (its files are
 * this machine's, in a temp dir): a write succeeds only when the read-back matches byte for byte;
 * files beyond one file-write are written in parts and joined; reads are bounded with `truncated`.
 */
import assert from "node:assert/strict";
import { withEnv, written } from "./env.ts";

/** Bytes 0..255 repeated: every byte value, not UTF-8. */
function binary(length: number): Uint8Array {
  return Uint8Array.from({ length }, (_, i) => (i * 7 + 3) % 256);
}

function base64(bytes: Uint8Array): string {
  let bin = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(bin);
}

async function inTempDir(body: (dir: string) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "swamp-file-test-" });
  try {
    await body(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("fileWrite: a text file is written and verified by reading it back", async () => {
  await inTempDir(async (dir) => {
    await withEnv({}, async (env) => {
      const path = `${dir}/motd`;
      const r = await env.run("fileWrite", {
        vmid: 100,
        path,
        content: "hello ü\nit's $HOME\n",
      });
      assert.equal(r.status, "succeeded", r.error);
      assert.equal(await Deno.readTextFile(path), "hello ü\nit's $HOME\n");
      const rec = written(r, "vm-100-file");
      assert.equal(rec.verified, true);
      assert.equal(rec.chunks, 1);
    });
  });
});

Deno.test("fileWrite: 200 KB of binary is written in parts, joined and matches byte for byte", async () => {
  await inTempDir(async (dir) => {
    await withEnv({}, async (env) => {
      const path = `${dir}/blob.bin`;
      const bytes = binary(200 * 1024);
      const r = await env.run("fileWrite", {
        vmid: 100,
        path,
        contentBase64: base64(bytes),
        mode: "0600",
      });
      assert.equal(r.status, "succeeded", r.error);
      assert.deepEqual(await Deno.readFile(path), bytes);
      assert.equal((await Deno.stat(path)).mode! & 0o777, 0o600);
      assert.equal(written(r, "vm-100-file").chunks, 5);
      const parts = [...Deno.readDirSync(dir)].map((e) => e.name);
      assert.deepEqual(parts, ["blob.bin"]);
      const back = await env.run("fileRead", {
        vmid: 100,
        path,
        maxBytes: 262144,
      });
      assert.equal(back.status, "succeeded", back.error);
      const rec = written(back, "vm-100-file");
      assert.equal(rec.encoding, "base64");
      assert.equal(rec.contentBase64, base64(bytes));
      assert.equal(rec.truncated, false);
    });
  });
});

Deno.test("fileRead: a file longer than maxBytes is recorded up to it with truncated set", async () => {
  await inTempDir(async (dir) => {
    await withEnv({}, async (env) => {
      const path = `${dir}/long.txt`;
      await Deno.writeTextFile(path, "0123456789");
      const r = await env.run("fileRead", { vmid: 100, path, maxBytes: 4 });
      assert.equal(r.status, "succeeded", r.error);
      const rec = written(r, "vm-100-file");
      assert.equal(rec.content, "0123");
      assert.equal(rec.truncated, true);
      const exact = await env.run("fileRead", {
        vmid: 100,
        path,
        maxBytes: 10,
      });
      assert.equal(written(exact, "vm-100-file").truncated, false);
    });
  });
});

Deno.test("fileWrite: a read-back that differs fails naming where it differs", async () => {
  await inTempDir(async (dir) => {
    await withEnv({}, async (env) => {
      const path = `${dir}/x.txt`;
      env.sim.fault({
        method: "GET",
        pathRegex: "/agent/file-read$",
        kind: "body",
        body: JSON.stringify({
          data: { content: btoa("hellO"), "bytes-read": 5 },
        }),
      });
      const r = await env.run("fileWrite", {
        vmid: 100,
        path,
        content: "hello",
      });
      assert.equal(r.status, "failed");
      assert.match(r.error ?? "", /differ from the 5 written from byte 4 on/);
      assert.equal(written(r, "vm-100-file").verified, false);
    });
  });
});

Deno.test("fileWrite: a guest without a running agent fails in PVE's words", async () => {
  await withEnv({}, async (env) => {
    const r = await env.run("fileWrite", {
      vmid: 102,
      path: "/tmp/never",
      content: "x",
    });
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /guest agent/);
  });
});
