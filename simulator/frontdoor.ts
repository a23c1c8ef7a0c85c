/**
 * The simulator's public socket: a byte-level relay in front of the internal
 * Deno.serve server, optionally terminating TLS.
 *
 * Why a relay: a Deno.serve handler cannot drop its client's connection (a throw
 * becomes a 500, an erroring body still sends the status line first). With the
 * relay, a "reset" fault closes the client's real TCP connection, so the client
 * sees a genuine network error. The handler finds its client connection by the
 * relay's local port, which Deno.serve reports as the request's remote port.
 *
 * @module
 */

import type { SimTls } from "./types.ts";

/** A relayed client connection and its leg to the internal server. */
interface Pair {
  client: Deno.Conn;
  backend: Deno.Conn;
  /** Set by finish(): no more client bytes are passed on; the server closes after its answer. */
  finishing: boolean;
}

/** The listening relay. */
export class FrontDoor {
  /** Public port on 127.0.0.1. */
  readonly port: number;
  readonly #listener: Deno.Listener;
  readonly #backendPort: number;
  /** Keyed by the backend leg's local port (= remote port seen by Deno.serve). */
  readonly #pairs = new Map<number, Pair>();
  readonly #pending = new Set<Promise<void>>();
  readonly #acceptLoop: Promise<void>;
  /** Client connections accepted so far (each a TCP, or TLS, handshake the node served). */
  accepted = 0;
  #closed = false;

  /** Listens on 127.0.0.1, a free port; relays to `backendPort`; TLS when `tls` is given. */
  constructor(backendPort: number, tls?: SimTls) {
    this.#backendPort = backendPort;
    this.#listener = tls
      ? Deno.listenTls({
        hostname: "127.0.0.1",
        port: 0,
        cert: tls.cert,
        key: tls.key,
      })
      : Deno.listen({ hostname: "127.0.0.1", port: 0 });
    this.port = (this.#listener.addr as Deno.NetAddr).port;
    this.#acceptLoop = this.#accept();
  }

  /** Drops the client connection whose request Deno.serve saw from `backendRemotePort`, at once. */
  reset(backendRemotePort: number): void {
    const pair = this.#pairs.get(backendRemotePort);
    if (pair) closePair(pair);
  }

  /**
   * Makes the current request the connection's last (no keep-alive): call it
   * once the request is fully read, with a promise that settles when the answer
   * is sent. Further client bytes are dropped at once; after the answer the
   * relay half-closes the server leg, the server closes, and the client gets
   * every byte and then the close. (Deno.serve drops a `Connection: close`
   * response header, hence this detour; and the half-close must wait, because
   * the server abandons a request whose client closed while it is handled.)
   */
  finish(backendRemotePort: number, answered: Promise<void>): void {
    const pair = this.#pairs.get(backendRemotePort);
    if (!pair || pair.finishing) return;
    pair.finishing = true;
    answered.then(
      () => closeWrite(pair.backend),
      () => closeWrite(pair.backend),
    );
  }

  /** Stops listening and drops every connection; resolves when all relays ended. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    try {
      this.#listener.close();
    } catch {
      // already closed
    }
    for (const pair of this.#pairs.values()) closePair(pair);
    await this.#acceptLoop;
    await Promise.all([...this.#pending]);
  }

  async #accept(): Promise<void> {
    for (;;) {
      let client: Deno.Conn;
      try {
        client = await this.#listener.accept();
      } catch {
        return; // listener closed
      }
      this.accepted++;
      const relay = this.#relay(client);
      this.#pending.add(relay);
      relay.finally(() => this.#pending.delete(relay));
    }
  }

  async #relay(client: Deno.Conn): Promise<void> {
    let backend: Deno.Conn;
    try {
      backend = await Deno.connect({
        hostname: "127.0.0.1",
        port: this.#backendPort,
      });
    } catch {
      close(client);
      return;
    }
    if (this.#closed) {
      close(client);
      close(backend);
      return;
    }
    const key = (backend.localAddr as Deno.NetAddr).port;
    const pair: Pair = { client, backend, finishing: false };
    // Registered before any byte flows, so a handler can always find its pair.
    this.#pairs.set(key, pair);
    // HTTP needs no half-close: when either direction ends, end both.
    const up = (async () => {
      await pump(client, backend, () => pair.finishing);
      // Client done sending: pass the half-close on; the server answers what it
      // has, then closes, which ends `down`.
      closeWrite(pair.backend);
    })();
    const down = pump(backend, client);
    // The server's side decides: once it closed, every answer byte has reached the client.
    await down;
    closePair(pair);
    this.#pairs.delete(key);
    // Let the client direction's read see the close: no op may outlive close().
    await up;
  }
}

/** Copies bytes until end of stream or an error; while `discard()` holds, bytes are dropped. */
async function pump(
  from: Deno.Conn,
  to: Deno.Conn,
  discard: () => boolean = () => false,
): Promise<void> {
  const buf = new Uint8Array(64 * 1024);
  try {
    for (;;) {
      const n = await from.read(buf);
      if (n === null) return;
      if (discard()) continue;
      let off = 0;
      while (off < n) off += await to.write(buf.subarray(off, n));
    }
  } catch {
    // connection torn down (reset fault, close, TLS handshake refused)
  }
}

function closeWrite(conn: Deno.Conn): void {
  // Rejects asynchronously when the connection is already gone.
  conn.closeWrite().catch(() => {});
}

function closePair(pair: Pair): void {
  close(pair.client);
  close(pair.backend);
}

function close(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch {
    // already closed
  }
}
