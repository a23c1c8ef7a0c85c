/**
 * `@stateless/proxmox/method-observed`: after a method run, a table of what the records it wrote
 * say was observed (verdict, exit code or state, pending config, locks), in markdown and JSON. The
 * default report of both models. A failed run returns no data handles; its error is shown and its
 * records are in `swamp data query`.
 *
 * @module
 */
import { type DataReader, markdownOf, readJson, rowOf } from "./observed.ts";

interface MethodContext {
  modelType: unknown;
  modelId: string;
  definition: { name: string };
  methodName: string;
  executionStatus: string;
  errorMessage?: string;
  dataHandles: { name: string; version: number; kind?: string }[];
  dataRepository: DataReader;
}

/** The method-scope report. */
export const report = {
  name: "@stateless/proxmox/method-observed",
  description:
    "What the method's records say was observed: verdict, exit code or state, pending config, locks",
  scope: "method" as const,
  labels: ["proxmox", "observed"],
  execute: async (ctx: MethodContext) => {
    const rows = [];
    for (const h of ctx.dataHandles.filter((h) => h.kind !== "report")) {
      const record = await readJson(
        ctx.dataRepository,
        ctx.modelType,
        ctx.modelId,
        h.name,
        h.version,
      );
      if (record) {
        rows.push(rowOf(h.name, record, ctx.methodName, ctx.executionStatus));
      }
    }
    const summary = [
      `\`${ctx.definition.name}\` ${ctx.methodName}: ${ctx.executionStatus}${
        ctx.errorMessage ? ` — ${ctx.errorMessage}` : ""
      }`,
    ];
    return {
      markdown: markdownOf("What was observed", summary, rows),
      json: {
        model: ctx.definition.name,
        method: ctx.methodName,
        verdict: ctx.executionStatus,
        ...(ctx.errorMessage ? { error: ctx.errorMessage } : {}),
        rows,
      },
    };
  },
};
