/**
 * How the simulator runs real guests: apart from real_guests.ts so that types.ts (the simulator's
 * options) and real_guests.ts (which needs the guest state of types.ts) both import it without
 * importing each other.
 *
 * @module
 */

import type { GuestImage } from "./real_vm.ts";

/** How the simulator runs real guests. */
export interface RealGuestOptions {
  /** The image built by scripts/guest_image.sh (see ensureGuestImage). */
  image: GuestImage;
  /** `tcg` (default) or `kvm`. */
  accel?: "tcg" | "kvm";
}
