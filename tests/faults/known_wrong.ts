/**
 * Known wrong cells: cells of the fault matrix that show a defect of the core (a false success, a
 * lost record, a re-sent mutation) which is reported, not yet fixed. `matrix_test.ts` fails on any
 * wrong cell missing from this list, and on any listed cell that is no longer wrong (remove it).
 *
 * @module
 */
import type { CellResult } from "./cell.ts";

/** One known wrong cell. */
export interface KnownWrongCell {
  /** The matrix row, e.g. `lxc start`. */
  row: string;
  /** The endpoint row label; undefined for a scenario. */
  endpoint?: string;
  /** The fault or scenario column. */
  column: CellResult["column"];
  /** What is wrong and why it is tolerated for now. */
  reason: string;
}

/** The wrong cells the matrix tolerates, each with its reason. */
export const KNOWN_WRONG_CELLS: readonly KnownWrongCell[] = [];

const same = (k: KnownWrongCell, cell: CellResult) =>
  k.row === cell.row && k.endpoint === cell.endpoint &&
  k.column === cell.column;

/** Whether `cell` is on {@link KNOWN_WRONG_CELLS}. */
export function isKnownWrong(cell: CellResult): boolean {
  return KNOWN_WRONG_CELLS.some((k) => same(k, cell));
}

/** Wrong cells that are not on the list: each fails the matrix. */
export function unlistedWrong(cells: CellResult[]): CellResult[] {
  return cells.filter((c) => c.problems.length > 0 && !isKnownWrong(c));
}

/**
 * Listed cells of these rows that are no longer wrong (or no longer exist): the list must be
 * trimmed, so it never hides a future regression.
 */
export function staleKnownWrong(
  rows: string[],
  cells: CellResult[],
): KnownWrongCell[] {
  return KNOWN_WRONG_CELLS.filter((k) =>
    rows.includes(k.row) &&
    !cells.some((c) => same(k, c) && c.problems.length > 0)
  );
}
