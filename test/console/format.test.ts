/**
 * The console's display formats (console/src/format.ts): USD at micro-dollar precision (D7: never rounded
 * to cents where that hides a cost), instants in a given (the browser's) time zone, and `from` dates of the
 * usage endpoints counted in calendar days of that zone.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { formatCount, formatDateTime, formatUsd, formatUsdCents, isoDateDaysAgo, plural, pluralNoun } from "../../console/src/format.ts";
import { fromLocalInput, modelsText, parseModels, parseNumberInput, periodPhrase, toLocalInput } from "../../console/src/key-controls.ts";
import { isTimeZone, parseThresholds, periodLabel, spentShare, thresholdsText, timeZones, wallClock, windowText } from "../../console/src/budgets.ts";

describe("console formats", () => {
  test("counts agree with their noun: 1 call, 0 and 2 calls, irregular plurals, grouped digits", () => {
    assert.equal(plural(1, "call"), "1 call");
    assert.equal(plural(0, "call"), "0 calls");
    assert.equal(plural(2, "call"), "2 calls");
    assert.equal(plural(-1, "request"), "-1 request");
    assert.equal(plural(12345, "request", undefined, "en-US"), "12,345 requests");
    assert.equal(plural(1, "entry", "entries"), "1 entry");
    assert.equal(plural(3, "entry", "entries"), "3 entries");
    assert.equal(pluralNoun(1, "voice"), "voice");
    assert.equal(pluralNoun(7, "voice"), "voices");
  });

  test("USD: at least cents, up to micro-dollars, never rounded to cents", () => {
    assert.equal(formatUsd(12.5, "en-US"), "$12.50");
    assert.equal(formatUsd(0.054, "en-US"), "$0.054");
    assert.equal(formatUsd(0.0002, "en-US"), "$0.0002");
    assert.equal(formatUsd(0.000001, "en-US"), "$0.000001");
    assert.equal(formatUsd(1234.567891, "en-US"), "$1,234.567891");
    assert.equal(formatUsd(-0.5, "en-US"), "-$0.50");
    assert.equal(formatUsd(-0, "en-US"), "$0.00");
    assert.equal(formatUsd(Number.NaN, "en-US"), "—");
    assert.equal(formatUsd(3.5, "de-DE"), "3,50\u00a0$");
  });

  test("USD to the cent for summaries: a small non-zero amount never reads $0.00", () => {
    assert.equal(formatUsdCents(12.5, "en-US"), "$12.50");
    assert.equal(formatUsdCents(0.054, "en-US"), "$0.05");
    assert.equal(formatUsdCents(25.496, "en-US"), "$25.50");
    assert.equal(formatUsdCents(1234.567891, "en-US"), "$1,234.57");
    assert.equal(formatUsdCents(0.0002, "en-US"), "<$0.01");
    assert.equal(formatUsdCents(-0.0002, "en-US"), "-<$0.01");
    assert.equal(formatUsdCents(0, "en-US"), "$0.00");
    assert.equal(formatUsdCents(-0, "en-US"), "$0.00");
    assert.equal(formatUsdCents(Number.NaN, "en-US"), "—");
  });

  test("dates and times in the given zone", () => {
    assert.equal(formatDateTime("2025-03-01T23:30:00Z", { timeZone: "UTC", locale: "en-US" }), "Mar 1, 2025, 11:30 PM");
    assert.equal(formatDateTime("2025-03-01T23:30:00Z", { timeZone: "Europe/Berlin", locale: "en-US" }), "Mar 2, 2025, 12:30 AM");
    assert.equal(formatDateTime(null), "—");
    assert.equal(formatDateTime("not a date"), "not a date");
  });

  test("the first day of the last N days is a calendar date of the zone", () => {
    const now = new Date("2025-03-31T23:30:00Z");
    assert.equal(isoDateDaysAgo(0, { now, timeZone: "UTC" }), "2025-03-31");
    assert.equal(isoDateDaysAgo(0, { now, timeZone: "Europe/Berlin" }), "2025-04-01");
    assert.equal(isoDateDaysAgo(6, { now, timeZone: "UTC" }), "2025-03-25");
    assert.equal(isoDateDaysAgo(29, { now, timeZone: "Pacific/Auckland" }), "2025-03-03");
    assert.equal(isoDateDaysAgo(1, { now: new Date("2025-03-01T12:00:00Z"), timeZone: "UTC" }), "2025-02-28");
  });

  test("counts group thousands", () => {
    assert.equal(formatCount(1234567, "en-US"), "1,234,567");
    assert.equal(formatCount(undefined), "—");
  });
});

describe("key controls as form fields (console/src/key-controls.ts, D34)", () => {
  test("the model list: comma- or space-separated, duplicates dropped, empty is every model (null)", () => {
    assert.deepEqual(parseModels(" txtA-large, imgA-*,,txtA-large  vidA-v1 "), ["txtA-large", "imgA-*", "vidA-v1"]);
    assert.equal(parseModels("  , "), null);
    assert.equal(modelsText(["txtA-large", "imgA-*"]), "txtA-large, imgA-*");
    assert.equal(modelsText(null), "");
  });
  test("the expiry: an instant as a datetime-local value in a zone, to the minute; empty is null", () => {
    assert.equal(toLocalInput("2027-01-01T00:00:59Z", "UTC"), "2027-01-01T00:00");
    assert.equal(toLocalInput("2027-01-01T00:00:00Z", "Asia/Tokyo"), "2027-01-01T09:00");
    assert.equal(toLocalInput("2027-07-01T23:30:00Z", "America/New_York"), "2027-07-01T19:30");
    assert.equal(toLocalInput(null), "");
    assert.equal(fromLocalInput(""), null);
    // A datetime-local value is read in the zone the field shows (the process's here), and round-trips.
    assert.equal(toLocalInput(fromLocalInput("2027-03-04T05:06")), "2027-03-04T05:06");
  });
  test("numbers: empty is null (no limit), else the number; periods read in a sentence", () => {
    assert.equal(parseNumberInput(" "), null);
    assert.equal(parseNumberInput("0.25"), 0.25);
    assert.equal(parseNumberInput("0"), 0);
    assert.equal(periodPhrase("month"), "this month");
    assert.equal(periodPhrase("total"), "in total");
  });
});

describe("console budget texts (D44)", () => {
  test("a window reads in the budget's own zone, the end being the next window's start; a total budget only has a start", () => {
    assert.equal(wallClock("2026-11-29T15:00:00Z", "Asia/Tokyo", false, "en-US"), "Nov 30, 00:00");
    assert.equal(windowText({ window_start: "2026-11-29T15:00:00Z", window_end: "2026-11-30T15:00:00Z", timezone: "Asia/Tokyo" }, "en-US"), "Nov 30, 00:00 – Dec 1, 00:00");
    assert.equal(windowText({ window_start: "2026-03-28T23:00:00Z", window_end: "2026-03-29T22:00:00Z", timezone: "Europe/Paris" }, "en-US"), "Mar 29, 00:00 – Mar 30, 00:00", "a 23-hour day");
    assert.equal(windowText({ window_start: "2026-11-01T09:30:00Z", window_end: null, timezone: "UTC" }, "en-US"), "since Nov 1, 2026, 09:30");
    assert.equal(wallClock("2026-11-29T15:00:00Z", "Not/AZone", false, "en-US"), "Nov 29, 15:00", "an unknown zone reads in UTC");
  });
  test("thresholds typed as percentages: sorted, deduplicated, 1 to 100; empty is none", () => {
    assert.deepEqual(parseThresholds("80, 50 100"), [50, 80, 100]);
    assert.deepEqual(parseThresholds("50%,50"), [50]);
    assert.deepEqual(parseThresholds(" "), []);
    assert.equal(parseThresholds("0, 50"), null);
    assert.equal(parseThresholds("120"), null);
    assert.equal(parseThresholds("half"), null);
    assert.equal(parseThresholds("12.5"), null);
    assert.equal(thresholdsText([50, 80, 100]), "50%, 80%, 100%");
    assert.equal(thresholdsText([]), "none");
  });
  test("periods, the spent share of the bar, and the time zones offered", () => {
    assert.deepEqual((["day", "week", "month", "total"] as const).map(periodLabel), ["Daily", "Weekly", "Monthly", "Total"]);
    assert.equal(spentShare({ spent_usd: 2.5, amount_usd: 10 }), 0.25);
    assert.equal(spentShare({ spent_usd: 12, amount_usd: 10 }), 1);
    const zones = timeZones();
    assert.equal(zones[0], "UTC");
    assert.ok(zones.includes("Asia/Tokyo") && zones.includes("America/New_York"));
    assert.ok(isTimeZone("Asia/Tokyo") && !isTimeZone("Mars/Olympus") && !isTimeZone(""));
  });
});
