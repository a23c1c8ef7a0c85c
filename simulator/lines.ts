/**
 * Newline-delimited framing over a byte stream (a Deno.Conn): the wire format of
 * the qemu guest agent, where every request and every reply is one JSON line.
 *
 * @module
 */

const NEWLINE = 0x0a;

/** The byte source a LineReader pulls from (Deno.Conn fits). */
export interface ByteReader {
  /** Reads into `p`; resolves to the byte count, or null at end of stream. */
  read(p: Uint8Array): Promise<number | null>;
}

/** The byte sink writeAll pushes to (Deno.Conn fits). */
export interface ByteWriter {
  /** Writes some of `p`; resolves to how many bytes were taken. */
  write(p: Uint8Array): Promise<number>;
}

/** Reads `\n`-terminated lines from a reader, keeping bytes past the newline for the next call. */
export class LineReader {
  readonly #reader: ByteReader;
  readonly #buf = new Uint8Array(64 * 1024);
  readonly #decoder = new TextDecoder();
  #leftover: Uint8Array = new Uint8Array(0);

  /** @param reader the byte source, e.g. a connected unix socket */
  constructor(reader: ByteReader) {
    this.#reader = reader;
  }

  /**
   * Resolves to the next line without its newline, or null at end of stream.
   * A partial line cut off by end of stream is dropped: for a request/reply
   * protocol it is a broken reply, not data.
   */
  async readLine(): Promise<string | null> {
    const parts: Uint8Array[] = [];
    let chunk = this.#leftover;
    this.#leftover = new Uint8Array(0);
    for (;;) {
      const at = chunk.indexOf(NEWLINE);
      if (at >= 0) {
        parts.push(chunk.subarray(0, at));
        // Copy: the tail may alias #buf, which the next read overwrites.
        this.#leftover = chunk.slice(at + 1);
        return this.#decoder.decode(concat(parts));
      }
      // Copy for the same reason; agent replies can be megabytes long (16 MiB
      // of captured output, base64), so only whole chunks are kept, never re-scanned.
      if (chunk.length > 0) parts.push(chunk.slice());
      const n = await this.#reader.read(this.#buf);
      if (n === null) return null;
      chunk = this.#buf.subarray(0, n);
    }
  }
}

/** Writes all of `data`, looping over short writes. */
export async function writeAll(
  writer: ByteWriter,
  data: Uint8Array,
): Promise<void> {
  let off = 0;
  while (off < data.length) off += await writer.write(data.subarray(off));
}

function concat(parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0];
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}
