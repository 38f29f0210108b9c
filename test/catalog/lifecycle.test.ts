/**
 * Model lifecycle (D35, src/catalog/lifecycle.ts): `deprecated` for the spec's legacy models and for any
 * model with a shutdown date, `MODEL_SHUTDOWN_DATES` parsed by loadConfig and checked against the catalog,
 * and the 410 `model_retired` from 00:00 UTC of the shutdown day, raised where requests resolve their model
 * (`getModelOf`) but not where past work is read (`findModelOf`).
 */
import assert from "node:assert/strict";
import { afterEach, describe, test } from "node:test";
import { loadConfig } from "../../src/config.ts";
import { AppError } from "../../src/errors.ts";
import { checkNotRetired, isRetired, lifecycleOf, setShutdownDates, shutdownDateOf } from "../../src/catalog/lifecycle.ts";
import { configureModelLifecycle, enabledModels, findModelOf, getModelOf } from "../../src/catalog/models.ts";
import { buildPricingCatalog } from "../../src/catalog/pricing.ts";

/** `loadConfig` with only the variables a test names. */
const config = (env: Record<string, string>) => loadConfig({ DATABASE_URL: "sqlite::memory:", ...env });

afterEach(() => setShutdownDates({}));

describe("MODEL_SHUTDOWN_DATES (config)", () => {
  test("unset or empty: no dates; a comma list of id=YYYY-MM-DD", () => {
    assert.deepEqual(config({}).modelShutdownDates, {});
    assert.deepEqual(config({ MODEL_SHUTDOWN_DATES: " " }).modelShutdownDates, {});
    assert.deepEqual(config({ MODEL_SHUTDOWN_DATES: "imgA-v3=2027-03-31, imgB-1.1-ultra = 2027-06-30" }).modelShutdownDates, {
      "imgA-v3": "2027-03-31",
      "imgB-1.1-ultra": "2027-06-30",
    });
  });

  test("a malformed entry, an impossible date or a repeated id stops the start, naming the variable", () => {
    for (const bad of ["imgA-v3", "imgA-v3=", "imgA-v3=2027-02-30", "imgA-v3=27-01-01", "imgA-v3=2027-1-1", "=2027-01-01", "imgA-v3=2027-01-01,", "imgA-v3=2027-01-01T00:00:00Z"]) {
      assert.throws(() => config({ MODEL_SHUTDOWN_DATES: bad }), /MODEL_SHUTDOWN_DATES must be a comma list of <model id>=<YYYY-MM-DD>/, bad);
    }
    assert.throws(() => config({ MODEL_SHUTDOWN_DATES: "imgA-v3=2027-01-01,imgA-v3=2028-01-01" }), /MODEL_SHUTDOWN_DATES names imgA-v3 twice/);
  });

  test("configureModelLifecycle takes media and text model ids, refuses unknown ids and aliases", () => {
    configureModelLifecycle({ "imgA-v3": "2027-03-31", "txtA-large": "2027-01-01", "host1-transcribe-1": "2027-01-01" });
    assert.equal(shutdownDateOf("imgA-v3"), "2027-03-31");
    assert.equal(shutdownDateOf("txtA-large"), "2027-01-01");
    for (const id of ["imgZ-9", "transcribe", "best"]) {
      assert.throws(() => configureModelLifecycle({ [id]: "2027-01-01" }), new RegExp(`MODEL_SHUTDOWN_DATES names '${id}', which is not a model id`), id);
    }
    // A refused table changes nothing.
    assert.equal(shutdownDateOf("imgA-v3"), "2027-03-31");
    configureModelLifecycle({});
    assert.equal(shutdownDateOf("imgA-v3"), null);
  });
});

describe("deprecated and shutdown_date", () => {
  test("the built-in catalog: imgB-1.1-ultra and imgA-v3 deprecated, no shutdown dates", () => {
    const deprecated = enabledModels().filter((m) => lifecycleOf(m.id, m.legacy).deprecated).map((m) => m.id);
    assert.deepEqual(deprecated.sort(), ["imgA-v3", "imgB-1.1-ultra"]);
    assert.ok(enabledModels().every((m) => lifecycleOf(m.id, m.legacy).shutdown_date === null));
    const rows = buildPricingCatalog().media;
    assert.deepEqual(rows.filter((r) => r.deprecated).map((r) => r.id), ["imgA-v3", "imgB-1.1-ultra"]);
    assert.ok(rows.every((r) => r.shutdown_date === null));
  });

  test("a model given a shutdown date is deprecated and shows it (pricing rows too)", () => {
    setShutdownDates({ "alpha-v3": "2027-05-01" });
    assert.deepEqual(lifecycleOf("alpha-v3", false), { deprecated: true, shutdown_date: "2027-05-01" });
    const row = buildPricingCatalog().media.find((r) => r.id === "alpha-v3");
    assert.equal(row?.deprecated, true);
    assert.equal(row?.shutdown_date, "2027-05-01");
  });
});

describe("410 model_retired", () => {
  const day = (iso: string) => Date.parse(iso);

  test("retired from 00:00 UTC of the shutdown day", () => {
    setShutdownDates({ "imgA-v3": "2027-03-31" });
    assert.equal(isRetired("imgA-v3", day("2027-03-30T23:59:59.999Z")), false);
    assert.equal(isRetired("imgA-v3", day("2027-03-31T00:00:00.000Z")), true);
    assert.equal(isRetired("imgA-v3", day("2030-01-01T00:00:00.000Z")), true);
    assert.equal(isRetired("imgA-v4", day("2030-01-01T00:00:00.000Z")), false);
    checkNotRetired("imgA-v3", day("2027-03-30T12:00:00Z"));
    const err = (() => {
      try {
        checkNotRetired("imgA-v3", day("2027-04-01T00:00:00Z"));
      } catch (e) {
        return e;
      }
      return null;
    })();
    assert.ok(err instanceof AppError);
    assert.deepEqual(err.toBody(), {
      error: {
        code: "model_retired",
        message: "imgA-v3 was retired on 2027-03-31 (its shutdown date) and is no longer served; choose another model (GET /v1/models). Nothing was charged.",
        type: "invalid_request_error",
        param: "model",
      },
    });
  });

  test("getModelOf refuses a retired model (also through its alias); findModelOf still reads it for past work", () => {
    setShutdownDates({ "imgA-v3": "2020-01-01", "host1-transcribe-1": "2020-01-01" });
    assert.throws(() => getModelOf("imgA-v3", "image"), (e: unknown) => e instanceof AppError && e.status === 410 && e.code === "model_retired");
    assert.throws(() => getModelOf("transcribe", "transcription"), /host1-transcribe-1 was retired on 2020-01-01/);
    assert.equal(findModelOf("imgA-v3", "image")?.id, "imgA-v3");
    assert.equal(getModelOf("imgA-v4", "image")?.id, "imgA-v4");
    // Unknown or of another capability: still undefined (the caller's 400), not a 410.
    assert.equal(getModelOf("imgA-v3", "video"), undefined);
    assert.equal(getModelOf("nope", "image"), undefined);
  });
});
