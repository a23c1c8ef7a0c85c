/**
 * Model versions, as swamp-club/swamp `src/domain/models/calver.ts` (`CalVer`) reads them:
 * `YYYY.MM.DD.MICRO` with a real calendar date (month 01–12, a day the month has), compared by the
 * first three segments as strings (they are zero-padded) and then the micro segment as a number.
 *
 * @module
 */

const PATTERN = /^\d{4}\.\d{2}\.\d{2}\.\d+$/;

/** Whether `version` is CalVer `YYYY.MM.DD.MICRO` naming a real date (`CalVer.isValid`). */
export function isCalVer(version: unknown): version is string {
  if (typeof version !== "string" || !PATTERN.test(version)) return false;
  const [year, month, day] = version.split(".").map(Number);
  if (month < 1 || month > 12 || day < 1) return false;
  return day <= new Date(year, month, 0).getDate();
}

/** `version` itself, or swamp's error for a version that is not CalVer (`CalVer.create`). */
export function calVer(version: string): string {
  if (!isCalVer(version)) {
    throw new Error(
      `Invalid CalVer version: "${version}". Expected format YYYY.MM.DD.MICRO (e.g., "2025.01.15.1")`,
    );
  }
  return version;
}

/** -1, 0 or 1 as `a` is older than, the same as or newer than `b` (`CalVer.compare`). */
export function compareCalVer(a: string, b: string): -1 | 0 | 1 {
  const as = calVer(a).split(".");
  const bs = calVer(b).split(".");
  for (let i = 0; i < 3; i++) {
    if (as[i] < bs[i]) return -1;
    if (as[i] > bs[i]) return 1;
  }
  const am = Number(as[3]);
  const bm = Number(bs[3]);
  return am < bm ? -1 : am > bm ? 1 : 0;
}
