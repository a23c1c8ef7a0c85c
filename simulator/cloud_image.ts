/**
 * A "cloud image" for the real guests: a standalone qcow2 disk (no backing file) holding an ext4
 * file system with one marker file, `cloud-image.txt`. Served over loopback HTTP it is what
 * downloadUrl brings onto a storage and qemu create's `import-from` copies into a new VM's disk; a
 * VM created from it boots the real-guest kernel with that disk as its own (the guest mounts it at
 * /data), so `cat /data/cloud-image.txt` inside the guest shows the disk really is the image.
 *
 * The marker is the caller's (a fresh one per run), so an answer from any other disk cannot match.
 * Built with the same tools as scripts/guest_image.sh (e2fsprogs' `mkfs.ext4 -d`, `qemu-img`),
 * which that script has installed.
 *
 * @module
 */

import { hexDigest, startImageServer } from "./image_server.ts";

/** The marker's path inside the image's file system; the guest sees it under /data. */
export const CLOUD_IMAGE_MARKER = "cloud-image.txt";

/** Where the guest mounts its first disk (scripts/guest_image.sh init). */
export const GUEST_DATA_DIR = "/data";

/** The raw file system's size: enough for ext4's metadata and the marker. */
const FS_SIZE = "16M";

/** The first bytes of every qcow2 file ("QFI\xfb"). */
const QCOW2_MAGIC = [0x51, 0x46, 0x49, 0xfb];

/** Whether `bytes` start like a qcow2 image. */
export function isQcow2(bytes: Uint8Array): boolean {
  return QCOW2_MAGIC.every((b, i) => bytes[i] === b);
}

/** Builds the image with `marker` as the content of its marker file; returns the qcow2's bytes. */
export async function buildCloudImage(marker: string): Promise<Uint8Array> {
  const work = await Deno.makeTempDir({ prefix: "cloud-image-" });
  try {
    await Deno.mkdir(`${work}/root`);
    await Deno.writeTextFile(`${work}/root/${CLOUD_IMAGE_MARKER}`, marker);
    await tool("truncate", ["-s", FS_SIZE, `${work}/fs.raw`]);
    await tool(sbin("mkfs.ext4"), [
      "-q",
      "-F",
      "-L",
      "cloudimg",
      "-d",
      `${work}/root`,
      `${work}/fs.raw`,
    ]);
    await tool("qemu-img", [
      "convert",
      "-q",
      "-f",
      "raw",
      "-O",
      "qcow2",
      `${work}/fs.raw`,
      `${work}/image.qcow2`,
    ]);
    return await Deno.readFile(`${work}/image.qcow2`);
  } finally {
    await Deno.remove(work, { recursive: true }).catch(() => {});
  }
}

/** mkfs lives in /usr/sbin or /sbin, which a non-root PATH may leave out. */
function sbin(name: string): string {
  for (const dir of ["/usr/sbin", "/sbin"]) {
    try {
      Deno.statSync(`${dir}/${name}`);
      return `${dir}/${name}`;
    } catch {
      // not here
    }
  }
  return name;
}

async function tool(cmd: string, args: string[]): Promise<void> {
  const out = await new Deno.Command(cmd, {
    args,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(
      `${cmd} ${args[0]} failed: ${
        new TextDecoder().decode(out.stderr).trim() || `exit ${out.code}`
      }`,
    );
  }
}

/** A cloud image served over loopback HTTP, with what proves a guest runs on it. */
export interface ServedCloudImage {
  url: string;
  sha256: string;
  /** The name to store it under (`<storage>:import/<filename>`). */
  filename: string;
  /** The marker file as the guest sees it, and its content (fresh for every image). */
  markerPath: string;
  marker: string;
  close(): Promise<void>;
}

/** Builds an image with a fresh marker and serves it at `/<filename>` on 127.0.0.1. */
export async function serveCloudImage(
  filename = "swamp-guest.qcow2",
): Promise<ServedCloudImage> {
  const marker = `swamp cloud image ${crypto.randomUUID()}`;
  const bytes = await buildCloudImage(marker);
  const server = startImageServer({ [`/${filename}`]: bytes });
  return {
    url: server.url(`/${filename}`),
    sha256: hexDigest("sha256", bytes),
    filename,
    markerPath: `${GUEST_DATA_DIR}/${CLOUD_IMAGE_MARKER}`,
    marker,
    close: () => server.close(),
  };
}
