import assert from "node:assert/strict";
import { peakInWindow } from "./fleet.ts";

Deno.test("the fleet's peak counts the most requests inside any one-second window", () => {
  assert.equal(peakInWindow([], 1000), 0);
  assert.equal(peakInWindow([0, 10, 999, 1000, 1500, 1999], 1000), 3);
  assert.equal(peakInWindow([0, 100, 200, 1200, 1250, 1300, 1350], 1000), 4);
  assert.equal(peakInWindow([0, 1000, 2000], 1000), 1);
});
