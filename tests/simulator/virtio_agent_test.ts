/**
 * The real-VM agent channel (simulator/virtio_agent.ts) against a scripted socket standing in for
 * QEMU's virtio-serial chardev: PVE's guest-sync-delimited exchange, stale replies, silence.
 */
import assert from "node:assert/strict";
import { VirtioAgent } from "../../simulator/virtio_agent.ts";
import { QgaClosedError, QgaError } from "../../simulator/qga.ts";

/** What the scripted guest answers to one connection, given the sync id it was sent. */
type Script = (syncId: number, command: string) => Uint8Array | null;

/** A unix socket that reads one exchange per connection and answers as `script` says. */
async function withGuest(
  script: Script,
  body: (agent: VirtioAgent) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/qga.sock`;
  const listener = Deno.listen({ transport: "unix", path });
  const conns: Deno.Conn[] = [];
  const serving = (async () => {
    for await (const conn of listener) {
      conns.push(conn);
      const buf = new Uint8Array(4096);
      let text = "";
      while (text.split("\n").length < 3) {
        const n = await conn.read(buf);
        if (n === null) break;
        text += new TextDecoder().decode(buf.subarray(0, n));
      }
      const [sync, cmd] = text.split("\n").map((l) => JSON.parse(l || "{}"));
      const answer = script(sync.arguments?.id, cmd.execute);
      if (answer === null) continue; // silence: keep the connection open, answer nothing
      await conn.write(answer);
      conn.close();
    }
  })();
  try {
    await body(new VirtioAgent(path));
  } finally {
    listener.close();
    for (const c of conns) {
      try {
        c.close();
      } catch {
        // closed after answering
      }
    }
    await serving.catch(() => {});
    await Deno.remove(dir, { recursive: true });
  }
}

/** Bytes of the parts: strings as UTF-8, arrays as they are. */
function bytes(...parts: (string | Uint8Array)[]): Uint8Array {
  const chunks = parts.map((p) =>
    typeof p === "string" ? new TextEncoder().encode(p) : p
  );
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}
/** The agent's answer to guest-sync-delimited: a raw 0xFF byte, then the id. */
const delimited = (id: number) =>
  bytes(new Uint8Array([0xff]), `{"return": ${id}}\n`);

Deno.test("virtio agent: the reply after the sync carrying this call's id is the answer", async () => {
  await withGuest(
    (id) => bytes(delimited(id), `{"return": {"version": "7.2.22"}}\n`),
    async (agent) => {
      assert.deepEqual(await agent.call("guest-info"), { version: "7.2.22" });
    },
  );
});

Deno.test("virtio agent: replies to an earlier, abandoned call are skipped", async () => {
  await withGuest(
    (id) =>
      bytes(
        delimited(id - 1),
        `{"return": "stale"}\n`,
        delimited(id),
        `{"return": {}}\n`,
      ),
    async (agent) => {
      assert.deepEqual(await agent.call("guest-ping"), {});
    },
  );
});

Deno.test("virtio agent: an error reply becomes a QgaError with the agent's text", async () => {
  await withGuest(
    (id) =>
      bytes(
        delimited(id),
        `{"error": {"class": "GenericError", "desc": "Invalid parameter 'pid'"}}\n`,
      ),
    async (agent) => {
      await assert.rejects(
        agent.call("guest-exec-status", { pid: 1 }),
        (err) =>
          err instanceof QgaError && err.desc === "Invalid parameter 'pid'",
      );
    },
  );
});

Deno.test("virtio agent: a guest whose agent never answers times out, it does not hang", async () => {
  await withGuest(() => null, async (agent) => {
    await assert.rejects(
      agent.call("guest-ping", undefined, { timeoutMs: 300 }),
      (err) => err instanceof QgaClosedError && /got timeout/.test(err.message),
    );
  });
});

Deno.test("virtio agent: guest-shutdown resolves once synced, though the agent sends no reply", async () => {
  await withGuest((id) => delimited(id), async (agent) => {
    assert.equal(
      await agent.call("guest-shutdown", undefined, { noReply: true }),
      undefined,
    );
  });
});

Deno.test("virtio agent: non-ASCII text in a reply survives the delimiter handling", async () => {
  await withGuest(
    (id) => bytes(delimited(id), `{"return": "grüße"}\n`),
    async (agent) => {
      assert.equal(await agent.call("guest-get-host-name"), "grüße");
    },
  );
});
