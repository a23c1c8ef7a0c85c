/**
 * The simulator's record of how every request and answer held against PVE's
 * schema. Each simulator keeps its own entries (`sim.conformance`); when the
 * simulator was started with `conformance: true` and `$PVE_CONFORMANCE_LOG`
 * names a file, each entry is also appended there as a JSON line, for the
 * conformance layer of test.sh (simulator/schema/report.ts) to sum up.
 *
 * @module
 */

import type { AnswerViolation, Decoding } from "./check.ts";

/** One request's verdict. */
export interface ConformanceEntry {
  method: string;
  /** The endpoint's path template, e.g. `/nodes/{node}/qemu/{vmid}/config`. */
  template: string;
  /** The request path as sent (after `/api2/json`). */
  path: string;
  decoding: Decoding;
  /** Parameter names sent (values are left out: they may hold secrets). */
  params: string[];
  /** PVE's per-parameter messages when the schema refused the request. */
  paramErrors?: Record<string, string>;
  /** A 400 from pvesh's option parsing. */
  refusal?: string;
  /** Where the simulator's answer departed from `returns`. */
  answerViolations?: AnswerViolation[];
}

/** Collects entries; optionally mirrors them into the shared log file. */
export class ConformanceLog {
  readonly entries: ConformanceEntry[] = [];
  readonly #file: string | undefined;

  /** @param shared whether entries also go to `$PVE_CONFORMANCE_LOG` */
  constructor(shared: boolean) {
    this.#file = shared ? logFile() : undefined;
  }

  /** Adds one entry. */
  add(entry: ConformanceEntry): void {
    this.entries.push(entry);
    if (this.#file) {
      Deno.writeTextFileSync(this.#file, JSON.stringify(entry) + "\n", {
        append: true,
      });
    }
  }
}

function logFile(): string | undefined {
  try {
    return Deno.env.get("PVE_CONFORMANCE_LOG") || undefined;
  } catch {
    // No env permission (the embedded default): nothing is shared.
    return undefined;
  }
}
