/** Medians, ratios and the markdown table of the benchmark report. */
import assert from "node:assert/strict";
import { formatValue, median, ratio, renderTable, type Row } from "./table.ts";

Deno.test("table: median of odd and even counts", () => {
  assert.equal(median([5, 1, 3]), 3);
  assert.equal(median([4, 1, 3, 2]), 2.5);
  assert.ok(Number.isNaN(median([])));
});

Deno.test("table: ratio is baseline ÷ this, and absent numbers give —", () => {
  assert.equal(ratio({ samples: [3] }, { samples: [1001] }), "334×");
  assert.equal(ratio({ samples: [2] }, { samples: [1] }), "0.50×");
  assert.equal(
    ratio({ missing: "not implemented yet" }, { samples: [1] }),
    "—",
  );
});

Deno.test("table: values carry their unit", () => {
  assert.equal(formatValue(6512.4, "ms"), "6,512 ms");
  assert.equal(formatValue(4.25, "ms"), "4.3 ms");
  assert.equal(formatValue(1001, "requests"), "1,001");
  assert.equal(formatValue(256000, "bytes"), "256,000 B (250.0 KiB)");
});

Deno.test("table: one row per measure, target met or not yet measurable", () => {
  const rows: Row[] = [
    {
      benchmark: "sync",
      measure: "requests",
      unit: "requests",
      cells: [{ samples: [3, 3, 4] }, { samples: [1001] }],
      target: { text: "≤ 3", met: (v) => v <= 3 },
    },
    {
      benchmark: "start",
      measure: "lag",
      unit: "ms",
      cells: [{ missing: "not implemented yet" }, { samples: [2500] }],
      target: { text: "≤ 250 ms", met: (v) => v <= 250 },
    },
    {
      benchmark: "cold",
      measure: "wall",
      unit: "ms",
      cells: [{ samples: [50] }, { samples: [48] }],
      target: (base) =>
        base === undefined ? undefined : {
          text: `≤ ${formatValue(base * 1.1, "ms")} (baseline + 10%)`,
          met: (v) => v <= base * 1.1,
        },
    },
  ];
  const table = renderTable(["this", "base"], rows).split("\n");
  assert.equal(
    table[0],
    "| benchmark | measure | this | base | ratio (baseline ÷ this) | target | met |",
  );
  assert.equal(
    table[2],
    "| sync | requests | 3 | 1,001 | 334× | ≤ 3 | ✓ met |",
  );
  assert.equal(
    table[3],
    "| start | lag | not implemented yet | 2,500 ms | — | ≤ 250 ms | not yet measurable |",
  );
  assert.equal(
    table[4],
    "| cold | wall | 50 ms | 48 ms | 0.96× | ≤ 53 ms (baseline + 10%) | ✓ met |",
  );
  const alone = renderTable(["this"], [{
    ...rows[2],
    cells: [rows[2].cells[0]],
  }])
    .split("\n");
  assert.equal(alone[2], "| cold | wall | 50 ms |  | needs --baseline |");
});
