/**
 * A loopback HTTP server that serves "cloud images" for downloadUrl and qemu create's import-from:
 * fixed bytes per path, with Content-Length on GET and HEAD (what PVE's query-url-metadata reads),
 * and 404 for any other path. The bytes are the test's own; their digests are computed here.
 *
 * @module
 */
import { createHash } from "node:crypto";
import type { SimStorage } from "./node_types.ts";

/** A running image server. */
export interface ImageServer {
  /** `http://127.0.0.1:<port>` */
  base: string;
  /** The URL of `path` (e.g. `/cloud.qcow2`). */
  url(path: string): string;
  /** Requests served, as `"<METHOD> <path>"`. */
  served: string[];
  close(): Promise<void>;
}

/** A hex digest of `data`. */
export function hexDigest(algorithm: string, data: Uint8Array): string {
  return createHash(algorithm).update(data).digest("hex");
}

/** `n` bytes of a recognisable pattern (so a short copy differs from the whole). */
export function imageBytes(n: number, seed = 7): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = (i * 31 + seed) & 0xff;
  return out;
}

/** Starts a server with `files` (path → bytes). */
export function startImageServer(
  files: Record<string, Uint8Array>,
): ImageServer {
  const served: string[] = [];
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    (req) => {
      const path = new URL(req.url).pathname;
      served.push(`${req.method} ${path}`);
      const data = files[path];
      if (!data) return new Response("not found", { status: 404 });
      const headers = {
        "content-type": "application/octet-stream",
        "content-length": String(data.length),
      };
      return new Response(
        req.method === "HEAD" ? null : data as BodyInit,
        { headers },
      );
    },
  );
  const base = `http://127.0.0.1:${server.addr.port}`;
  return {
    base,
    url: (path) => `${base}${path}`,
    served,
    close: () => server.shutdown(),
  };
}

/** `local` takes downloads of every kind; `local-lvm` only guest volumes. */
export const DOWNLOAD_STORAGES: SimStorage[] = [
  {
    storage: "local",
    type: "dir",
    content: ["iso", "vztmpl", "import", "backup"],
  },
  {
    storage: "local-lvm",
    type: "lvmthin",
    content: ["rootdir", "images"],
  },
];
