import { jobs, pool, rows } from "./matrix.ts";
import { PHASE } from "./cell.ts";
const print = console.log.bind(console);
for (let i = 0; i < Number(Deno.args[0] ?? 2); i++) {
  for (const row of rows()) {
    const pending = new Map<string, number>();
    const wrapped = jobs(row).map((j) => ({
      label: j.label,
      run: async () => {
        pending.set(j.label, Date.now());
        const r = await j.run();
        pending.delete(j.label);
        return r;
      },
    }));
    const watchdog = setInterval(() => {
      for (const [k, t] of pending) {
        if (Date.now() - t > 15000) print("STUCK", i, k, Date.now() - t, PHASE.get(k));
      }
    }, 5000);
    const t = Date.now();
    const res = await pool(wrapped, 6);
    clearInterval(watchdog);
    print(i, row.spec.row, res.length, Date.now() - t, res.filter((c) => c.problems.length).length);
  }
}
