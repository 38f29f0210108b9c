/**
 * The ElevenLabs dialect (D36) on real-protocol sources: `@elevenlabs/elevenlabs-js`, unchanged, against a
 * gateway configured with `UPSTREAMS` on two loopback ElevenLabs fakes (the second a failover) and a
 * MiniMax fake for beta voices, as `npm start` builds them. Each call reaches the fake with ElevenLabs'
 * model id, is charged once to the micro-dollar, fails over under one hold, and a call the sources fail
 * answers 5xx only when nothing was charged: the SDK retries such answers (408, 429, 5xx) without an
 * idempotency key, so every retry must be as free as the first attempt.
 */
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { ElevenLabsClient, ElevenLabsError } from "@elevenlabs/elevenlabs-js";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { usdToMicros } from "../../src/money.ts";
import { type ElevenLabsFake, startElevenLabsFake } from "../../fakes/elevenlabs.ts";
import { type MiniMaxFake, startMiniMaxFake } from "../../fakes/minimax.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../helpers/gateway.ts";

const EL_KEY = "el-dialect-key-5d1e8a0c3f72b9";
const MM_KEY = "mm-dialect-key-0b9c4e2d7a16f3";
const GEORGE = "JBFqnCBsd6RMkjVDRZzb";

/** Every byte of a web stream. */
async function drain(stream: ReadableStream<Uint8Array>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>) parts.push(Buffer.from(chunk));
  return Buffer.concat(parts);
}

describe("the ElevenLabs SDK against the gateway on ElevenLabs and MiniMax sources (D36)", () => {
  let main: ElevenLabsFake;
  let backup: ElevenLabsFake;
  let mm: MiniMaxFake;
  let gw: TestGateway;
  let user: { user_id: string; org_id: string; api_key: string };
  let el: ElevenLabsClient;

  before(async () => {
    main = await startElevenLabsFake({ apiKey: EL_KEY });
    backup = await startElevenLabsFake({ apiKey: EL_KEY });
    mm = await startMiniMaxFake({ apiKey: MM_KEY, firstChunkMs: 5, chunkGapMs: 1 });
    const upstreams = [
      { name: "el-main", protocol: "elevenlabs", base_url: main.url, api_key: "env:DIALECT_EL_KEY", families: ["alpha"] },
      { name: "el-backup", protocol: "elevenlabs", base_url: backup.url, api_key: "env:DIALECT_EL_KEY", families: ["alpha"] },
      { name: "minimax", protocol: "minimax", base_url: mm.url, api_key: "env:DIALECT_MM_KEY", families: ["beta"] },
    ];
    gw = await startGateway("sqlite", { DIALECT_EL_KEY: EL_KEY, DIALECT_MM_KEY: MM_KEY, UPSTREAMS: JSON.stringify(upstreams) });
    user = await gw.register();
    await gw.deposit(user.user_id, 20);
    await gw.request("PUT", `/v1/admin/users/${user.user_id}/limits`, { token: ADMIN_TOKEN, body: { rpm: 100_000, per_model_rpm: 100_000 } });
    el = new ElevenLabsClient({ baseUrl: `${gw.url}/elevenlabs`, apiKey: user.api_key });
  });
  after(async () => {
    await gw?.close();
    await Promise.all([main?.close(), backup?.close(), mm?.close()]);
  });
  beforeEach(() => {
    main.setMarkers([]);
    backup.setMarkers([]);
    main.reset();
    backup.reset();
  });

  /** The balance in micro-USD, checked against the ledger sum every time. */
  async function balance(): Promise<number> {
    const db = gw.services.db.kysely;
    const b = await getBalance(db, user.org_id);
    assert.equal(b, await ledgerSum(db, user.org_id));
    return b ?? -1;
  }
  const micros = (usd: string | null): number => usdToMicros(usd ?? "") ?? Number.NaN;
  async function usageOf(requestId: string) {
    return gw.services.db.kysely.selectFrom("usage_records").selectAll().where("id", "=", requestId).executeTakeFirstOrThrow();
  }
  const posts = (fake: ElevenLabsFake) => fake.requests.filter((r) => r.method === "POST");

  test("text to speech reaches ElevenLabs with its own model id, charged once to the micro-dollar", async () => {
    const before = await balance();
    const text = "The gateway in front of ElevenLabs.";
    const { data, rawResponse } = await el.textToSpeech.convert(GEORGE, { text, modelId: "eleven_v3", outputFormat: "mp3_44100_128" }).withRawResponse();
    const audio = await drain(data);
    assert.ok(audio.length > 100);
    const h = rawResponse.headers;
    assert.equal(h.get("content-type"), "audio/mpeg");
    assert.equal(h.get("x-svc-model"), "alpha-v3");
    assert.equal(h.get("character-cost"), String(text.length));
    const cost = micros(h.get("x-svc-cost-usd"));
    assert.equal(cost, Math.ceil((text.length * 405_000) / 1000));
    assert.equal(before - (await balance()), cost);
    const sent = posts(main);
    assert.equal(sent.length, 1);
    assert.ok(sent[0].path.startsWith(`/v1/text-to-speech/${GEORGE}`), sent[0].path);
    assert.equal((sent[0].body as { model_id: string }).model_id, "eleven_v3");
    assert.equal(posts(backup).length, 0);
    const usage = await usageOf(h.get("request-id") ?? "");
    assert.equal(usage.cost_micros, cost);
    assert.equal(usage.status, "succeeded");
  });

  test("streaming, sound effects and music on ElevenLabs: the adapter's model ids, exact money each", async () => {
    let before = await balance();
    const stream = await el.textToSpeech.stream(GEORGE, { text: "Streamed through.", modelId: "eleven_turbo_v2_5" }).withRawResponse();
    assert.ok((await drain(stream.data)).length > 0);
    assert.equal(stream.rawResponse.headers.get("x-svc-model"), "alpha-turbo-v2-5");
    // D35: ElevenLabs dropped the turbo model; the flash model serves it.
    assert.equal((posts(main).at(-1)?.body as { model_id: string }).model_id, "eleven_flash_v2_5");
    let after = await balance();
    assert.equal(before - after, micros(stream.rawResponse.headers.get("x-svc-cost-usd")));
    before = after;

    const sfx = await el.textToSoundEffects.convert({ text: "rain on a tin roof", durationSeconds: 3 }).withRawResponse();
    assert.ok((await drain(sfx.data)).length > 0);
    assert.equal((posts(main).at(-1)?.body as { model_id: string }).model_id, "eleven_text_to_sound_v2");
    after = await balance();
    assert.equal(before - after, micros(sfx.rawResponse.headers.get("x-svc-cost-usd")));
    assert.equal((await usageOf(sfx.rawResponse.headers.get("request-id") ?? "")).kind, "sfx");
    before = after;

    const music = await el.music.compose({ prompt: "slow jazz trio", musicLengthMs: 10_000 }).withRawResponse();
    assert.ok((await drain(music.data)).length > 0);
    const sentMusic = posts(main).at(-1);
    assert.ok(sentMusic?.path.startsWith("/v1/music"), sentMusic?.path);
    assert.equal((sentMusic?.body as { model_id: string }).model_id, "music_v2");
    after = await balance();
    assert.equal(before - after, micros(music.rawResponse.headers.get("x-svc-cost-usd")));
    assert.equal((await usageOf(music.rawResponse.headers.get("request-id") ?? "")).kind, "music");
  });

  test("voices come from the ElevenLabs source's catalog", async () => {
    const all = await el.voices.getAll();
    const ids = main.voiceIds();
    assert.equal(all.voices.length, new Set(ids).size);
    assert.equal(all.voices[0].voiceId, ids[0]);
    const george = await el.voices.get(GEORGE);
    assert.equal(george.name, "George");
    const page = await el.voices.search({ search: "george" });
    assert.ok(page.voices.some((v) => v.voiceId === GEORGE));
  });

  test("the first source fails: the call fails over to the second under one hold, charged once", async () => {
    main.setMarkers(["500"]);
    const before = await balance();
    const { data, rawResponse } = await el.textToSpeech.convert(GEORGE, { text: "Failing over." }).withRawResponse();
    assert.ok((await drain(data)).length > 0);
    assert.equal(posts(main).length, 1);
    assert.equal(posts(backup).length, 1);
    const cost = micros(rawResponse.headers.get("x-svc-cost-usd"));
    assert.equal(before - (await balance()), cost);
    assert.equal((await usageOf(rawResponse.headers.get("request-id") ?? "")).cost_micros, cost);
  });

  test("every 5xx answer charged nothing, and so did each of the SDK's retries of it", async () => {
    const seen: string[] = [];
    for (const markers of [["500"], ["malformed"], ["429"], ["quota"]]) {
      // The SDK's backoff between retries is a second or more: its retries are followed on one failure kind.
      const retries = markers[0] === "500";
      main.setMarkers(markers);
      backup.setMarkers(markers);
      main.reset();
      for (const op of ["speech", "stream", "sfx", "music"] as const) {
        const before = await balance();
        const requestIds: string[] = [];
        // The SDK's own retry policy (2 retries of a 408, 429 or 5xx), unchanged.
        const client = new ElevenLabsClient({
          baseUrl: `${gw.url}/elevenlabs`,
          apiKey: user.api_key,
          ...(retries ? {} : { maxRetries: 0 }),
          fetch: async (input, init) => {
            const r = await fetch(input, init);
            requestIds.push(r.headers.get("request-id") ?? r.headers.get("x-svc-request-id") ?? "");
            return r;
          },
        });
        const call =
          op === "speech"
            ? client.textToSpeech.convert(GEORGE, { text: "No charge." })
            : op === "stream"
              ? client.textToSpeech.stream(GEORGE, { text: "No charge." })
              : op === "sfx"
                ? client.textToSoundEffects.convert({ text: "a bell", durationSeconds: 1 })
                : client.music.compose({ prompt: "a short fanfare", musicLengthMs: 10_000 });
        let status = 0;
        let code = "";
        try {
          await drain(await call);
        } catch (err) {
          assert.ok(err instanceof ElevenLabsError, `${op} ${markers[0]}: ${String(err)}`);
          status = err.statusCode ?? 0;
          code = (err.body as { detail?: { status?: string } } | undefined)?.detail?.status ?? "";
        }
        assert.ok(status >= 400, `${op} with ${markers[0]} everywhere must fail`);
        seen.push(`${markers[0]}/${op}: ${status} ${code}`);
        if (retries) assert.equal(requestIds.length, 3, `${op}: the SDK retried twice`);
        assert.equal(await balance(), before, `${op} with ${markers[0]}: nothing charged (answered ${status})`);
        for (const id of requestIds.filter(Boolean)) {
          const u = await gw.services.db.kysely.selectFrom("usage_records").select(["cost_micros", "status"]).where("id", "=", id).executeTakeFirst();
          if (u) assert.equal(u.cost_micros, 0, `${op}: usage record ${id} of a failed attempt costs nothing`);
        }
      }
    }
    // Upstream failures, throttling and quota alike end as 502 provider_error once no source is left.
    assert.deepEqual(seen.filter((line) => !line.endsWith(": 502 provider_error")), []);
  });

  test("a beta voice speaks on MiniMax through the ElevenLabs SDK, with a beta model id", async () => {
    const before = await balance();
    const beta = (await gw.request("GET", "/v1/audio/voices?provider=beta", { token: user.api_key })).json;
    const voiceId = (beta.data as { voice_id: string }[])[0].voice_id;
    const text = "Spoken by MiniMax.";
    const { data, rawResponse } = await el.textToSpeech.convert(voiceId, { text, modelId: "beta-speech-turbo" }).withRawResponse();
    assert.ok((await drain(data)).length > 0);
    assert.equal(rawResponse.headers.get("x-svc-model"), "beta-speech-turbo");
    assert.equal(before - (await balance()), micros(rawResponse.headers.get("x-svc-cost-usd")));
    assert.ok(mm.requests.some((r) => r.method === "POST"), "MiniMax was called");
    assert.equal(posts(main).length + posts(backup).length, 0, "ElevenLabs was not");
  });

  test("a test-mode key is served by the simulator: no source called, no money moved", async () => {
    const created = await gw.request("POST", "/v1/auth/keys", { token: user.api_key, body: { name: "sdk-test", mode: "test" } });
    assert.equal(created.status, 201);
    const client = new ElevenLabsClient({ baseUrl: `${gw.url}/elevenlabs`, apiKey: created.json.api_key as string });
    const before = await balance();
    const { data, rawResponse } = await client.textToSpeech.convert(GEORGE, { text: "Only a test." }).withRawResponse();
    assert.ok((await drain(data)).length > 0);
    assert.equal(rawResponse.headers.get("x-svc-test-mode"), "true");
    assert.ok(micros(rawResponse.headers.get("x-svc-cost-usd")) > 0, "priced as usual");
    assert.equal(await balance(), before);
    assert.equal(posts(main).length + posts(backup).length, 0);
    assert.equal((await usageOf(rawResponse.headers.get("request-id") ?? "")).mode, "test");
  });
});
