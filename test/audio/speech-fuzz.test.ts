/**
 * Property-based: generated bodies thrown at the speech endpoint never produce a 5xx, and a 4xx never
 * charges anything; a 200 charges exactly its X-Svc-Cost-USD (DEVELOPERS.md "Bad input", docs/architecture.md 6).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import fc from "fast-check";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { usdToMicros } from "../../src/money.ts";
import { DEMO_ALPHA_VOICE_ID, DEMO_BETA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";

const anyValue = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: "grapheme", maxLength: 30 }),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.dictionary(
    fc.string({ maxLength: 8 }),
    fc.oneof(fc.integer(), fc.string({ maxLength: 5 }), fc.double()),
  ),
);

const fieldValue = {
  model: fc.oneof(
    fc.constantFrom(
      "alpha-v3",
      "alpha-multilingual-v2",
      "alpha-flash-v2-5",
      "alpha-turbo-v2-5",
      "beta-speech-hd",
      "beta-speech-turbo",
      "alpha-music",
      "",
    ),
    anyValue,
  ),
  input: fc.oneof(
    fc.string({ unit: "grapheme", minLength: 1, maxLength: 60 }),
    anyValue,
    fc.constant("x".repeat(5001)),
  ),
  text: fc.oneof(fc.string({ minLength: 1, maxLength: 60 }), anyValue),
  voice_id: fc.oneof(fc.constantFrom(DEMO_ALPHA_VOICE_ID, DEMO_BETA_VOICE_ID, "svc_nope", ""), anyValue),
  voice: fc.oneof(fc.constantFrom(DEMO_ALPHA_VOICE_ID, DEMO_BETA_VOICE_ID), anyValue),
  response_format: fc.oneof(
    fc.constantFrom("mp3_22050_32", "pcm_16000", "ulaw_8000", "mp3_44100_128", "flac"),
    anyValue,
  ),
  voice_settings: fc.oneof(
    fc.record(
      {
        stability: fc.oneof(fc.double(), anyValue),
        similarity_boost: fc.double({ min: 0, max: 1 }),
        style: anyValue,
        use_speaker_boost: anyValue,
      },
      { requiredKeys: [] },
    ),
    anyValue,
  ),
  stream: fc.oneof(fc.boolean(), anyValue),
};

/** A valid body with at most one field replaced by a generated value (reaches the paths that charge). */
const nearlyValid = fc
  .tuple(
    fc.record({
      model: fc.constantFrom("alpha-v3", "alpha-flash-v2-5", "alpha-turbo-v2-5"),
      input: fc.string({ unit: "grapheme", minLength: 1, maxLength: 60 }).filter((s) => s.trim().length > 0),
      voice_id: fc.constant(DEMO_ALPHA_VOICE_ID),
      response_format: fc.constantFrom("pcm_16000", "ulaw_8000", "mp3_22050_32"),
    }),
    fc.option(fc.tuple(fc.constantFrom(...Object.keys(fieldValue)), anyValue), { freq: 2 }),
  )
  .map(([base, mutation]) => (mutation === null ? base : { ...base, [mutation[0]]: mutation[1] }));

const body = fc.oneof(
  { weight: 5, arbitrary: nearlyValid },
  { weight: 4, arbitrary: fc.record(fieldValue, { requiredKeys: [] }) },
  { weight: 1, arbitrary: fc.string({ maxLength: 50 }) },
  {
    weight: 1,
    arbitrary: fc.oneof(
      fc.json(),
      fc.jsonValue().map((v) => JSON.stringify(v)),
    ),
  },
);

describe("speech endpoint under generated input", () => {
  let gw: TestGateway;
  let user: { user_id: string; org_id: string; api_key: string };
  before(async () => {
    gw = await startGateway("sqlite");
    user = await gw.register();
    await gw.deposit(user.user_id, 1000);
  });
  after(async () => {
    await gw?.close();
  });

  test("never 5xx; 4xx never charges; 200 charges exactly its cost", async () => {
    const db = gw.services.db.kysely;
    let seen2xx = 0;
    let seen4xx = 0;
    await fc.assert(
      fc.asyncProperty(body, async (b) => {
        const before = (await getBalance(db, user.org_id)) ?? 0;
        const payload = typeof b === "string" ? b : JSON.stringify(b);
        const res = await fetch(`${gw.url}/v1/audio/speech`, {
          method: "POST",
          headers: { authorization: `Bearer ${user.api_key}`, "content-type": "application/json" },
          body: payload,
        });
        const bytes = Buffer.from(await res.arrayBuffer());
        const afterBalance = (await getBalance(db, user.org_id)) ?? 0;
        assert.ok(
          res.status < 500,
          `status ${res.status} for ${payload.slice(0, 200)}: ${bytes.toString().slice(0, 200)}`,
        );
        if (res.status >= 400) {
          seen4xx++;
          const json = JSON.parse(bytes.toString("utf8"));
          assert.equal(typeof json.error.code, "string");
          assert.equal(afterBalance, before, "a 4xx charged money");
        } else {
          seen2xx++;
          const cost = usdToMicros(res.headers.get("x-svc-cost-usd") ?? "");
          assert.equal(afterBalance, before - (cost ?? Number.NaN));
        }
      }),
      { numRuns: 300 },
    );
    assert.equal(await getBalance(db, user.org_id), await ledgerSum(db, user.org_id));
    assert.ok(seen4xx > 0);
    assert.ok(seen2xx > 0);
    console.log(`# generated bodies: ${seen2xx} accepted, ${seen4xx} refused`);
  });
});
