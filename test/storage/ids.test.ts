/** Public ids (src/ids.ts): random ones, and time-ordered ones that sort by creation time. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { newId, newTimeOrderedId } from "../../src/ids.ts";

test("random ids: prefix and 22 letters or digits, never repeated", () => {
  const ids = new Set(Array.from({ length: 10_000 }, () => newId("x")));
  assert.equal(ids.size, 10_000);
  for (const id of ids) assert.match(id, /^x_[A-Za-z0-9]{22}$/);
});

test("time-ordered ids sort (byte order) as their creation times and keep 22 random characters", () => {
  const times = [0, 1, 61, 62, 1_700_000_000_000, 1_700_000_000_001, Date.now(), 4_102_444_800_000];
  const ids = times.map((t) => newTimeOrderedId("req", t));
  for (const id of ids) assert.match(id, /^req_[A-Za-z0-9]{30}$/);
  const sorted = [...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  assert.deepEqual(sorted, ids);
  // Same millisecond: still distinct.
  const same = new Set(Array.from({ length: 1000 }, () => newTimeOrderedId("le", 5)));
  assert.equal(same.size, 1000);
});
