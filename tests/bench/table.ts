/**
 * Benchmark rows, medians and the markdown table.
 *
 * @module
 */

/** One package's result for one row: a median of samples, or why there is none. */
export type Cell =
  | { samples: number[]; note?: string }
  | { missing: string };

/** How a number is printed. */
export type Unit = "ms" | "requests" | "bytes";

/** A target this package should meet. */
export interface Target {
  /** As printed, e.g. `≤ 3`. */
  text: string;
  /** Whether the median meets it. */
  met(value: number): boolean;
}

/**
 * A target fixed in advance, or one set by the baseline's median measured in the same run (e.g.
 * "≤ baseline + 10%"); `undefined` from the function when there is no baseline to set it.
 */
export type TargetRule =
  | Target
  | ((baseline: number | undefined) => Target | undefined);

/** One table row. */
export interface Row {
  benchmark: string;
  measure: string;
  unit: Unit;
  /** One per package, in column order (this package first). */
  cells: Cell[];
  target?: TargetRule;
}

/** The row's target, resolved against the baseline's median when it depends on it. */
export function targetOf(row: Row): Target | undefined {
  const rule = row.target;
  if (typeof rule !== "function") return rule;
  return rule(row.cells[1] ? cellValue(row.cells[1]) : undefined);
}

/** The median of `xs` (mean of the middle two for an even count). */
export function median(xs: number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

/** The median of a cell, or undefined when it has none. */
export function cellValue(c: Cell): number | undefined {
  return "samples" in c && c.samples.length ? median(c.samples) : undefined;
}

const group = (n: number, digits = 0) =>
  n.toLocaleString("en-US", {
    minimumFractionDigits: digits,
    maximumFractionDigits: digits,
  });

/** A value with its unit: `12 ms`, `1,001`, `254,468 B (248.5 KiB)`. */
export function formatValue(v: number, unit: Unit): string {
  if (unit === "ms") return `${group(v, Math.abs(v) < 10 ? 1 : 0)} ms`;
  if (unit === "requests") return group(v, Number.isInteger(v) ? 0 : 1);
  return `${group(v)} B (${group(v / 1024, 1)} KiB)`;
}

function formatCell(c: Cell, unit: Unit): string {
  if ("missing" in c) return c.missing;
  const v = cellValue(c);
  if (v === undefined) return "—";
  return `${formatValue(v, unit)}${c.note ? ` (${c.note})` : ""}`;
}

/** `baseline ÷ this`: how many times this package is lower (better). */
export function ratio(thisCell: Cell, baseCell: Cell): string {
  const a = cellValue(thisCell);
  const b = cellValue(baseCell);
  if (a === undefined || b === undefined) return "—";
  if (a <= 0) return b <= 0 ? "—" : "∞";
  const r = b / a;
  return `${group(r, r < 10 ? 2 : r < 100 ? 1 : 0)}×`;
}

function metMark(row: Row, target: Target | undefined): string {
  if (!target) {
    return typeof row.target === "function" ? "needs --baseline" : "";
  }
  const v = cellValue(row.cells[0]);
  if (v === undefined) return "not yet measurable";
  return target.met(v) ? "✓ met" : "✗ not met";
}

/** The markdown table; with two labels, a baseline column and the ratio follow this package's column. */
export function renderTable(labels: string[], rows: Row[]): string {
  const esc = (s: string) => s.replaceAll("|", "\\|");
  const withBase = labels.length > 1;
  const head = [
    "benchmark",
    "measure",
    esc(labels[0]),
    ...(withBase ? [esc(labels[1]), "ratio (baseline ÷ this)"] : []),
    "target",
    "met",
  ];
  const lines = [
    `| ${head.join(" | ")} |`,
    `|${head.map(() => "---").join("|")}|`,
  ];
  for (const row of rows) {
    const target = targetOf(row);
    const cells = [
      esc(row.benchmark),
      esc(row.measure),
      esc(formatCell(row.cells[0], row.unit)),
      ...(withBase
        ? [
          esc(formatCell(row.cells[1], row.unit)),
          ratio(row.cells[0], row.cells[1]),
        ]
        : []),
      esc(target?.text ?? ""),
      metMark(row, target),
    ];
    lines.push(`| ${cells.join(" | ")} |`);
  }
  return lines.join("\n");
}
