import assert from "node:assert/strict";
import { test } from "node:test";
import { divRoundHalfUp, formatUsd, microsToUsd, roundToStep, usdToMicros } from "../../src/money.ts";

test("usdToMicros reads decimal text exactly", () => {
  assert.equal(usdToMicros(0.1), 100_000);
  assert.equal(usdToMicros("0.405"), 405_000);
  assert.equal(usdToMicros(10), 10_000_000);
  assert.equal(usdToMicros("0.000001"), 1);
  assert.equal(usdToMicros(1e-6), 1);
  assert.equal(usdToMicros("0.0000001"), null);
  assert.equal(usdToMicros("abc"), null);
  assert.equal(usdToMicros(Number.NaN), null);
  assert.equal(usdToMicros(Number.POSITIVE_INFINITY), null);
  assert.equal(usdToMicros("1e400"), null);
  assert.equal(usdToMicros(-2.5), -2_500_000);
});

test("formatUsd and microsToUsd show at most 6 decimals", () => {
  assert.equal(formatUsd(405_000), "0.405");
  assert.equal(formatUsd(12_000_000), "12");
  assert.equal(formatUsd(1), "0.000001");
  assert.equal(formatUsd(-1), "-0.000001");
  assert.equal(microsToUsd(123_456_789), 123.456789);
});

test("half-up rounding", () => {
  assert.equal(divRoundHalfUp(5n, 10n), 1n);
  assert.equal(divRoundHalfUp(4n, 10n), 0n);
  assert.equal(divRoundHalfUp(15n, 10n), 2n);
  assert.equal(roundToStep(40_500, 1000), 41_000);
  assert.equal(roundToStep(40_499, 1000), 40_000);
});
