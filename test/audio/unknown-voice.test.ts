/**
 * A speech voice the model's sources do not know (issue 28, point 5): the answer says the voice is unknown
 * to the source(s) serving the model, names them, and how to list their voices; nothing is charged and the
 * ledger does not move. A voice that is known and belongs to the other family keeps D20's
 * `voice_model_mismatch`, worded as what it is. (A beta id is only known to be unknown once the source
 * answered: D20 makes any id outside the alpha library a beta voice, so the call is held and the hold
 * released in full, D27.) On the simulator and on the gateway configured with
 * `UPSTREAMS` on the loopback fakes of ElevenLabs and MiniMax (real HTTP, no seams). ElevenLabs' default
 * voice "George" (`JBFqnCBsd6RMkjVDRZzb`) and MiniMax's `English_Graceful_Lady` speak on both.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { DEMO_ALPHA_VOICE_ID, DEMO_BETA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";
import { type ElevenLabsFake, startElevenLabsFake } from "../../fakes/elevenlabs.ts";
import { type MiniMaxFake, startMiniMaxFake } from "../../fakes/minimax.ts";
import { startGateway, type TestGateway, type TestResponse } from "../helpers/gateway.ts";

/** ElevenLabs' default voice "George": known to ElevenLabs, its fake and the simulator. */
const GEORGE = "JBFqnCBsd6RMkjVDRZzb";

/**
 * Speaks as `user` and returns the answer, checking that the balance did not move, that it still equals the
 * ledger's sum, and which ledger entries the call wrote (`entries`, oldest first): none when the gateway
 * refused the voice itself, a hold and its release when the source was asked (D17, D27).
 */
async function speakExpectingError(
  gw: TestGateway,
  user: { user_id: string; org_id: string; api_key: string },
  body: Record<string, unknown>,
  entries: string[] = [],
): Promise<TestResponse> {
  const db = gw.services.db.kysely;
  const before = await getBalance(db, user.org_id);
  const seen = await ledgerIds(gw, user.api_key);
  const r = await gw.request("POST", "/v1/audio/speech", { token: user.api_key, body: { input: "Hello from the gateway.", ...body } });
  assert.equal(await getBalance(db, user.org_id), before, "balance unchanged");
  assert.equal(await ledgerSum(db, user.org_id), before, "ledger sum equals the balance");
  const added = (await ledger(gw, user.api_key)).filter((e) => !seen.has(e.id)).reverse();
  assert.deepEqual(added.map((e) => e.kind), entries);
  if (added.length === 2) assert.equal(added[0]!.amount_usd, -added[1]!.amount_usd, "the whole hold comes back");
  return r;
}

async function ledger(gw: TestGateway, key: string): Promise<{ id: string; kind: string; amount_usd: number }[]> {
  const r = await gw.request("GET", "/v1/billing/ledger?limit=100", { token: key });
  assert.equal(r.status, 200);
  return r.json.data as { id: string; kind: string; amount_usd: number }[];
}

async function ledgerIds(gw: TestGateway, key: string): Promise<Set<string>> {
  return new Set((await ledger(gw, key)).map((e) => e.id));
}

function assertError(r: TestResponse, status: number, code: string): string {
  assert.equal(r.status, status, JSON.stringify(r.json));
  assert.equal(r.json.error.code, code, JSON.stringify(r.json));
  assert.equal(r.json.error.param, "voice_id");
  return r.json.error.message as string;
}

describe("unknown speech voices on the simulator", () => {
  let gw: TestGateway;
  let user: { user_id: string; org_id: string; api_key: string };
  before(async () => {
    gw = await startGateway("sqlite");
    user = await gw.register();
  });
  after(async () => {
    await gw?.close();
  });

  test("an id no library lists, with an alpha model: 400 voice_model_mismatch saying it is unknown, how to list, nothing charged", async () => {
    const msg = assertError(await speakExpectingError(gw, user, { voice_id: "NoSuchVoice123456789" }), 400, "voice_model_mismatch");
    assert.match(msg, /Voice 'NoSuchVoice123456789' is not known/);
    assert.match(msg, /not in the alpha voice library, whose voices come from the built-in simulator/);
    assert.match(msg, /GET \/v1\/audio\/voices\?provider=alpha/);
    assert.match(msg, /npx gateway voices --provider alpha/);
    assert.match(msg, /Nothing was charged/);
    assert.doesNotMatch(msg, /A beta voice/);
  });

  test("a known voice of the other family keeps voice_model_mismatch, worded as what it is", async () => {
    const beta = assertError(await speakExpectingError(gw, user, { model: "alpha-v3", voice_id: DEMO_BETA_VOICE_ID }), 400, "voice_model_mismatch");
    assert.match(beta, /is a beta voice \(from the built-in simulator\)/);
    assert.match(beta, /provider=alpha/);
    const alpha = assertError(await speakExpectingError(gw, user, { model: "beta-speech-hd", voice_id: DEMO_ALPHA_VOICE_ID }), 400, "voice_model_mismatch");
    assert.match(alpha, /is an alpha voice \(from the built-in simulator\)/);
    assert.match(alpha, /provider=beta/);
  });

  test("ElevenLabs' George and MiniMax's English_Graceful_Lady are voices of the simulator's libraries", async () => {
    const r = await gw.request("POST", "/v1/audio/speech", { token: user.api_key, body: { input: "Hello.", voice_id: GEORGE } });
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal(r.headers.get("x-svc-model"), "alpha-multilingual-v2");
    const b = await gw.request("POST", "/v1/audio/speech", { token: user.api_key, body: { model: "beta-speech-hd", input: "Hello.", voice_id: "English_Graceful_Lady" } });
    assert.equal(b.status, 200, JSON.stringify(b.json));
    for (const [provider, id] of [["alpha", GEORGE], ["beta", "English_Graceful_Lady"]] as const) {
      const list = await gw.request("GET", `/v1/audio/voices?provider=${provider}`, { token: user.api_key });
      assert.ok((list.json.data as { voice_id: string }[]).some((v) => v.voice_id === id), `${id} listed`);
    }
  });
});

describe("unknown speech voices on UPSTREAMS (the ElevenLabs and MiniMax fakes)", () => {
  const KEY = "unknown-voice-key-5d1e8a";
  let el: ElevenLabsFake;
  let elBackup: ElevenLabsFake;
  let mm: MiniMaxFake;
  let gw: TestGateway;
  let user: { user_id: string; org_id: string; api_key: string };
  before(async () => {
    el = await startElevenLabsFake({ apiKey: KEY });
    elBackup = await startElevenLabsFake({ apiKey: KEY });
    mm = await startMiniMaxFake({ apiKey: KEY });
    const upstreams = [
      { name: "el-main", protocol: "elevenlabs", base_url: el.url, api_key: "env:UV_KEY", families: ["alpha"] },
      { name: "el-backup", protocol: "elevenlabs", base_url: elBackup.url, api_key: "env:UV_KEY", families: ["alpha"] },
      { name: "mm-main", protocol: "minimax", base_url: mm.url, api_key: "env:UV_KEY", families: ["beta"] },
    ];
    gw = await startGateway("sqlite", { UV_KEY: KEY, UPSTREAMS: JSON.stringify(upstreams) });
    user = await gw.register();
  });
  after(async () => {
    await gw?.close();
    await Promise.all([el?.close(), elBackup?.close(), mm?.close()]);
  });

  test("the simulator's demo voice with the default (alpha) model: unknown to the ElevenLabs sources, not a 'beta voice'", async () => {
    const ttsCalls = el.requests.filter((q) => q.path.startsWith("/v1/text-to-speech/")).length;
    const msg = assertError(await speakExpectingError(gw, user, { voice_id: DEMO_ALPHA_VOICE_ID }), 400, "voice_model_mismatch");
    assert.match(msg, new RegExp(`Voice '${DEMO_ALPHA_VOICE_ID}' is not known`));
    assert.match(msg, /the ElevenLabs sources 'el-main' and 'el-backup'/);
    assert.match(msg, /nor in the beta voice library \(from the MiniMax source 'mm-main'\)/);
    assert.match(msg, /GET \/v1\/audio\/voices\?provider=alpha or `npx gateway voices --provider alpha`/);
    assert.doesNotMatch(msg, /A beta voice/);
    assert.doesNotMatch(msg, new RegExp(KEY));
    assert.equal(el.requests.filter((q) => q.path.startsWith("/v1/text-to-speech/")).length, ttsCalls, "ElevenLabs was not asked to speak");
  });

  test("a MiniMax system voice with an alpha model: a beta voice, named as such", async () => {
    const msg = assertError(await speakExpectingError(gw, user, { model: "alpha-v3", voice_id: mm.systemVoiceIds()[0] }), 400, "voice_model_mismatch");
    assert.match(msg, /is a beta voice \(from the MiniMax source 'mm-main'\)/);
  });

  test("an id MiniMax does not know, with a beta model: 410 voice_unavailable naming the MiniMax source and how to list, nothing charged", async () => {
    const msg = assertError(await speakExpectingError(gw, user, { model: "beta-speech-hd", voice_id: DEMO_BETA_VOICE_ID }, ["hold", "hold_release"]), 410, "voice_unavailable");
    assert.match(msg, new RegExp(`Voice '${DEMO_BETA_VOICE_ID}' is not known to the MiniMax source 'mm-main', which serves model 'beta-speech-hd'`));
    assert.match(msg, /GET \/v1\/audio\/voices\?provider=beta or `npx gateway voices --provider beta`/);
    assert.match(msg, /Nothing was charged/);
    assert.doesNotMatch(msg, /upstream that created it/);
  });

  test("ElevenLabs' default voice George speaks on the ElevenLabs source, and a MiniMax system voice on MiniMax", async () => {
    const a = await gw.request("POST", "/v1/audio/speech", { token: user.api_key, body: { input: "Hello.", voice_id: GEORGE } });
    assert.equal(a.status, 200, JSON.stringify(a.json));
    assert.ok(el.requests.some((q) => q.path.startsWith(`/v1/text-to-speech/${GEORGE}`)));
    const b = await gw.request("POST", "/v1/audio/speech", { token: user.api_key, body: { model: "beta-speech-turbo", input: "Hello.", voice_id: "English_Graceful_Lady" } });
    assert.equal(b.status, 200, JSON.stringify(b.json));
  });
});
