/**
 * Model lifecycle over HTTP (D35): `GET /v1/models` and the media rows of `GET /v1/pricing` carry
 * `deprecated` and `shutdown_date`; with `MODEL_SHUTDOWN_DATES` naming a past day, every route that takes a
 * catalog model answers 410 `model_retired` (the D1 body naming the model and the date) before any hold:
 * the balance and the ledger are untouched. A model whose date is still ahead is served as before.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { DEMO_ALPHA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";

const PAST = "2020-01-01";
const FUTURE = "2099-12-31";

describe("the built-in catalog's lifecycle fields", () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway("sqlite");
  });
  after(() => gw?.close());

  test("GET /v1/models: every model has deprecated and shutdown_date; imgB-1.1-ultra and imgA-v3 are deprecated", async () => {
    const u = await gw.register();
    const { data } = await gw.client(u.api_key).GET("/v1/models");
    assert.ok(data);
    for (const m of data.data) {
      assert.equal(typeof m.deprecated, "boolean", m.id);
      assert.equal(m.shutdown_date, null, m.id);
    }
    assert.deepEqual(data.data.filter((m) => m.deprecated).map((m) => m.id).sort(), ["imgA-v3", "imgB-1.1-ultra"]);
    assert.ok(data.data.some((m) => m.modality === "text" && m.deprecated === false));
  });

  test("GET /v1/pricing: every media row has them; text rows are unchanged", async () => {
    const { data } = await gw.client().GET("/v1/pricing");
    assert.ok(data);
    for (const row of data.media) {
      assert.equal(row.deprecated, row.id === "imgA-v3" || row.id === "imgB-1.1-ultra", row.id);
      assert.equal(row.shutdown_date, null, row.id);
    }
    for (const row of data.text) assert.deepEqual(Object.keys(row), ["id", "name", "input_per_1m", "output_per_1m", "cached_input_per_1m"]);
  });
});

describe(`MODEL_SHUTDOWN_DATES with past (${PAST}) and future (${FUTURE}) days`, () => {
  let gw: TestGateway;
  let user: { user_id: string; org_id: string; api_key: string };

  before(async () => {
    gw = await startGateway("sqlite", {
      MODEL_SHUTDOWN_DATES: [
        `alpha-v3=${PAST}`,
        `alpha-music=${PAST}`,
        `alpha-sfx=${PAST}`,
        `beta-voice-design=${PAST}`,
        `imgA-v4=${PAST}`,
        `vidD-3-fast=${PAST}`,
        `txtA-large=${PAST}`,
        `host1-transcribe-1=${PAST}`,
        `imgA-v4-pro=${FUTURE}`,
        `txtB-flash=${FUTURE}`,
      ].join(","),
    });
    user = await gw.register();
  });
  after(() => gw?.close());

  /** Balance and ledger sum, micro-USD, and the number of ledger entries. */
  async function money() {
    const db = gw.services.db.kysely;
    const entries = await db.selectFrom("ledger_entries").select("kind").where("account_id", "=", user.org_id).execute();
    return { balance: await getBalance(db, user.org_id), sum: await ledgerSum(db, user.org_id), entries: entries.length };
  }

  test("the lists show the dates; a model with a date is deprecated; a retired one stays listed", async () => {
    const { data } = await gw.client(user.api_key).GET("/v1/models");
    const byId = new Map((data?.data ?? []).map((m) => [m.id, m]));
    assert.deepEqual({ deprecated: byId.get("alpha-v3")?.deprecated, shutdown_date: byId.get("alpha-v3")?.shutdown_date }, { deprecated: true, shutdown_date: PAST });
    assert.deepEqual({ deprecated: byId.get("imgA-v4-pro")?.deprecated, shutdown_date: byId.get("imgA-v4-pro")?.shutdown_date }, { deprecated: true, shutdown_date: FUTURE });
    assert.deepEqual({ deprecated: byId.get("txtA-large")?.deprecated, shutdown_date: byId.get("txtA-large")?.shutdown_date }, { deprecated: true, shutdown_date: PAST });
    assert.equal(byId.get("alpha-multilingual-v2")?.shutdown_date, null);
    const pricing = (await gw.client().GET("/v1/pricing")).data;
    const row = pricing?.media.find((r) => r.id === "imgA-v4");
    assert.deepEqual({ deprecated: row?.deprecated, shutdown_date: row?.shutdown_date }, { deprecated: true, shutdown_date: PAST });
  });

  test("every route taking a retired model answers 410 model_retired naming it and the date; nothing held or charged", async () => {
    const before = await money();
    const calls: [string, unknown, string][] = [
      ["/v1/audio/speech", { model: "alpha-v3", input: "hello there", voice_id: DEMO_ALPHA_VOICE_ID }, "alpha-v3"],
      ["/v1/audio/music", { model: "alpha-music", prompt: "a calm piano", music_length_ms: 10_000 }, "alpha-music"],
      ["/v1/audio/sfx", { text: "a door creaks" }, "alpha-sfx"],
      ["/v1/audio/voice-design", { description: "a warm narrator voice" }, "beta-voice-design"],
      ["/v1/images/generations", { model: "imgA-v4", prompt: "a red kite" }, "imgA-v4"],
      ["/v1/videos/generations", { model: "vidD-3-fast", prompt: "waves", duration: 4 }, "vidD-3-fast"],
      ["/v1/genmedia/jobs", { model: "vidD-3-fast", prompt: "waves" }, "vidD-3-fast"],
      ["/v1/chat/completions", { model: "txtA-large", messages: [{ role: "user", content: "hi" }], max_tokens: 16 }, "txtA-large"],
      // An alias resolving to a retired model is retired too.
      ["/v1/chat/completions", { model: "best", messages: [{ role: "user", content: "hi" }], max_tokens: 16 }, "txtA-large"],
      ["/v1/messages", { model: "txtA-large", max_tokens: 16, messages: [{ role: "user", content: "hi" }] }, "txtA-large"],
      // Refused before the audio is downloaded.
      ["/v1/audio/transcriptions", { audio_url: "https://audio.example.com/a.wav", model: "transcribe" }, "host1-transcribe-1"],
    ];
    for (const [path, body, model] of calls) {
      const r = await gw.request("POST", path, { token: user.api_key, body });
      assert.equal(r.status, 410, `${path} ${model}: ${JSON.stringify(r.json)}`);
      assert.deepEqual(r.json, {
        error: {
          code: "model_retired",
          message: `${model} was retired on ${PAST} (its shutdown date) and is no longer served; choose another model (GET /v1/models). Nothing was charged.`,
          type: "invalid_request_error",
          param: "model",
        },
      });
    }
    assert.deepEqual(await money(), before, "no hold, no charge, no ledger entry");
    const jobs = await gw.services.db.kysely.selectFrom("jobs").select("id").where("account_id", "=", user.org_id).execute();
    assert.equal(jobs.length, 0, "no job was created");
  });

  test("a model whose date is still ahead is served and charged as before", async () => {
    await gw.deposit(user.user_id, 5);
    const image = await gw.request("POST", "/v1/images/generations", { token: user.api_key, body: { model: "imgA-v4-pro", prompt: "a red kite" } });
    assert.equal(image.status, 202, JSON.stringify(image.json));
    const done = await gw.waitForJob(user.api_key, image.json.id);
    assert.equal(done.json.status, "succeeded", JSON.stringify(done.json));
    const chat = await gw.request("POST", "/v1/chat/completions", { token: user.api_key, body: { model: "fast", messages: [{ role: "user", content: "hi" }], max_tokens: 16 } });
    assert.equal(chat.status, 200, JSON.stringify(chat.json));
    assert.equal(chat.json.model, "txtB-flash");
  });
});

describe("an invalid MODEL_SHUTDOWN_DATES stops the start", () => {
  test("an unknown model id or an alias, naming the variable and the id", async () => {
    for (const [value, pattern] of [
      ["imgZ-9=2027-01-01", /MODEL_SHUTDOWN_DATES names 'imgZ-9', which is not a model id/],
      ["best=2027-01-01", /MODEL_SHUTDOWN_DATES names 'best'/],
      ["imgA-v3=2027-13-01", /MODEL_SHUTDOWN_DATES must be a comma list/],
    ] as const) {
      await assert.rejects(startGateway("sqlite", { MODEL_SHUTDOWN_DATES: value }), pattern, value);
    }
  });
});
