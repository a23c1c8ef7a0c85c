import assert from "node:assert/strict";
import { withConsoleCapture } from "../../harness/console_capture.ts";

Deno.test("overlapping runs share the console capture and the last one out restores the console", async () => {
  const real = console.log;
  const first: string[] = [];
  const second: string[] = [];
  let endFirst = () => {};
  const firstRun = withConsoleCapture(
    () => new Promise<void>((resolve) => endFirst = resolve),
    first,
  );
  const secondRun = withConsoleCapture(async () => {
    console.log("both see this");
    endFirst();
    await firstRun;
    console.log("only the second sees this");
  }, second);
  await secondRun;
  assert.deepEqual(first, ["both see this"]);
  assert.deepEqual(second, ["both see this", "only the second sees this"]);
  assert.equal(console.log, real);
});
