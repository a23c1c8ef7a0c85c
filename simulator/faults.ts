/**
 * Scenario faults: the next matching requests get a canned failure instead of
 * the real handler (an error status, a dropped connection, no answer, a bad body).
 *
 * @module
 */

import type { SimFault } from "./types.ts";

/** A queue of faults; each fires for its `times` matching requests, first added first. */
export class FaultQueue {
  readonly #faults: {
    fault: SimFault;
    left: number;
    skip: number;
    re: RegExp;
  }[] = [];

  /** Adds a fault. */
  add(fault: SimFault): void {
    // Drop g/y flags: a stateful regex would match only every other request.
    const re = typeof fault.pathRegex === "string"
      ? new RegExp(fault.pathRegex)
      : new RegExp(
        fault.pathRegex.source,
        fault.pathRegex.flags.replace(/[gy]/g, ""),
      );
    this.#faults.push({
      fault,
      left: fault.times ?? 1,
      skip: fault.skip ?? 0,
      re,
    });
  }

  /** Takes the fault for this request, if one matches (counting it down). */
  take(method: string, path: string): SimFault | undefined {
    const at = this.#faults.findIndex(({ fault, re }) =>
      (fault.method === undefined || fault.method.toUpperCase() === method) &&
      re.test(path)
    );
    if (at < 0) return undefined;
    const entry = this.#faults[at];
    if (entry.skip > 0) {
      entry.skip--;
      return undefined;
    }
    entry.left--;
    if (entry.left <= 0) this.#faults.splice(at, 1);
    return entry.fault;
  }
}
