/**
 * The package as swamp's registry tooling sees it: `swamp extension quality` (the Swamp Club
 * rubric) and `swamp extension push --dry-run --yes` (the review a publish runs). Each test prints
 * its figures on lines starting `real-swamp:` (./test.sh shows them).
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { OUR_PACKAGE } from "./fixture.ts";
import { manifestList } from "../../harness/manifest_files.ts";
import { documents, SwampCli } from "./swamp_cli.ts";
import { REVIEW_DIR } from "../../scripts/review/report.ts";

const MANIFEST = "extensions/models/manifest.yaml";

async function withPackage(body: (cli: SwampCli) => Promise<void>) {
  const cli = await SwampCli.init();
  try {
    // The adversarial review reports are kept in review/ (scripts/review/report.ts).
    cli.env = { SWAMP_EXTENSION_REVIEW_DIR: REVIEW_DIR };
    await cli.install(OUR_PACKAGE);
    await body(cli);
  } finally {
    await cli.close();
  }
}

Deno.test("real swamp: extension quality earns every client-earnable rubric point", async () => {
  await withPackage(async (cli) => {
    const r = await cli.run("extension", "quality", MANIFEST, "--json");
    const q = JSON.parse(r.stdout);
    const missing = q.factors.filter((f: { status: string }) =>
      f.status === "missing"
    );
    console.log(
      `real-swamp: extension quality: ${q.earnedPoints}/${q.maxClientEarnablePoints} client-earnable points (rubric v${q.rubricVersion}; ${q.provisionalPoints} more pending server verification)`,
    );
    assert.deepEqual(missing, []);
    assert.equal(q.earnedPoints, q.maxClientEarnablePoints);
  });
});

Deno.test("real swamp: extension push --dry-run warns only about the unavoidable", async () => {
  await withPackage(async (cli) => {
    const r = await cli.run(
      "extension",
      "push",
      MANIFEST,
      "--dry-run",
      "--yes",
      "--json",
    );
    assert.equal(r.code, 0, r.stderr);
    const docs = documents(r.stdout);
    const review = docs.flatMap((d) => d.reviewRuleWarnings ?? []);
    const safety = docs.flatMap((d) => d.warnings ?? []);
    const drift = docs.flatMap((d) => d.versionDriftWarnings ?? []);
    for (const w of review) {
      console.log(`real-swamp: push review warning: ${w.ruleId}: ${w.message}`);
    }
    for (const w of safety) {
      console.log(
        `real-swamp: push safety warning: ${
          w.file.replace(/.*extensions\/models\//, "")
        }: ${w.message}`,
      );
    }
    for (const w of drift) {
      console.log(`real-swamp: push version drift: ${w.output}`);
    }
    // The adversarial review of this code is recorded (review/) and complete; a change to what
    // ships moves swamp's report path: review it again (scripts/review/report.ts says where and
    // files it). A dimension the reviewer marked `issue` is swamp's warning, not a missing review:
    // it is printed above, and review/README.md's "Left" lists what it stands for.
    assert.deepEqual(
      review.filter((w) => w.ruleId !== "adversarial-review-dimension-issue")
        .map((w) => `${w.ruleId}: ${w.message}`),
      [],
      "run `deno run -A scripts/review/report.ts`: the code changed since its review",
    );
    // The ssh transport runs `ssh`: the one subprocess the package needs.
    assert.deepEqual(
      safety.map((
        w,
      ) => [w.file.replace(/.*extensions\/models\//, ""), w.message]),
      [["_lib/host.ts", "File uses Deno.Command() to spawn subprocesses."]],
    );
    // Nothing published yet to compare with.
    assert.equal(drift.length, 1);
    assert.match(drift[0].output, /no previously published version/);
    assert.equal(docs.at(-1).status, "dry_run");
    // The workflows and the skill ship with the package.
    assert.deepEqual(
      docs[0].workflowFiles.map((f: string) => f.replace(/.*\//, "")),
      manifestList(join(OUR_PACKAGE, "manifest.yaml"), "workflows"),
    );
    assert.deepEqual(
      docs[0].skills.map((k: { name: string }) => k.name),
      manifestList(join(OUR_PACKAGE, "manifest.yaml"), "skills"),
    );
    assert.ok(docs[0].releaseNotes, "release notes");
    // The reports ship with the package.
    assert.deepEqual(
      docs[0].reports.map((
        r: { name: string; scope: string },
      ) => [r.name, r.scope]),
      [
        ["@stateless/proxmox/method-observed", "method"],
        ["@stateless/proxmox/workflow-observed", "workflow"],
      ],
    );
  });
});
