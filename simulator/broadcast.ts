/**
 * What `/cluster/resources` knows of a guest: pve-manager PVE/API2/Cluster.pm
 * resources builds each guest entry with PVE/API2Tools.pm extract_vm_stats
 * from the RRD data pvestatd broadcasts every 10 s — `name`, `status`,
 * `template`, `uptime` and the usage figures come from that broadcast —
 * and adds only `lock` and `tags` from the live config (its `$prop_list`).
 * A guest the broadcast has not seen yet shows `status: "unknown"` and no
 * name; a rename or a start shows up to 10 s late.
 *
 * The simulator broadcasts at fixed multiples of `intervalMs` after its start
 * (checked when a request reads the view, no timer); `intervalMs` 0 makes
 * the view live.
 *
 * @module
 */

import type { ClusterState } from "./state.ts";
import { metricsOf } from "./views.ts";

/** pvestatd's update interval (pve-manager PVE/Service/pvestatd.pm: `$updatetime = 10`). */
export const PVESTATD_INTERVAL_MS = 10_000;

/** The broadcast part of one guest's entry. */
type Snapshot = Record<string, unknown>;

/** The last broadcast of every guest's stats. */
export class Broadcast {
  readonly #state: ClusterState;
  readonly #intervalMs: number;
  readonly #startedAt = Date.now();
  #round = -1;
  #snapshots = new Map<number, Snapshot>();

  /** @param intervalMs time between broadcasts; 0 = always live */
  constructor(state: ClusterState, intervalMs: number) {
    this.#state = state;
    this.#intervalMs = intervalMs;
    this.#refresh();
  }

  /** The broadcast fields of guest `vmid` as of the last broadcast, or undefined when it was not in it. */
  statsOf(vmid: number): Snapshot | undefined {
    this.#refresh();
    return this.#snapshots.get(vmid);
  }

  #refresh(): void {
    const round = this.#intervalMs > 0
      ? Math.floor((Date.now() - this.#startedAt) / this.#intervalMs)
      : this.#round + 1;
    if (round === this.#round) return;
    this.#round = round;
    this.#snapshots = new Map(
      this.#state.all().map((g) => {
        const m = metricsOf(g);
        return [g.vmid, {
          name: g.name,
          status: g.status,
          template: g.config.template ? 1 : 0,
          cpu: m.cpu,
          maxcpu: m.cpus,
          mem: m.mem,
          maxmem: m.maxmem,
          disk: m.disk,
          maxdisk: m.maxdisk,
          netin: m.netin,
          netout: m.netout,
          diskread: 0,
          diskwrite: 0,
          uptime: m.uptime,
        }];
      }),
    );
  }
}
