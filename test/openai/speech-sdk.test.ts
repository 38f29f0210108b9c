/**
 * OpenAI's own names in the OpenAI dialect (D48), proven with the official `openai` SDK, unchanged, on a real
 * gateway on loopback: `tts-1`, `gpt-4o-mini-tts` and `tts-1-hd` speak with the catalog models they name
 * (`X-Svc-Model`, the usage record, the ledger: exactly the catalog price of that model), OpenAI's voice
 * names speak with their fixed alpha library voices (on the simulator and, on the ElevenLabs fake, by the
 * voice ids and model ids ElevenLabs receives), `wav` and `pcm` are real audio, and a model the dialect does
 * not serve answers OpenAI's 404 `model_not_found` on every route that takes a model, charging nothing.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { parseBuffer } from "music-metadata";
import OpenAI, { BadRequestError, NotFoundError, toFile } from "openai";
import { DEFAULT_SPEECH_MODEL, enabledModels, getModelOf } from "../../src/catalog/models.ts";
import { quoteSpeech } from "../../src/catalog/quote.ts";
import { HD_SPEECH_MODEL, OPENAI_SPEECH_MODEL_IDS } from "../../src/http/dialects/openai/models.ts";
import { OPENAI_VOICES } from "../../src/http/dialects/openai/speech.ts";
import { type ElevenLabsFake, startElevenLabsFake } from "../../fakes/elevenlabs.ts";
import { ELEVENLABS_MODELS } from "../../src/upstreams/elevenlabs/models.ts";
import { makeWav } from "../helpers/audio-fixtures.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";
import { checkedBalance, failure, fundedClient, tinyPng } from "./fixtures.ts";

/** OpenAI's voice names, as its API reference lists them. */
const VOICE_NAMES = ["alloy", "ash", "ballad", "coral", "echo", "fable", "nova", "onyx", "sage", "shimmer", "verse", "marin", "cedar"];

/** The catalog price of `chars` characters of speech model `id`, micro-USD. */
function priceOf(id: string, chars: number): number {
  const model = getModelOf(id, "speech");
  assert.ok(model, `${id} is a speech model`);
  return Number(quoteSpeech(model, chars));
}

describe("OpenAI's speech names in the OpenAI dialect, on the simulator (D48)", () => {
  let gw: TestGateway;
  let user: { user_id: string; org_id: string; api_key: string };
  let client: OpenAI;

  const db = () => gw.services.db.kysely;
  const balance = () => checkedBalance(db(), user.org_id);
  /** The money a request moved in the ledger (negative: charged) and its usage record. */
  const moneyOf = async (requestId: string | null) => {
    assert.ok(requestId, "X-Svc-Request-Id");
    const entries = await db().selectFrom("ledger_entries").select("amount_micros").where("request_id", "=", requestId).execute();
    const usage = await db().selectFrom("usage_records").selectAll().where("id", "=", requestId).executeTakeFirstOrThrow();
    return { net: entries.reduce((s, e) => s + Number(e.amount_micros), 0), usage };
  };
  const counts = async () => ({
    holds: (await db().selectFrom("holds").select("id").where("account_id", "=", user.org_id).execute()).length,
    jobs: (await db().selectFrom("jobs").select("id").where("account_id", "=", user.org_id).execute()).length,
    ledger: (await db().selectFrom("ledger_entries").select("seq").where("account_id", "=", user.org_id).execute()).length,
    balance: await balance(),
  });

  before(async () => {
    gw = await startGateway("sqlite");
    ({ user, client } = await fundedClient(gw));
  });
  after(async () => {
    await gw?.close();
  });

  test("tts-1-hd names the catalog's highest-quality alpha speech model: an alpha model at the top alpha price, not the default", () => {
    const alpha = enabledModels().flatMap((m) => (m.capability === "speech" && m.voiceProvider === "alpha" ? [m] : []));
    const hd = alpha.find((m) => m.id === HD_SPEECH_MODEL);
    assert.ok(hd, `${HD_SPEECH_MODEL} is an enabled alpha speech model`);
    const top = Math.max(...alpha.map((m) => Number(m.pricing.microsPerKchar)));
    assert.equal(Number(hd.pricing.microsPerKchar), top);
    assert.notEqual(HD_SPEECH_MODEL, DEFAULT_SPEECH_MODEL);
    assert.equal(OPENAI_SPEECH_MODEL_IDS["tts-1"], DEFAULT_SPEECH_MODEL);
    assert.equal(OPENAI_SPEECH_MODEL_IDS["gpt-4o-mini-tts"], DEFAULT_SPEECH_MODEL);
    assert.equal(OPENAI_SPEECH_MODEL_IDS["tts-1-hd"], HD_SPEECH_MODEL);
  });

  test("tts-1, gpt-4o-mini-tts and tts-1-hd: real MP3, X-Svc-Model the catalog model, charged its catalog price exactly", async () => {
    const cases = [
      { model: "tts-1", voice: "alloy", catalog: DEFAULT_SPEECH_MODEL, input: "Hello from the gateway, in OpenAI's own words." },
      { model: "gpt-4o-mini-tts", voice: "coral", catalog: DEFAULT_SPEECH_MODEL, input: "Speak like a lighthouse keeper.", instructions: "Calm and slow." },
      { model: "tts-1-hd", voice: "nova", catalog: HD_SPEECH_MODEL, input: "Crisp and expressive: ünïcödé counts as characters." },
    ] as const;
    for (const c of cases) {
      const before = await balance();
      const { data, response } = await client.audio.speech.create({ model: c.model, voice: c.voice, input: c.input, ...("instructions" in c ? { instructions: c.instructions } : {}) }).withResponse();
      assert.equal(response.status, 200);
      assert.equal(response.headers.get("x-svc-model"), c.catalog, c.model);
      assert.equal(response.headers.get("content-type"), "audio/mpeg");
      const mp3 = new Uint8Array(await data.arrayBuffer());
      assert.ok(mp3.length > 1000, `${mp3.length} bytes`);
      const meta = await parseBuffer(mp3, { mimeType: "audio/mpeg" });
      assert.equal(meta.format.container, "MPEG");
      assert.equal(meta.format.sampleRate, 44100);
      assert.ok((meta.format.duration ?? 0) > 0.5, `duration ${meta.format.duration}`);

      const chars = [...c.input.normalize("NFC")].length;
      assert.equal(response.headers.get("x-svc-chars-billed"), String(chars));
      const price = priceOf(c.catalog, chars);
      assert.ok(price > 0);
      const { net, usage } = await moneyOf(response.headers.get("x-svc-request-id"));
      assert.equal(net, -price, `${c.model}: the ledger moved exactly the catalog price of ${c.catalog}`);
      assert.equal(usage.model, c.catalog);
      assert.equal(usage.kind, "speech");
      assert.equal(Number(usage.cost_micros), price);
      assert.equal(await balance(), before - price);
    }
  });

  test("every OpenAI voice name speaks with its own fixed alpha library voice", async () => {
    assert.deepEqual(Object.keys(OPENAI_VOICES).sort(), [...VOICE_NAMES].sort());
    const ids = Object.values(OPENAI_VOICES).map((v) => v.voiceId);
    assert.equal(new Set(ids).size, VOICE_NAMES.length, "thirteen different voices");
    const library = await gw.request("GET", "/v1/audio/voices?provider=alpha", { token: user.api_key });
    assert.equal(library.status, 200);
    const listed = new Map<string, string>(library.json.data.map((v: { voice_id: string; name: string }) => [v.voice_id, v.name]));
    for (const name of VOICE_NAMES) {
      const voice = OPENAI_VOICES[name];
      assert.equal(listed.get(voice.voiceId), voice.name, `${name}: ${voice.voiceId} is ${voice.name} of the alpha library`);
      const res = await client.audio.speech.create({ model: "tts-1", voice: name, input: `This is ${name}.` }).asResponse();
      assert.equal(res.status, 200, name);
      assert.ok((await res.arrayBuffer()).byteLength > 0, name);
    }
    // The same voice by its id, or as OpenAI's custom-voice object, speaks the same bytes (the simulator is deterministic).
    const byName = Buffer.from(await (await client.audio.speech.create({ model: "tts-1", voice: "fable", input: "Same voice." })).arrayBuffer());
    const byObject = Buffer.from(await (await client.audio.speech.create({ model: "tts-1", voice: { id: OPENAI_VOICES.fable.voiceId }, input: "Same voice." })).arrayBuffer());
    assert.ok(byName.equals(byObject));
  });

  test("response_format wav and pcm: 24 kHz 16-bit mono, the WAV holding the same samples as the PCM", async () => {
    const input = "Twenty-four kilohertz.";
    const wavRes = await client.audio.speech.create({ model: "tts-1", voice: "echo", input, response_format: "wav" }).asResponse();
    assert.equal(wavRes.headers.get("content-type"), "audio/wav");
    assert.equal(wavRes.headers.get("x-svc-model"), DEFAULT_SPEECH_MODEL);
    const wav = Buffer.from(await wavRes.arrayBuffer());
    assert.equal(wav.subarray(0, 4).toString("latin1"), "RIFF");
    assert.equal(wav.subarray(8, 12).toString("latin1"), "WAVE");
    const meta = await parseBuffer(wav, { mimeType: "audio/wav" });
    assert.equal(meta.format.sampleRate, 24000);
    assert.equal(meta.format.numberOfChannels, 1);
    assert.equal(meta.format.bitsPerSample, 16);
    assert.ok((meta.format.duration ?? 0) > 0.5, `duration ${meta.format.duration}`);

    const pcmRes = await client.audio.speech.create({ model: "tts-1", voice: "echo", input, response_format: "pcm" }).asResponse();
    assert.equal(pcmRes.headers.get("content-type"), "audio/pcm");
    const pcm = Buffer.from(await pcmRes.arrayBuffer());
    assert.equal(pcm.length % 2, 0);
    assert.ok(wav.subarray(44).equals(pcm), "the WAV's data chunk is the PCM");
    assert.equal(wav.readUInt32LE(40), pcm.length);
    assert.ok(Math.abs(pcm.length / 2 / 24000 - (meta.format.duration ?? 0)) < 0.01);
  });

  test("an upstream that fails after the hold (tts-1, the simulator told to fail): 502, the hold released, nothing charged", async () => {
    const start = await counts();
    const err = await failure(client.audio.speech.create({ model: "tts-1", voice: "alloy", input: "This one fails upstream." }, { headers: { "x-svc-simulate": "fail" } }));
    assert.equal(err.status, 502);
    const requestId = err.headers?.get("x-svc-request-id") ?? null;
    const { net, usage } = await moneyOf(requestId);
    assert.equal(net, 0, "the hold and its release net to zero");
    assert.equal(usage.status, "failed");
    assert.equal(usage.model, DEFAULT_SPEECH_MODEL);
    const end = await counts();
    assert.equal(end.balance, start.balance);
    assert.equal(end.holds, start.holds + 1, "a hold was placed, then released");
  });

  test("refusals of what the gateway cannot make (opus, a speed other than 1, sse) are 400 and charge nothing", async () => {
    const start = await counts();
    const opus = await failure(client.audio.speech.create({ model: "tts-1", voice: "alloy", input: "Hi.", response_format: "opus" }));
    assert.ok(opus instanceof BadRequestError);
    assert.equal(opus.code, "invalid_request");
    assert.equal(opus.param, "response_format");
    assert.match(opus.message, /mp3, wav or pcm/);
    const fast = await failure(client.audio.speech.create({ model: "tts-1", voice: "alloy", input: "Hi.", speed: 1.5 }));
    assert.equal(fast.status, 400);
    assert.equal(fast.param, "speed");
    const slow = await failure(client.audio.speech.create({ model: "tts-1", voice: "alloy", input: "Hi.", speed: 0.1 }));
    assert.equal(slow.status, 400);
    assert.equal(slow.param, "speed");
    const sse = await failure(client.audio.speech.create({ model: "gpt-4o-mini-tts", voice: "alloy", input: "Hi.", stream_format: "sse" }));
    assert.equal(sse.status, 400);
    assert.equal(sse.param, "stream_format");
    // A model the dialect serves, of another kind: the route's own 400.
    const image = await failure(client.audio.speech.create({ model: "imgA-v4", voice: "alloy", input: "Hi." }));
    assert.equal(image.status, 400);
    assert.equal(image.code, "not_a_tts_model");
    // Speed 1 and instructions are accepted.
    const ok = await client.audio.speech.create({ model: "tts-1", voice: "alloy", input: "Hi.", speed: 1, instructions: "Whisper." }).asResponse();
    assert.equal(ok.status, 200);
    assert.ok((await ok.arrayBuffer()).byteLength > 0);
    const end = await counts();
    assert.equal(end.balance, start.balance - priceOf(DEFAULT_SPEECH_MODEL, 3), "only the accepted call was charged");
    assert.equal(end.jobs, start.jobs);
  });

  test("a model the dialect does not serve: OpenAI's 404 model_not_found naming GET /openai/v1/models, on every route that takes a model, nothing charged", async () => {
    const start = await counts();
    const v1 = new OpenAI({ apiKey: user.api_key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    const png = await toFile(tinyPng(), "p.png", { type: "image/png" });
    const wav = Buffer.from(makeWav(2));
    const calls: [string, () => Promise<unknown>][] = [
      ["speech", () => client.audio.speech.create({ model: "tts-9", voice: "alloy", input: "Hi." })],
      ["images.generate", () => client.images.generate({ model: "dall-e-3", prompt: "a lighthouse" })],
      ["images.edit", () => client.images.edit({ model: "dall-e-2", image: png, prompt: "night" })],
      ["videos.create", () => client.videos.create({ model: "sora-2", prompt: "waves" })],
      ["videos.create at /v1", () => v1.videos.create({ model: "sora-2-pro", prompt: "waves", input_reference: png })],
      ["chat", () => client.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "Hi" }] })],
      ["transcriptions", async () => client.audio.transcriptions.create({ model: "whisper-1", file: await toFile(wav, "a.wav", { type: "audio/wav" }) })],
    ];
    for (const [what, call] of calls) {
      const err = await failure(call());
      assert.ok(err instanceof NotFoundError, `${what}: a NotFoundError (${err.status} ${err.message})`);
      assert.equal(err.code, "model_not_found", what);
      assert.equal(err.type, "invalid_request_error", what);
      assert.equal(err.param, "model", what);
      assert.match(err.message, /GET \/openai\/v1\/models/, what);
    }
    // The body is OpenAI's own error object.
    const raw = await fetch(`${gw.url}/openai/v1/audio/speech`, {
      method: "POST",
      headers: { authorization: `Bearer ${user.api_key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "tts-9", voice: "alloy", input: "Hi." }),
    });
    assert.equal(raw.status, 404);
    const body = (await raw.json()) as { error: Record<string, unknown> };
    assert.deepEqual(Object.keys(body.error).sort(), ["code", "message", "param", "type"]);
    assert.equal(body.error.code, "model_not_found");
    assert.deepEqual(await counts(), start, "no hold, job, ledger entry or charge");
    // The 404 is documented on the dialect's routes, not on the native ones that share their handlers.
    const doc = (await gw.request("GET", "/openapi.json")).json as { paths: Record<string, Record<string, { responses: Record<string, { description: string }> }>> };
    for (const path of ["/openai/v1/audio/speech", "/openai/v1/chat/completions", "/openai/v1/audio/transcriptions", "/openai/v1/images/generations", "/openai/v1/videos", "/v1/videos"]) {
      const described = doc.paths[path].post.responses["404"].description;
      assert.equal(described.split("model_not_found").length, 2, `${path}: named once in "${described}"`);
    }
    for (const path of ["/v1/audio/speech", "/v1/chat/completions", "/v1/audio/transcriptions"]) {
      assert.doesNotMatch(doc.paths[path].post.responses["404"].description, /model_not_found/, path);
    }
    const chat = await gw.request("POST", "/openai/v1/chat/completions", { token: user.api_key, body: { model: "gpt-4o", messages: [{ role: "user", content: "Hi" }] } });
    assert.equal(chat.status, 404);
    // The native route keeps the native answer for a name it does not know.
    const native = await gw.request("POST", "/v1/audio/speech", { token: user.api_key, body: { model: "tts-1", voice_id: OPENAI_VOICES.alloy.voiceId, input: "Hi." } });
    assert.equal(native.status, 400);
    assert.equal(native.json.error.code, "not_a_tts_model");
  });

  test("models.list at /openai/v1: OpenAI's list shape, the models the dialect serves and OpenAI's names", async () => {
    const page = await client.models.list();
    const ids = page.data.map((m) => m.id);
    for (const id of ["tts-1", "tts-1-hd", "gpt-4o-mini-tts", "gpt-image-2", DEFAULT_SPEECH_MODEL, HD_SPEECH_MODEL, "vidD-3-fast", "imgC-q1", "host1-transcribe-1"]) {
      assert.ok(ids.includes(id), `${id} listed`);
    }
    for (const id of ["alpha-music", "alpha-sfx", "beta-voice-clone", "tts-9"]) assert.ok(!ids.includes(id), `${id} not listed`);
    for (const m of page.data) {
      assert.equal(m.object, "model");
      assert.equal(typeof m.created, "number");
      assert.equal(typeof m.owned_by, "string");
    }
    const tts1 = page.data.find((m) => m.id === "tts-1") as unknown as { alias_of: string };
    assert.equal(tts1.alias_of, DEFAULT_SPEECH_MODEL);
    const hd = page.data.find((m) => m.id === HD_SPEECH_MODEL) as unknown as { aliases: string[] };
    assert.deepEqual(hd.aliases, ["tts-1-hd"]);
    const raw = await gw.request("GET", "/openai/v1/models", { token: user.api_key });
    assert.equal(raw.json.object, "list");
    // The native list is unchanged: every model, no OpenAI names.
    const native = await gw.request("GET", "/v1/models", { token: user.api_key });
    const nativeIds = native.json.data.map((m: { id: string }) => m.id);
    assert.ok(nativeIds.includes("alpha-music") && !nativeIds.includes("tts-1"));
  });
});

describe("OpenAI's speech names on the ElevenLabs fake (D48)", () => {
  const EL_KEY = "el-openai-names-key-3c8e1d07a9";
  let el: ElevenLabsFake;
  let gw: TestGateway;
  let client: OpenAI;

  before(async () => {
    el = await startElevenLabsFake({ apiKey: EL_KEY });
    const upstreams = [{ name: "el-main", protocol: "elevenlabs", base_url: el.url, api_key: "env:OPENAI_NAMES_EL_KEY", families: ["alpha"] }];
    gw = await startGateway("sqlite", { OPENAI_NAMES_EL_KEY: EL_KEY, UPSTREAMS: JSON.stringify(upstreams) });
    ({ client } = await fundedClient(gw));
  });
  after(async () => {
    await gw?.close();
    await el?.close();
  });

  test("each OpenAI voice reaches ElevenLabs as its premade voice id, tts-1 and tts-1-hd as ElevenLabs' model ids", async () => {
    for (const name of VOICE_NAMES) {
      for (const model of ["tts-1", "tts-1-hd"] as const) {
        el.reset();
        const res = await client.audio.speech.create({ model, voice: name, input: `${name} speaking.` }).asResponse();
        assert.equal(res.status, 200, `${model} ${name}`);
        const catalog = OPENAI_SPEECH_MODEL_IDS[model];
        assert.equal(res.headers.get("x-svc-model"), catalog);
        assert.ok((await res.arrayBuffer()).byteLength > 0);
        const sent = el.submits().filter((r) => r.path.includes("/v1/text-to-speech/"));
        assert.equal(sent.length, 1, `${model} ${name}: one upstream call`);
        assert.ok(sent[0].path.startsWith(`/v1/text-to-speech/${OPENAI_VOICES[name].voiceId}`), sent[0].path);
        assert.equal((sent[0].body as { model_id: string }).model_id, ELEVENLABS_MODELS[catalog].modelId);
      }
    }
  });

  test("wav asks ElevenLabs for 24 kHz PCM and answers a WAV of it", async () => {
    el.reset();
    const res = await client.audio.speech.create({ model: "gpt-4o-mini-tts", voice: "shimmer", input: "A WAV, please.", response_format: "wav" }).asResponse();
    assert.equal(res.status, 200);
    const sent = el.submits().find((r) => r.path.includes("/v1/text-to-speech/"));
    assert.match(sent?.path ?? "", /output_format=pcm_24000/);
    const wav = Buffer.from(await res.arrayBuffer());
    const meta = await parseBuffer(wav, { mimeType: "audio/wav" });
    assert.equal(meta.format.sampleRate, 24000);
    assert.ok((meta.format.duration ?? 0) > 0);
  });
});
