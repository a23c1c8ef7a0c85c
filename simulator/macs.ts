/**
 * MAC addresses as PVE makes them for a new NIC (its `BC:24:11` prefix), for containers and
 * restored guests alike.
 *
 * @module
 */

/** A random MAC in Proxmox's OUI (BC:24:11), as PVE assigns when `hwaddr` is missing. */
export function randomMac(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(3));
  return [
    "BC",
    "24",
    "11",
    ...[...bytes].map((b) => b.toString(16).toUpperCase().padStart(2, "0")),
  ].join(":");
}
