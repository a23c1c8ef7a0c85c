/**
 * The progress lines PVE's long tasks print into their task logs, for the
 * simulator's tasks to print the same while they run (tasks.ts
 * `TaskSpec.progress`):
 * - qemu-server `PVE/QemuServer/QemuImage.pm` `convert` (a clone of a stopped
 *   guest): `transferred 2.0 GiB of 10.0 GiB (20.00%)`;
 * - qemu-server `PVE/QemuServer/BlockJob.pm` `qemu_drive_mirror_monitor` (a
 *   clone of a running VM): `drive-scsi0: transferred … of … (20.00%) in 12s`;
 * - qemu-server `PVE/QemuMigrate.pm` `phase2`: `migration active, transferred
 *   512.0 MiB of 2.0 GiB VM-state, 100.0 MiB/s`;
 * - qemu-server `PVE/VZDump/QemuServer.pm` through pve-guest-common
 *   `PVE/VZDump/Plugin.pm` `debugmsg`: `INFO:  42% (4.2 GiB of 10.0 GiB) in
 *   30s, read: …, write: …`.
 * Sizes and durations are rendered as pve-common `PVE/Format.pm`
 * `render_bytes($v, 1)` and `render_duration` do.
 *
 * @module
 */

/** What a progress line is made from: how far the task is (0…1) and how long it has run. */
export type ProgressLine = (fraction: number, elapsedMs: number) => string;

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

/** pve-common render_bytes with precision 1: `2.0 GiB`. */
export function renderBytes(value: number): string {
  let unit = 0;
  if (value > 1023) {
    unit = Math.min(
      UNITS.length - 1,
      Math.floor(Math.log(value) / Math.log(1024)),
    );
    value /= 1024 ** unit;
  }
  return `${value.toFixed(1)} ${UNITS[unit]}`;
}

/** pve-common render_duration: `1m 2s`, `0s`. */
export function renderDuration(seconds: number): string {
  let rest = Math.round(seconds);
  if (!rest) return "0s";
  const parts: string[] = [];
  for (const [unit, length] of [["h", 3600], ["m", 60], ["s", 1]] as const) {
    const v = Math.floor(rest / length);
    if (v > 0) {
      parts.push(`${v}${unit}`);
      rest -= v * length;
    }
  }
  return parts.join(" ");
}

/** A full clone's copy of a disk of `bytes` (qemu-img convert, or a drive mirror when `job`). */
export function cloneProgress(bytes: number, job?: string): ProgressLine {
  return (fraction, elapsedMs) => {
    const done = renderBytes(bytes * fraction);
    const percent = (fraction * 100).toFixed(2);
    const line = `transferred ${done} of ${renderBytes(bytes)} (${percent}%)`;
    return job
      ? `${job}: ${line} in ${renderDuration(elapsedMs / 1000)}`
      : line;
  };
}

/** A live migration of `bytes` of VM state. */
export function migrationProgress(bytes: number): ProgressLine {
  return (fraction, elapsedMs) => {
    const speed = bytes * fraction / Math.max(elapsedMs / 1000, 1);
    return `migration active, transferred ${renderBytes(bytes * fraction)} of ${
      renderBytes(bytes)
    } VM-state, ${renderBytes(speed)}/s`;
  };
}

/** A backup of `bytes` (vzdump), for a backup task to print. */
export function vzdumpProgress(bytes: number): ProgressLine {
  return (fraction, elapsedMs) => {
    const percent = String(Math.floor(fraction * 100)).padStart(3);
    const rate = renderBytes(bytes * fraction / Math.max(elapsedMs / 1000, 1));
    return `INFO: ${percent}% (${renderBytes(bytes * fraction)} of ${
      renderBytes(bytes)
    }) in ${
      renderDuration(elapsedMs / 1000)
    }, read: ${rate}/s, write: ${rate}/s`;
  };
}
