/**
 * The gateway configured with `UPSTREAMS` on the loopback fakes of every audio protocol (issue "Real
 * upstreams, part 2", proof): no test seams, the sources built from the configuration as `npm start`
 * builds them. Alpha audio runs on two ElevenLabs accounts (the second one a failover), beta audio on
 * MiniMax, transcription and understanding on OpenAI-compatible audio. Every audio endpoint answers as
 * the spec says (bytes in the requested format and length, headers, prices to the micro-dollar); failures
 * are refunded; two alpha sources fail over under one hold; a cloned voice is used on its source and,
 * once the source forgets it, answers 410; no key appears in an answer or a log line.
 */
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { after, before, describe, test } from "node:test";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { audioDurationSec } from "../../src/upstreams/audio-convert.ts";
import { type ElevenLabsFake, startElevenLabsFake } from "../../fakes/elevenlabs.ts";
import { type MiniMaxFake, startMiniMaxFake } from "../../fakes/minimax.ts";
import { type OpenAIAudioFake, startOpenAIAudioFake } from "../../fakes/openai-audio.ts";
import { AUDIO_FORMATS, type AudioFormat } from "../../src/upstreams/types.ts";
import { makeWav } from "../helpers/audio-fixtures.ts";
import { startGateway, type TestGateway, type TestResponse } from "../helpers/gateway.ts";

const EL_KEY = "el-e2e-key-4f0a9c2d7e61b3";
const MM_KEY = "mm-e2e-key-8b2d5f1a0c97e4";
const OA_KEY = "sk-e2e-audio-2c7e9a4b1d58f0";
const KEYS = [EL_KEY, MM_KEY, OA_KEY];

/** Content type of each format (D20). */
const TYPE = (f: AudioFormat) => (f.startsWith("mp3") ? "audio/mpeg" : f.startsWith("pcm") ? "audio/pcm" : "audio/basic");

describe("UPSTREAMS on the fakes of elevenlabs, minimax and openai audio: every audio endpoint", () => {
  let el: ElevenLabsFake;
  let elBackup: ElevenLabsFake;
  let mm: MiniMaxFake;
  let oa: OpenAIAudioFake;
  let gw: TestGateway;
  let user: { user_id: string; org_id: string; api_key: string };
  const logLines: string[] = [];
  const answers: string[] = [];

  before(async () => {
    el = await startElevenLabsFake({ apiKey: EL_KEY });
    elBackup = await startElevenLabsFake({ apiKey: EL_KEY });
    mm = await startMiniMaxFake({ apiKey: MM_KEY, firstChunkMs: 20, chunkGapMs: 5 });
    oa = await startOpenAIAudioFake({ apiKey: OA_KEY, latencyMs: 0 });
    const upstreams = [
      { name: "el-main", protocol: "elevenlabs", base_url: el.url, api_key: "env:E2E_EL_KEY", families: ["alpha"], max_concurrency: 8 },
      { name: "el-backup", protocol: "elevenlabs", base_url: elBackup.url, api_key: "env:E2E_EL_KEY", families: ["alpha"] },
      { name: "minimax", protocol: "minimax", base_url: mm.url, api_key: "env:E2E_MM_KEY", families: ["beta"] },
      { name: "openai-audio", protocol: "openai", base_url: `${oa.url}/v1`, api_key: "env:E2E_OA_KEY", families: ["transcribe", "understand"] },
    ];
    const logStream = new Writable({
      write(chunk: Buffer, _enc, done) {
        logLines.push(chunk.toString());
        done();
      },
    });
    gw = await startGateway(
      "sqlite",
      { E2E_EL_KEY: EL_KEY, E2E_MM_KEY: MM_KEY, E2E_OA_KEY: OA_KEY, UPSTREAMS: JSON.stringify(upstreams), LOG_LEVEL: "info" },
      { logStream },
    );
    user = await gw.register();
    await gw.deposit(user.user_id, 50);
    await gw.request("PUT", `/v1/admin/users/${user.user_id}/limits`, {
      token: "test-admin-token-0123456789",
      body: { rpm: 100_000, per_model_rpm: 100_000 },
    });
  });
  after(async () => {
    await gw?.close();
    await Promise.all([el?.close(), elBackup?.close(), mm?.close(), oa?.close()]);
  });

  /** The balance in micro-USD, checked against the ledger sum every time. */
  async function balance(): Promise<number> {
    const db = gw.services.db.kysely;
    const b = await getBalance(db, user.org_id);
    assert.equal(b, await ledgerSum(db, user.org_id));
    return b ?? -1;
  }
  async function post(path: string, body: unknown): Promise<TestResponse> {
    const r = await gw.request("POST", path, { token: user.api_key, body });
    answers.push(JSON.stringify(r.json ?? ""), JSON.stringify([...r.headers]));
    return r;
  }
  /** The kinds of the newest `n` ledger entries, oldest first. */
  async function lastEntries(n: number): Promise<string[]> {
    const r = await gw.request("GET", `/v1/billing/ledger?limit=${n}`, { token: user.api_key });
    return (r.json.data as { kind: string }[]).map((e) => e.kind).reverse();
  }

  test("alpha speech in every format on ElevenLabs: real audio of the right length, headers, price", async () => {
    const voice = el.voiceIds()[0]!;
    const text = "The quick brown fox jumps over the lazy dog."; // 44 characters
    for (const format of AUDIO_FORMATS) {
      const before = await balance();
      const r = await post("/v1/audio/speech", { model: "alpha-v3", input: text, voice_id: voice, response_format: format });
      assert.equal(r.status, 200, `${format}: ${JSON.stringify(r.json)}`);
      assert.equal(r.headers.get("content-type"), TYPE(format));
      assert.equal(r.headers.get("x-svc-model"), "alpha-v3");
      assert.equal(r.headers.get("x-svc-chars-billed"), "44");
      assert.equal(r.headers.get("x-svc-cost-usd"), "0.01782"); // 44 x 0.405 / 1000
      assert.equal(r.headers.get("x-svc-fallback"), null);
      const seconds = audioDurationSec(r.bytes, format);
      assert.ok(seconds > 2 && seconds < 3.5, `${format}: ${seconds} s`); // the fake speaks 0.06 s per character
      assert.equal(await balance(), before - 17_820);
      assert.equal(Number(r.headers.get("x-svc-balance-usd")) * 1e6, before - 17_820);
    }
    const sent = el.requests.filter((q) => q.path.startsWith("/v1/text-to-speech/"));
    assert.equal(sent.length, AUDIO_FORMATS.length);
    assert.deepEqual(sent.map((q) => new URL(q.path, "http://x").searchParams.get("output_format")), [...AUDIO_FORMATS]);
    assert.equal(elBackup.requests.length, 0);
  });

  test("the alpha library comes from ElevenLabs (paged), cached 5 minutes; its voices are alpha voices", async () => {
    const first = await gw.request("GET", "/v1/audio/voices?provider=alpha", { token: user.api_key });
    assert.equal(first.status, 200);
    // The speech test above already filled the cache to tell alpha voices from beta ones.
    assert.equal(first.headers.get("x-svc-cache"), "may-hit");
    const ids = new Set((first.json.data as { voice_id: string; provider: string }[]).map((v) => v.voice_id));
    assert.equal(ids.size, el.voiceIds().length);
    assert.ok(ids.has(el.voiceIds()[0]!));
    const beta = await gw.request("GET", "/v1/audio/voices?provider=beta", { token: user.api_key });
    assert.equal(beta.headers.get("x-svc-cache"), "miss");
    assert.deepEqual((beta.json.data as { voice_id: string }[]).map((v) => v.voice_id), mm.systemVoiceIds());
    // An alpha voice with a beta model, and a beta voice with an alpha model: 400, nothing charged.
    const before = await balance();
    const mismatch = await post("/v1/audio/speech", { model: "beta-speech-hd", input: "hi", voice_id: el.voiceIds()[5] });
    assert.equal(mismatch.status, 400);
    assert.equal(mismatch.json.error.code, "voice_model_mismatch");
    const mismatch2 = await post("/v1/audio/speech", { model: "alpha-v3", input: "hi", voice_id: mm.systemVoiceIds()[0] });
    assert.equal(mismatch2.json.error.code, "voice_model_mismatch");
    assert.equal(await balance(), before);
  });

  test("beta speech in every format on MiniMax, 192 kbps MP3 and mu-law transcoded locally", async () => {
    const voice = mm.systemVoiceIds()[0]!;
    for (const format of AUDIO_FORMATS) {
      const before = await balance();
      const r = await post("/v1/audio/speech", { model: "beta-speech-hd", input: "Good morning, listeners.", voice_id: voice, response_format: format });
      assert.equal(r.status, 200, `${format}: ${JSON.stringify(r.json)}`);
      assert.equal(r.headers.get("content-type"), TYPE(format));
      assert.equal(r.headers.get("x-svc-cost-usd"), "0.00336"); // 24 x 0.140 / 1000
      const seconds = audioDurationSec(r.bytes, format);
      assert.ok(seconds > 1 && seconds < 2, `${format}: ${seconds} s`);
      if (format === "mp3_44100_192") assert.equal(r.bytes[2]! >> 4, 11, "the MP3 frames are 192 kbps");
      assert.equal(await balance(), before - 3360);
    }
    const sent = mm.requests.filter((q) => q.path === "/v1/t2a_v2").map((q) => (q.body as { audio_setting: { format: string; sample_rate: number } }).audio_setting);
    assert.deepEqual(sent.find((_, i) => AUDIO_FORMATS[i] === "ulaw_8000"), { format: "pcm", sample_rate: 8000, channel: 1 });
  });

  test("beta speech with stream: true arrives chunk by chunk, one clip without the aggregated repeat", async () => {
    const voice = mm.systemVoiceIds()[1]!;
    const text = "Streaming keeps the first audio close to the request.";
    const before = await balance();
    const res = await fetch(`${gw.url}/v1/audio/speech`, {
      method: "POST",
      headers: { authorization: `Bearer ${user.api_key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "beta-speech-turbo", input: text, voice_id: voice, stream: true }),
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "audio/mpeg");
    assert.equal(res.headers.get("content-length"), null, "streamed, not buffered");
    const chunks: Uint8Array[] = [];
    for await (const c of res.body!) chunks.push(c);
    assert.ok(chunks.length > 1, `${chunks.length} chunks`);
    const body = Buffer.concat(chunks);
    const whole = await post("/v1/audio/speech", { model: "beta-speech-turbo", input: text, voice_id: voice });
    const streamed = audioDurationSec(body, "mp3_44100_128");
    assert.ok(Math.abs(streamed - audioDurationSec(whole.bytes, "mp3_44100_128")) < 0.1, `streamed ${streamed} s`);
    assert.equal(await balance(), before - 2 * 53 * 90); // 53 characters at 0.090 / 1000, twice
    const streamRequest = mm.requests.filter((q) => q.path === "/v1/t2a_v2").at(-2)!;
    assert.deepEqual((streamRequest.body as { stream_options?: unknown }).stream_options, { exclude_aggregated_audio: true });
  });

  test("a MiniMax stream that breaks after its first chunk is refunded", async () => {
    const voice = mm.systemVoiceIds()[3]!;
    const before = await balance();
    const res = await fetch(`${gw.url}/v1/audio/speech`, {
      method: "POST",
      headers: { authorization: `Bearer ${user.api_key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "beta-speech-hd", input: "[fake:stream-break] this stream breaks", voice_id: voice, stream: true }),
    });
    assert.equal(res.status, 200, "the first chunk arrived: the answer had started");
    await assert.rejects(async () => {
      for await (const _ of res.body!) {
        // read until the break
      }
    });
    // The refund is written when the stream fails; wait for it rather than for a fixed time.
    for (let i = 0; i < 100 && (await balance()) !== before; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(await balance(), before);
    assert.deepEqual(await lastEntries(4), ["hold", "hold_release", "charge", "refund"]);
  });

  test("music and sound effects: ElevenLabs trims below its 3000 ms minimum, MiniMax gets lyrics and [Instrumental]", async () => {
    let before = await balance();
    const short = await post("/v1/audio/music", { model: "alpha-music", prompt: "a calm piano", music_length_ms: 2000, response_format: "pcm_16000" });
    assert.equal(short.status, 200, JSON.stringify(short.json));
    assert.equal(short.headers.get("x-svc-duration-sec"), "2");
    assert.equal(short.headers.get("x-svc-cost-usd"), "0.27");
    assert.equal(audioDurationSec(short.bytes, "pcm_16000"), 2);
    const musicBody = el.requests.find((q) => q.path.startsWith("/v1/music"))!.body as { music_length_ms: number };
    assert.equal(musicBody.music_length_ms, 3000);
    assert.equal(await balance(), before - 270_000);

    before = await balance();
    const sfx = await post("/v1/audio/sfx", { prompt: "a door creaks", duration_seconds: 1.5, prompt_influence: 0.7 });
    assert.equal(sfx.status, 200);
    assert.ok(Math.abs(audioDurationSec(sfx.bytes, "mp3_44100_128") - 1.5) < 0.05);
    assert.deepEqual(el.requests.find((q) => q.path.startsWith("/v1/sound-generation"))!.body, {
      text: "a door creaks",
      duration_seconds: 1.5,
      prompt_influence: 0.7,
      model_id: "eleven_text_to_sound_v2",
    });
    assert.equal(await balance(), before - 27_000);

    before = await balance();
    const song = await post("/v1/audio/music", { model: "beta-music", prompt: "folk", lyrics: "[verse]\nla la la\n[chorus]\nhey hey" });
    assert.equal(song.status, 200, JSON.stringify(song.json));
    assert.ok(audioDurationSec(song.bytes, "mp3_44100_128") >= 5);
    const pro = await post("/v1/audio/music?save_to_blob=1", { model: "beta-music-pro", prompt: "ambient", lyrics: "[Instrumental]" });
    assert.equal(pro.status, 200, JSON.stringify(pro.json));
    assert.equal(pro.json.cost_usd, 0.21);
    const proBody = mm.requests.filter((q) => q.path === "/v1/music_generation").at(-1)!.body as Record<string, unknown>;
    assert.deepEqual([proBody.model, proBody.is_instrumental, proBody.lyrics], ["music-2.6", true, undefined]);
    const stored = await fetch(pro.json.url);
    assert.equal(stored.status, 200);
    assert.equal(await balance(), before - 45_000 - 210_000);
  });

  test("two alpha sources fail over under one hold; when both fail the call is refunded", async () => {
    const voice = el.voiceIds()[1]!;
    el.setMarkers(["500"]);
    try {
      let before = await balance();
      const r = await post("/v1/audio/speech", { model: "alpha-flash-v2-5", input: "Failover", voice_id: voice });
      assert.equal(r.status, 200, JSON.stringify(r.json));
      assert.equal(r.headers.get("x-svc-fallback"), "true");
      assert.equal(r.headers.get("x-svc-fallback-layer"), "1");
      assert.equal(r.headers.get("x-svc-cost-usd"), "0.0016"); // 8 x 0.20 / 1000
      assert.equal(await balance(), before - 1600);
      assert.deepEqual(await lastEntries(3), ["hold", "hold_release", "charge"]);
      assert.equal(elBackup.requests.filter((q) => q.path.startsWith("/v1/text-to-speech/")).length, 1);

      elBackup.setMarkers(["500"]);
      before = await balance();
      const failed = await post("/v1/audio/speech", { model: "alpha-flash-v2-5", input: "Nobody answers", voice_id: voice });
      assert.equal(failed.status, 502);
      assert.equal(failed.json.error.code, "provider_error");
      assert.equal(await balance(), before);
      assert.deepEqual(await lastEntries(2), ["hold", "hold_release"]);
      const music = await post("/v1/audio/music", { prompt: "drums", music_length_ms: 4000 });
      assert.equal(music.status, 502);
      assert.equal(await balance(), before);
    } finally {
      el.setMarkers([]);
      elBackup.setMarkers([]);
    }
  });

  test("a MiniMax base_resp failure on HTTP 200 is refunded: speech, streaming speech, music, design", async () => {
    const voice = mm.systemVoiceIds()[2]!;
    mm.setMarkers(["1002"]);
    try {
      const before = await balance();
      const speech = await post("/v1/audio/speech", { model: "beta-speech-hd", input: "rate limited", voice_id: voice });
      assert.equal(speech.status, 502);
      const streamed = await post("/v1/audio/speech", { model: "beta-speech-hd", input: "rate limited", voice_id: voice, stream: true });
      assert.equal(streamed.status, 502);
      const music = await post("/v1/audio/music", { model: "beta-music", lyrics: "[verse]\nla" });
      assert.equal(music.status, 502);
      const design = await post("/v1/audio/voice-design", { description: "a warm narrator" });
      assert.equal(design.status, 502);
      assert.equal(await balance(), before);
    } finally {
      mm.setMarkers([]);
    }
  });

  test("a cloned voice lives on its source: cloned on MiniMax, spoken there, 410 once MiniMax forgets it", async () => {
    const form = new FormData();
    form.set("file", new Blob([Buffer.from(makeWav(12))], { type: "audio/wav" }), "me.wav");
    form.set("name", "My voice");
    let before = await balance();
    const res = await fetch(`${gw.url}/v1/audio/voice-clone`, { method: "POST", headers: { authorization: `Bearer ${user.api_key}` }, body: form });
    const cloned = (await res.json()) as { voice_id: string; name: string; cost_usd: number };
    assert.equal(res.status, 200, JSON.stringify(cloned));
    assert.match(cloned.voice_id, /^svc_/);
    assert.equal(cloned.cost_usd, 2.1);
    assert.equal(await balance(), before - 2_100_000);
    const row = await gw.services.db.kysely.selectFrom("voices").selectAll().where("id", "=", cloned.voice_id).executeTakeFirstOrThrow();
    assert.equal(row.upstream_source, "minimax");
    assert.ok(mm.clonedVoiceIds().includes(row.upstream_voice_id!));
    assert.notEqual(row.upstream_voice_id, cloned.voice_id, "the upstream id is the gateway's minted one, not the svc_ id");

    before = await balance();
    const spoken = await post("/v1/audio/speech", { model: "beta-speech-hd", input: "This is my voice.", voice_id: cloned.voice_id });
    assert.equal(spoken.status, 200, JSON.stringify(spoken.json));
    const sent = mm.requests.filter((q) => q.path === "/v1/t2a_v2").at(-1)!.body as { voice_setting: { voice_id: string } };
    assert.equal(sent.voice_setting.voice_id, row.upstream_voice_id);
    assert.equal(await balance(), before - 17 * 140);

    mm.forgetVoice(row.upstream_voice_id!);
    before = await balance();
    const gone = await post("/v1/audio/speech", { model: "beta-speech-hd", input: "Still there?", voice_id: cloned.voice_id });
    assert.equal(gone.status, 410);
    assert.equal(gone.json.error.code, "voice_unavailable");
    assert.equal(await balance(), before);

    // Another account cannot use it.
    const other = await gw.register();
    const stolen = await gw.request("POST", "/v1/audio/speech", { token: other.api_key, body: { model: "beta-speech-hd", input: "x", voice_id: cloned.voice_id } });
    assert.equal(stolen.status, 403);
  });

  test("voice design on MiniMax: gender and age folded into the prompt, charged 4.20, then speaks", async () => {
    const before = await balance();
    const r = await post("/v1/audio/voice-design", { description: "a calm radio host", gender: "female", age_group: "elderly", name: "Host" });
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal(r.json.cost_usd, 4.2);
    assert.equal(await balance(), before - 4_200_000);
    const sent = mm.requests.filter((q) => q.path === "/v1/voice_design").at(-1)!.body as { prompt: string; preview_text: string };
    assert.match(sent.prompt, /a calm radio host/);
    assert.match(sent.prompt, /female/i);
    assert.match(sent.prompt, /elderly/i);
    assert.ok(sent.preview_text.length > 0);
    const spoken = await post("/v1/audio/speech", { model: "beta-speech-turbo", input: "Hello there.", voice_id: r.json.voice_id });
    assert.equal(spoken.status, 200, JSON.stringify(spoken.json));
  });

  test("transcription and understanding on OpenAI-compatible audio, billed per started minute", async () => {
    const wav = makeWav(70);
    let before = await balance();
    const form = new FormData();
    form.set("file", new Blob([Buffer.from(wav)]), "talk.wav");
    const res = await fetch(`${gw.url}/v1/audio/transcriptions`, { method: "POST", headers: { authorization: `Bearer ${user.api_key}` }, body: form });
    const body = (await res.json()) as { text: string };
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.match(body.text, /Fake transcript/);
    assert.equal(res.headers.get("x-svc-cost-usd"), "0.0018");
    assert.equal(await balance(), before - 1800);
    const sent = oa.requests.find((q) => q.path === "/v1/audio/transcriptions")!;
    assert.match(JSON.stringify(sent), /gpt-4o-mini-transcribe/);

    before = await balance();
    const form2 = new FormData();
    form2.set("file", new Blob([Buffer.from(makeWav(20))]), "scene.wav");
    form2.set("prompt", "What do you hear?");
    const res2 = await fetch(`${gw.url}/v1/audio/understand`, { method: "POST", headers: { authorization: `Bearer ${user.api_key}` }, body: form2 });
    const body2 = (await res2.json()) as { text: string; model: string; duration_sec: number };
    assert.equal(res2.status, 200, JSON.stringify(body2));
    assert.match(body2.text, /What do you hear\?/);
    assert.equal(body2.duration_sec, 20);
    assert.equal(await balance(), before - 600);

    oa.setMarkers(["500"]);
    try {
      before = await balance();
      const failed = await fetch(`${gw.url}/v1/audio/transcriptions`, { method: "POST", headers: { authorization: `Bearer ${user.api_key}` }, body: form });
      assert.equal(failed.status, 502);
      assert.equal(await balance(), before);
    } finally {
      oa.setMarkers([]);
    }
  });

  test("the admin view lists the audio sources; no key in any answer or log line", async () => {
    const r = await gw.request("GET", "/v1/admin/upstreams", { token: "test-admin-token-0123456789" });
    const rows = r.json.data as { name: string; successes: number; failures: number }[];
    assert.deepEqual(rows.map((s) => s.name), ["el-main", "el-backup", "minimax", "openai-audio"]);
    assert.ok(rows.every((s) => s.successes > 0));
    assert.ok(rows.find((s) => s.name === "el-main")!.failures > 0);
    const text = answers.join("\n") + logLines.join("\n") + JSON.stringify(r.json);
    for (const key of KEYS) assert.ok(!text.includes(key), "a key leaked");
    assert.ok(logLines.length > 0);
  });
});
