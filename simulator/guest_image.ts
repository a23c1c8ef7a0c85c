/**
 * The real-guest image for this machine: built (once, cached outside the work tree) by
 * scripts/guest_image.sh from Debian packages. See docs/real-guests.md.
 *
 * @module
 */

import { type GuestImage, guestImageAt } from "./real_vm.ts";

const SCRIPT = new URL("../scripts/guest_image.sh", import.meta.url).pathname;

/**
 * Builds the image if needed and returns it. Throws with the builder's last words when this
 * machine cannot (no apt, not root, no network to the Debian mirror, …).
 */
export async function ensureGuestImage(): Promise<GuestImage> {
  const out = await new Deno.Command("bash", {
    args: [SCRIPT],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b).trim();
  if (!out.success) {
    const why = text(out.stderr).split("\n").slice(-4).join("\n");
    throw new Error(
      `the real-guest image could not be built: ${why || `exit ${out.code}`}`,
    );
  }
  const dir = text(out.stdout).split("\n").at(-1) ?? "";
  return guestImageAt(dir);
}
