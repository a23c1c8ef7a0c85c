/**
 * The adversarial review report `swamp extension push` looks for, kept in this repository.
 *
 * swamp binds the report to the package's content hash: it looks for
 * `$SWAMP_EXTENSION_REVIEW_DIR/swamp-extension-review/<name>-<hash>.json` (swamp-club/swamp
 * `src/domain/extensions/extension_review_rules.ts` `reviewReportPath`), so any change to what
 * ships — a source file, the wasm, README.md, a workflow, the skill, the version — moves the path
 * and asks for a review of the new code. This project keeps reports in `review/` and points
 * `SWAMP_EXTENSION_REVIEW_DIR` there (tests/real_swamp/package_test.ts does).
 *
 * `deno run -A scripts/review/report.ts` runs the push dry run as the tests do (a fresh swamp
 * repository with the package installed; needs `$SWAMP` or a `swamp` on PATH and a built wasm) and
 * says whether the current code's report is there and complete, else prints the path and swamp's
 * skeleton. `… --write <reviewed.json>` files a completed review (every dimension of the skeleton
 * with a verdict other than `pending`, for this name and version) at that path and removes the
 * reports of earlier code. It never fills in verdicts: the review is a person's or an agent's.
 */
import { join } from "node:path";
import { OUR_PACKAGE } from "../../tests/real_swamp/fixture.ts";
import {
  documents,
  PROJECT_ROOT,
  SwampCli,
} from "../../tests/real_swamp/swamp_cli.ts";

/** Where swamp is told to look (`SWAMP_EXTENSION_REVIEW_DIR`). */
export const REVIEW_DIR = join(PROJECT_ROOT, "review");

interface Finding {
  ruleId: string;
  file: string;
  message: string;
  skeleton?: string;
}

/** The review findings of `extension push --dry-run` for the package as it is now. */
export async function reviewFindings(): Promise<Finding[]> {
  const cli = await SwampCli.init();
  try {
    cli.env = { SWAMP_EXTENSION_REVIEW_DIR: REVIEW_DIR };
    await cli.install(OUR_PACKAGE);
    const r = await cli.run(
      "extension",
      "push",
      "extensions/models/manifest.yaml",
      "--dry-run",
      "--yes",
      "--json",
    );
    if (r.code !== 0) throw new Error(`push --dry-run: ${r.stderr}`);
    return documents(r.stdout).flatMap((d) => d.reviewRuleWarnings ?? []);
  } finally {
    await cli.close();
  }
}

/** The report path swamp wants now: from a finding, else the one complete report in review/. */
function wantedPath(findings: Finding[]): string | undefined {
  return findings.find((f) => f.ruleId === "adversarial-review-report")?.file;
}

if (import.meta.main) {
  const findings = await reviewFindings();
  const path = wantedPath(findings);
  const write = Deno.args.indexOf("--write");
  if (write < 0) {
    if (findings.length === 0) {
      console.log(
        "the review report of the current code is present and complete",
      );
      Deno.exit(0);
    }
    for (const f of findings) console.log(`${f.ruleId}: ${f.message}`);
    if (path) console.log(`swamp looks for: ${path}`);
    const skeleton = findings.find((f) => f.skeleton)?.skeleton;
    if (skeleton) console.log(skeleton);
    Deno.exit(1);
  }
  if (!path) {
    console.log("nothing to write: swamp asks for no report");
    Deno.exit(findings.length === 0 ? 0 : 1);
  }
  const draft = JSON.parse(await Deno.readTextFile(Deno.args[write + 1]));
  const skeleton = JSON.parse(
    findings.find((f) => f.skeleton)?.skeleton ??
      (await Deno.readTextFile(path).catch(() => "null")),
  );
  if (skeleton) {
    const ids = new Set(
      (draft.dimensions ?? []).filter((d: { verdict: string }) =>
        d.verdict !== "pending"
      ).map((d: { id: string }) => d.id),
    );
    const open = skeleton.dimensions.map((d: { id: string }) => d.id).filter((
      id: string,
    ) => !ids.has(id));
    if (
      open.length || draft.extension !== skeleton.extension ||
      draft.version !== skeleton.version
    ) {
      console.log(
        `the review is not complete for ${skeleton.extension}@${skeleton.version}: ${
          open.join(", ") || "name or version differ"
        }`,
      );
      Deno.exit(1);
    }
  }
  // The reports of earlier code no longer match anything swamp asks for.
  const dir = join(REVIEW_DIR, "swamp-extension-review");
  await Deno.mkdir(dir, { recursive: true });
  for await (const e of Deno.readDir(dir)) {
    if (e.name.endsWith(".json")) await Deno.remove(join(dir, e.name));
  }
  await Deno.writeTextFile(path, JSON.stringify(draft, null, 2) + "\n");
  console.log(`wrote ${path}`);
}
