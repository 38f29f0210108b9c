/**
 * The ElevenLabs dialect (D36) proven with `@elevenlabs/elevenlabs-js` itself, unchanged, against a real
 * gateway on loopback (simulator): speech and speech streaming with exact money (balance, ledger, usage
 * record), models, user and subscription, and the error shapes (unknown key, balance too low, bad body,
 * unknown model), a test-mode key that moves no money, voices (v1 list, v2 search and paging, one voice, the
 * caller's own designed voice) and beta voices.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ElevenLabsClient, ElevenLabsError } from "@elevenlabs/elevenlabs-js";
import { usdToMicros } from "../../src/money.ts";
import { DEMO_ALPHA_VOICE_ID, DEMO_BETA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../helpers/gateway.ts";

/** Every byte of a web stream. */
async function drain(stream: ReadableStream<Uint8Array>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>) parts.push(Buffer.from(chunk));
  return Buffer.concat(parts);
}

for (const backend of BACKENDS) describe(`the ElevenLabs SDK against the gateway (D36), ${backend.name}`, { skip: backend.skip }, () => {
  let gw: TestGateway;
  let user: { user_id: string; org_id: string; api_key: string };
  let el: ElevenLabsClient;

  const micros = (usd: string | null): number => {
    const m = usdToMicros(usd ?? "");
    assert.ok(m !== null, `a USD amount: ${usd}`);
    return m;
  };
  async function balanceOf(token: string): Promise<number> {
    const r = await gw.request("GET", "/v1/auth/me", { token });
    return micros(r.json.balance_usd);
  }
  async function ledgerSum(accountId: string): Promise<number> {
    const row = await gw.services.db.kysely
      .selectFrom("ledger_entries")
      .select((eb) => eb.fn.sum<number | string>("amount_micros").as("s"))
      .where("account_id", "=", accountId)
      .executeTakeFirst();
    return Number(row?.s ?? 0);
  }
  async function usageOf(requestId: string) {
    return gw.services.db.kysely.selectFrom("usage_records").selectAll().where("id", "=", requestId).executeTakeFirstOrThrow();
  }
  async function ledgerCount(accountId: string): Promise<number> {
    const rows = await gw.services.db.kysely.selectFrom("ledger_entries").select("id").where("account_id", "=", accountId).execute();
    return rows.length;
  }
  /** The SDK error of a call that must fail. */
  async function failure(call: Promise<unknown>): Promise<ElevenLabsError> {
    try {
      await call;
    } catch (err) {
      assert.ok(err instanceof ElevenLabsError, `an ElevenLabsError: ${String(err)}`);
      return err;
    }
    assert.fail("the call succeeded");
  }

  before(async () => {
    gw = await startGateway(backend.name);
    user = await gw.register();
    await gw.deposit(user.user_id, 20);
    // Tier 0 allows 30 requests a minute; this file makes more (an enterprise limit, D22).
    assert.equal((await gw.request("PUT", `/v1/admin/users/${user.user_id}/limits`, { token: ADMIN_TOKEN, body: { rpm: 100_000 } })).status, 200);
    el = new ElevenLabsClient({ baseUrl: `${gw.url}/elevenlabs`, apiKey: user.api_key });
  });
  after(async () => {
    await gw?.close();
  });

  test("textToSpeech.convert: audio bytes, ElevenLabs' headers, exact money", async () => {
    const before = await balanceOf(user.api_key);
    const text = "Hello from the gateway.";
    const { data, rawResponse } = await el.textToSpeech.convert(DEMO_ALPHA_VOICE_ID, { text }).withRawResponse();
    const audio = await drain(data);
    assert.ok(audio.length > 0);
    const h = rawResponse.headers;
    assert.equal(h.get("content-type"), "audio/mpeg");
    assert.equal(h.get("x-svc-model"), "alpha-multilingual-v2", "the default model_id eleven_multilingual_v2");
    assert.equal(h.get("character-cost"), String(text.length));
    assert.equal(h.get("x-svc-chars-billed"), String(text.length));
    const requestId = h.get("request-id");
    assert.match(requestId ?? "", /^req_/);
    assert.equal(h.get("x-svc-request-id"), requestId);
    const cost = micros(h.get("x-svc-cost-usd"));
    // 0.405 USD per 1000 characters, exactly.
    assert.equal(cost, Math.ceil((text.length * 405_000) / 1000));
    const after = await balanceOf(user.api_key);
    assert.equal(before - after, cost);
    assert.equal(micros(h.get("x-svc-balance-usd")), after);
    assert.equal(await ledgerSum(user.org_id), after);
    const usage = await usageOf(requestId ?? "");
    assert.equal(usage.kind, "speech");
    assert.equal(usage.status, "succeeded");
    assert.equal(usage.cost_micros, cost);
    assert.equal(usage.characters, text.length);
  });

  test("textToSpeech.stream with an ElevenLabs model id and output format; a catalog id is accepted too", async () => {
    const before = await balanceOf(user.api_key);
    const { data, rawResponse } = await el.textToSpeech
      .stream(DEMO_ALPHA_VOICE_ID, { text: "Streaming words.", modelId: "eleven_flash_v2_5", outputFormat: "pcm_16000" })
      .withRawResponse();
    assert.ok((await drain(data)).length > 0);
    assert.equal(rawResponse.headers.get("x-svc-model"), "alpha-flash-v2-5");
    assert.equal(rawResponse.headers.get("content-type"), "audio/pcm");
    const cost = micros(rawResponse.headers.get("x-svc-cost-usd"));
    assert.equal(cost, Math.ceil((16 * 200_000) / 1000));
    const mid = await balanceOf(user.api_key);
    assert.equal(before - mid, cost);

    const second = await el.textToSpeech.convert(DEMO_ALPHA_VOICE_ID, { text: "v3", modelId: "alpha-v3" }).withRawResponse();
    await drain(second.data);
    assert.equal(second.rawResponse.headers.get("x-svc-model"), "alpha-v3");
    const after = await balanceOf(user.api_key);
    assert.equal(mid - after, micros(second.rawResponse.headers.get("x-svc-cost-usd")));
    assert.equal(await ledgerSum(user.org_id), after);
  });

  test("textToSoundEffects.convert and music.compose: audio bytes, exact money, the native kinds", async () => {
    let balance = await balanceOf(user.api_key);
    const sfx = await el.textToSoundEffects.convert({ text: "a door creaking open", durationSeconds: 2 }).withRawResponse();
    assert.ok((await drain(sfx.data)).length > 0);
    const sh = sfx.rawResponse.headers;
    assert.equal(sh.get("x-svc-model"), "alpha-sfx");
    assert.match(sh.get("request-id") ?? "", /^req_/);
    const sfxCost = micros(sh.get("x-svc-cost-usd"));
    let after = await balanceOf(user.api_key);
    assert.equal(balance - after, sfxCost);
    assert.equal((await usageOf(sh.get("request-id") ?? "")).kind, "sfx");
    balance = after;

    const music = await el.music.compose({ prompt: "calm lo-fi piano", musicLengthMs: 10_000, modelId: "music_v1" }).withRawResponse();
    assert.ok((await drain(music.data)).length > 0);
    const mh = music.rawResponse.headers;
    assert.equal(mh.get("x-svc-model"), "alpha-music");
    assert.equal(mh.get("x-svc-duration-sec"), "10");
    const musicCost = micros(mh.get("x-svc-cost-usd"));
    after = await balanceOf(user.api_key);
    assert.equal(balance - after, musicCost);
    assert.equal((await usageOf(mh.get("request-id") ?? "")).kind, "music");
    assert.equal(await ledgerSum(user.org_id), after);

    const bad = await failure(el.textToSoundEffects.convert({ text: "boom", durationSeconds: 60 }));
    assert.equal(bad.statusCode, 422);
    assert.deepEqual((bad.body as { detail: { loc: unknown[] }[] }).detail[0].loc, ["body", "duration_seconds"]);
    assert.equal(await balanceOf(user.api_key), after);
  });

  test("models.list: the alpha speech models as ElevenLabs models", async () => {
    const models = await el.models.list();
    const ids = models.map((m) => m.modelId);
    for (const id of ["eleven_v3", "eleven_multilingual_v2", "eleven_flash_v2_5", "eleven_turbo_v2_5"]) assert.ok(ids.includes(id), id);
    const m = models.find((x) => x.modelId === "eleven_multilingual_v2");
    assert.equal(m?.canDoTextToSpeech, true);
    assert.equal(m?.maximumTextLengthPerRequest, 5000);
    assert.ok((m?.languages ?? []).length > 0);
  });

  test("user.get and user.subscription.get: tier name, characters this month, what the balance buys", async () => {
    const me = (await gw.request("GET", "/v1/auth/me", { token: user.api_key })).json;
    const usage = await gw.services.db.kysely.selectFrom("usage_records").select("characters").where("account_id", "=", user.org_id).where("status", "=", "succeeded").execute();
    const chars = usage.reduce((s, r) => s + (r.characters ?? 0), 0);
    const balance = micros(me.balance_usd);
    const sub = await el.user.subscription.get();
    assert.equal(sub.tier, me.tier_name);
    assert.equal(sub.status, "active");
    assert.equal(sub.characterCount, chars);
    assert.equal(sub.characterLimit, Math.floor((balance * 1000) / 405_000));
    assert.deepEqual(sub.currentOverage, { amount: "0", currency: "usd" });
    assert.equal(sub.hasOpenInvoices, false);
    const u = await el.user.get();
    assert.equal(u.userId, user.user_id);
    assert.equal(u.workspaceId, user.org_id);
    assert.equal(u.subscription.tier, me.tier_name);
    assert.equal(u.subscription.characterCount, chars);
    assert.equal(typeof u.createdAt, "number");
  });

  test("an unknown key: 401 in ElevenLabs' shape, through the SDK's error class", async () => {
    const bad = new ElevenLabsClient({ baseUrl: `${gw.url}/elevenlabs`, apiKey: "gw_not_a_real_key" });
    const err = await failure(bad.textToSpeech.convert(DEMO_ALPHA_VOICE_ID, { text: "hi" }));
    assert.equal(err.statusCode, 401);
    assert.equal((err.body as { detail: { status: string } }).detail.status, "auth_error");
    assert.equal(typeof (err.body as { detail: { message: string } }).detail.message, "string");
    const err2 = await failure(bad.user.get());
    assert.equal(err2.statusCode, 401);
    // Authorization: Bearer works too; the native routes keep the D1 body.
    const r = await fetch(`${gw.url}/elevenlabs/v1/user`, { headers: { authorization: `Bearer ${user.api_key}` } });
    assert.equal(r.status, 200);
    const native = await gw.request("GET", "/v1/auth/me", { token: "gw_not_a_real_key" });
    assert.equal(native.status, 401);
    assert.equal(native.json.error.code, "auth_error");
  });

  test("a balance too low: 402 billing_error, nothing charged", async () => {
    const poor = await gw.register();
    const client = new ElevenLabsClient({ baseUrl: `${gw.url}/elevenlabs`, apiKey: poor.api_key });
    const before = await balanceOf(poor.api_key);
    const entries = await ledgerCount(poor.org_id);
    const err = await failure(client.textToSpeech.convert(DEMO_ALPHA_VOICE_ID, { text: "a".repeat(2000) }));
    assert.equal(err.statusCode, 402);
    assert.equal((err.body as { detail: { status: string } }).detail.status, "billing_error");
    assert.equal(await balanceOf(poor.api_key), before);
    assert.equal(await ledgerCount(poor.org_id), entries);
    assert.equal(await ledgerSum(poor.org_id), before);
  });

  test("a bad body: 422 in FastAPI's shape, nothing charged; an unknown model: 400 with the native code", async () => {
    const before = await balanceOf(user.api_key);
    const err = await failure(el.textToSpeech.convert(DEMO_ALPHA_VOICE_ID, { text: "hi", voiceSettings: { stability: 2 } }));
    assert.equal(err.statusCode, 422);
    const detail = (err.body as { detail: { loc: unknown[]; msg: string; type: string }[] }).detail;
    assert.deepEqual(detail[0].loc, ["body", "voice_settings", "stability"]);
    assert.equal(detail[0].type, "less_than_equal");
    assert.equal(typeof detail[0].msg, "string");

    const empty = await fetch(`${gw.url}/elevenlabs/v1/text-to-speech/${DEMO_ALPHA_VOICE_ID}`, {
      method: "POST",
      headers: { "xi-api-key": user.api_key, "content-type": "application/json" },
      body: JSON.stringify({ model_id: "eleven_v3" }),
    });
    assert.equal(empty.status, 422);
    assert.deepEqual(await empty.json(), { detail: [{ loc: ["body", "text"], msg: "Field required", type: "missing" }] });

    const unknown = await failure(el.textToSpeech.convert(DEMO_ALPHA_VOICE_ID, { text: "hi", modelId: "eleven_nonexistent" }));
    assert.equal(unknown.statusCode, 400);
    assert.equal((unknown.body as { detail: { status: string } }).detail.status, "not_a_tts_model");
    assert.equal(await balanceOf(user.api_key), before);
  });

  test("a test-mode key: audio, no money moved", async () => {
    const created = await gw.request("POST", "/v1/auth/keys", { token: user.api_key, body: { mode: "test" } });
    assert.equal(created.status, 201, JSON.stringify(created.json));
    const client = new ElevenLabsClient({ baseUrl: `${gw.url}/elevenlabs`, apiKey: created.json.api_key as string });
    const before = await balanceOf(user.api_key);
    const entries = await ledgerCount(user.org_id);
    const { data, rawResponse } = await client.textToSpeech.convert(DEMO_ALPHA_VOICE_ID, { text: "Just testing." }).withRawResponse();
    assert.ok((await drain(data)).length > 0);
    assert.equal(rawResponse.headers.get("x-svc-test-mode"), "true");
    assert.equal(await balanceOf(user.api_key), before);
    assert.equal(await ledgerCount(user.org_id), entries);
    const usage = await usageOf(rawResponse.headers.get("request-id") ?? "");
    assert.equal(usage.mode, "test");
  });

  test("an unknown dialect route: 404 in ElevenLabs' shape", async () => {
    const r = await fetch(`${gw.url}/elevenlabs/v1/nothing-here`, { headers: { "xi-api-key": user.api_key } });
    assert.equal(r.status, 404);
    assert.equal(((await r.json()) as { detail: { status: string } }).detail.status, "not_found");
  });

  test("voice creation stays native: voices/add and text-to-voice answer 404 endpoint_not_supported naming the native route", async () => {
    for (const [path, native] of [
      ["/elevenlabs/v1/voices/add", "/v1/audio/voice-clone"],
      ["/elevenlabs/v1/text-to-voice/create-previews", "/v1/audio/voice-design"],
      ["/elevenlabs/v1/text-to-voice", "/v1/audio/voice-design"],
    ] as const) {
      const fresh = await gw.register();
      const before = await balanceOf(fresh.api_key);
      const r = await fetch(`${gw.url}${path}`, { method: "POST", headers: { "xi-api-key": fresh.api_key, "content-type": "application/json" }, body: "{}" });
      assert.equal(r.status, 404, path);
      const { detail } = (await r.json()) as { detail: { status: string; message: string } };
      assert.equal(detail.status, "endpoint_not_supported", path);
      assert.ok(detail.message.includes(native), detail.message);
      assert.equal(await balanceOf(fresh.api_key), before);
    }
  });

  test("voices.getAll, voices.search (filters, paging to the end) and voices.get, not billed", async () => {
    const before = await balanceOf(user.api_key);
    const all = await el.voices.getAll();
    assert.ok(all.voices.length >= 1000, `the alpha library: ${all.voices.length}`);
    const george = all.voices.find((v) => v.voiceId === DEMO_ALPHA_VOICE_ID);
    assert.equal(george?.category, "premade");
    assert.equal(typeof george?.labels?.accent, "string");
    assert.ok(george?.previewUrl?.includes(`/v1/audio/voices/alpha/${DEMO_ALPHA_VOICE_ID}/preview.mp3`));
    assert.ok(george?.highQualityBaseModelIds?.includes("eleven_multilingual_v2"));

    // Every page of a search, in pages of 7: the union is exactly the matching voices, each once.
    const matching = all.voices.filter((v) => [v.name ?? "", v.description ?? "", ...Object.values(v.labels ?? {})].some((t) => t.toLowerCase().includes("british")));
    assert.ok(matching.length > 7, "more than a page");
    const seen: string[] = [];
    let token: string | undefined;
    let pages = 0;
    do {
      const page = await el.voices.search({ search: "British", pageSize: 7, ...(token ? { nextPageToken: token } : {}) });
      assert.equal(page.totalCount, matching.length);
      assert.ok(page.voices.length <= 7);
      seen.push(...page.voices.map((v) => v.voiceId));
      assert.equal(page.hasMore, page.nextPageToken !== undefined && page.nextPageToken !== null);
      token = page.nextPageToken ?? undefined;
      pages += 1;
    } while (token && pages < 100);
    assert.deepEqual(seen, matching.map((v) => v.voiceId));

    const byId = await el.voices.search({ voiceIds: [DEMO_ALPHA_VOICE_ID], voiceType: "default" });
    assert.deepEqual(byId.voices.map((v) => v.voiceId), [DEMO_ALPHA_VOICE_ID]);
    assert.equal(byId.hasMore, false);
    const sorted = await el.voices.search({ sort: "name", sortDirection: "asc", pageSize: 20, category: "premade" });
    const names = sorted.voices.map((v) => v.name ?? "");
    assert.deepEqual(names, [...names].sort((a, b) => a.localeCompare(b)));
    assert.ok(sorted.voices.every((v) => v.category === "premade"));

    const one = await el.voices.get(DEMO_ALPHA_VOICE_ID, { withSettings: true });
    assert.equal(one.name, george?.name);
    assert.deepEqual(one.settings, { stability: 0.5, similarityBoost: 0.75, style: 0, useSpeakerBoost: true, speed: 1 });
    assert.equal((await el.voices.get(DEMO_ALPHA_VOICE_ID)).settings, undefined);
    const beta = await el.voices.get(DEMO_BETA_VOICE_ID);
    assert.equal(beta.labels?.provider, "beta");

    const missing = await failure(el.voices.get("no-such-voice"));
    assert.equal(missing.statusCode, 404);
    assert.equal((missing.body as { detail: { status: string } }).detail.status, "voice_not_found");
    const badToken = await failure(el.voices.search({ nextPageToken: "not-ours" }));
    assert.equal(badToken.statusCode, 400);
    const badSize = await failure(el.voices.search({ pageSize: 500 }));
    assert.equal(badSize.statusCode, 422);
    assert.deepEqual((badSize.body as { detail: { loc: unknown[] }[] }).detail[0].loc, ["query", "page_size"]);
    assert.equal(await balanceOf(user.api_key), before, "listing voices is not billed");
  });

  test("a beta voice: refused with an ElevenLabs model (400 voice_model_mismatch, nothing charged), spoken with a beta model", async () => {
    const before = await balanceOf(user.api_key);
    const err = await failure(el.textToSpeech.convert(DEMO_BETA_VOICE_ID, { text: "Hello." }));
    assert.equal(err.statusCode, 400);
    assert.equal((err.body as { detail: { status: string } }).detail.status, "voice_model_mismatch");
    assert.equal(await balanceOf(user.api_key), before);

    const text = "A beta voice through the ElevenLabs SDK.";
    const { data, rawResponse } = await el.textToSpeech.convert(DEMO_BETA_VOICE_ID, { text, modelId: "beta-speech-hd" }).withRawResponse();
    assert.ok((await drain(data)).length > 0);
    const h = rawResponse.headers;
    assert.equal(h.get("x-svc-model"), "beta-speech-hd");
    assert.equal(h.get("character-cost"), String(text.length));
    const cost = micros(h.get("x-svc-cost-usd"));
    assert.ok(cost > 0);
    const after = await balanceOf(user.api_key);
    assert.equal(before - after, cost);
    assert.equal(await ledgerSum(user.org_id), after);
    assert.equal((await usageOf(h.get("request-id") ?? "")).cost_micros, cost);
  });

  test("a voice designed on the native route is the caller's own voice in the dialect and speaks with a beta model", async () => {
    const designed = await gw.request("POST", "/v1/audio/voice-design", { token: user.api_key, body: { description: "a calm old sailor with a deep voice", name: "Sailor" } });
    assert.equal(designed.status, 200, JSON.stringify(designed.json));
    const voiceId = designed.json.voice_id as string;
    const mine = await el.voices.search({ voiceType: "personal" });
    assert.deepEqual(mine.voices.map((v) => v.voiceId), [voiceId]);
    assert.equal(mine.voices[0].category, "generated");
    assert.equal(mine.voices[0].isOwner, true);
    assert.equal(mine.voices[0].name, "Sailor");
    assert.equal((await el.voices.getAll()).voices[0].voiceId, voiceId, "own voices come first");
    assert.equal((await el.voices.get(voiceId)).name, "Sailor");

    const before = await balanceOf(user.api_key);
    const { data, rawResponse } = await el.textToSpeech.convert(voiceId, { text: "Ahoy.", modelId: "beta-speech-turbo" }).withRawResponse();
    assert.ok((await drain(data)).length > 0);
    assert.equal(before - (await balanceOf(user.api_key)), micros(rawResponse.headers.get("x-svc-cost-usd")));

    // Another account neither sees nor learns about it.
    const other = await gw.register();
    const client = new ElevenLabsClient({ baseUrl: `${gw.url}/elevenlabs`, apiKey: other.api_key });
    assert.equal((await failure(client.voices.get(voiceId))).statusCode, 404);
    assert.deepEqual((await client.voices.search({ voiceType: "personal" })).voices, []);
  });

  test("per-key controls (D34) through the dialect: a model outside the key's list 403, a spend limit 402, nothing charged", async () => {
    const made = await gw.request("POST", "/v1/auth/keys", { token: user.api_key, body: { name: "flash-only", models: ["alpha-flash-v2-5"], spend_limit_usd: 0.01, spend_limit_period: "total" } });
    assert.equal(made.status, 201, JSON.stringify(made.json));
    const client = new ElevenLabsClient({ baseUrl: `${gw.url}/elevenlabs`, apiKey: made.json.api_key as string });
    const before = await balanceOf(user.api_key);
    const entries = await ledgerCount(user.org_id);
    const refused = await failure(client.textToSpeech.convert(DEMO_ALPHA_VOICE_ID, { text: "Not this model." }));
    assert.equal(refused.statusCode, 403);
    assert.equal((refused.body as { detail: { status: string } }).detail.status, "model_not_allowed");
    // 0.2 USD per 1000 characters: 100 characters cost 0.02 USD, over the key's 0.01.
    const over = await failure(client.textToSpeech.convert(DEMO_ALPHA_VOICE_ID, { text: "a".repeat(100), modelId: "eleven_flash_v2_5" }));
    assert.equal(over.statusCode, 402);
    assert.equal((over.body as { detail: { status: string } }).detail.status, "key_spend_limit");
    assert.equal(await balanceOf(user.api_key), before);
    assert.equal(await ledgerCount(user.org_id), entries);
    const ok = await client.textToSpeech.convert(DEMO_ALPHA_VOICE_ID, { text: "Within it.", modelId: "eleven_flash_v2_5" }).withRawResponse();
    assert.ok((await drain(ok.data)).length > 0);
    assert.equal(before - (await balanceOf(user.api_key)), micros(ok.rawResponse.headers.get("x-svc-cost-usd")));
  });
});
