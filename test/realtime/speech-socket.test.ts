/**
 * The text-to-speech sockets (D42) on a real gateway on loopback, served by the simulator, on both databases:
 * ElevenLabs' `stream-input` and `multi-stream-input` protocols driven by a real WebSocket client, and the
 * money of a socket: one hold extended block by block, the exact capture of what was delivered, the usage
 * record, a balance that runs out mid-session, a client that vanishes, 100 sockets of one account at once,
 * the refusals before the upgrade, the sixth context, inactivity and test-mode keys.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { parseBuffer } from "music-metadata";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { registry } from "../../src/metrics.ts";
import { DEMO_ALPHA_VOICE_ID, DEMO_BETA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../helpers/gateway.ts";
import { connect, fundedOrg as fundedOrgOf, open, refused, type TestSocket, wsUrl } from "../helpers/realtime.ts";

const PARAGRAPH =
  "The gateway streams speech as the text arrives. Every chunk is paid for before it is spoken, and the balance always equals the ledger. Voice agents keep one socket open for a whole call, so the hold grows block by block while the caller listens.";

/** `alpha-flash-v2-5`: 0.20 USD per 1000 characters, 200 micro-USD each. */
function flashPrice(chars: number): number {
  return chars * 200;
}

/** Code points of the text the chunker would bill (each chunk trimmed). */
function codePoints(s: string): number {
  return Array.from(s).length;
}

/** Sends `text` word by word (each word with its trailing space), as a language model writes it. */
function sendWords(s: TestSocket, text: string, contextId?: string): void {
  for (const w of text.split(" ")) s.send({ text: `${w} `, ...(contextId ? { context_id: contextId } : {}) });
}

for (const backend of BACKENDS) {
  describe(`speech sockets on ${backend.name}`, { skip: backend.skip }, () => {
    let gw: TestGateway;
    before(async () => {
      // Small blocks, so a paragraph extends the hold many times; a fast heartbeat.
      gw = await startGateway(backend.name, { REALTIME_HOLD_CHARS: "40", REALTIME_HEARTBEAT_MS: "200", REALTIME_SWEEP_AFTER_S: "1" });
    });
    after(async () => {
      await gw?.close();
    });

    async function exact(accountId: string): Promise<number> {
      const db = gw.services.db.kysely;
      const balance = (await getBalance(db, accountId))!;
      assert.ok(balance >= 0, "never negative");
      assert.equal(balance, await ledgerSum(db, accountId), "balance equals the ledger sum");
      return balance;
    }

    const fundedOrg = (usd: number) => fundedOrgOf(gw, usd);

    /** Every pool of the tier matrix at `n` (D22 override): many sockets of one account at once. */
    const POOLS = (n: number) => ({ host_1: n, host_2: n, alpha: n, beta: n, host_3: n });

    /** The socket's usage record, once settled (the close is sent after the capture). */
    async function settledRecord(accountId: string) {
      const rows = await gw.services.db.kysely.selectFrom("usage_records").selectAll().where("account_id", "=", accountId).where("realtime", "=", 1).orderBy("created_at", "desc").execute();
      return rows;
    }

    const path = (voice = DEMO_ALPHA_VOICE_ID, q = "model_id=alpha-flash-v2-5", flavour = "stream-input") => wsUrl(gw.url, `/v1/audio/speech/${voice}/${flavour}?${q}`);

    test("stream-input: text word by word, audio with alignment, isFinal, 1000; exact money and one usage record", async () => {
      const u = await gw.register();
      const s = await open(path(), { "xi-api-key": u.api_key });
      s.send({ text: " ", voice_settings: { stability: 0.5, similarity_boost: 0.8 }, generation_config: { chunk_length_schedule: [50] } });
      sendWords(s, PARAGRAPH);
      s.send({ text: "" });
      const close = await s.waitClose();
      assert.equal(close.code, 1000);
      assert.ok(s.messages.some((m) => m.isFinal === true), "isFinal at the end");
      const audio = s.audio();
      const meta = await parseBuffer(audio, { mimeType: "audio/mpeg" });
      assert.equal(meta.format.sampleRate, 44100);
      assert.ok((meta.format.duration ?? 0) > 5, `a paragraph of speech (${meta.format.duration} s)`);
      const chars = s.messages.flatMap((m) => ((m.alignment as { chars?: string[] } | null)?.chars ?? [])).join("");
      assert.equal(chars.replace(/\s+/g, " ").trim(), PARAGRAPH, "the alignment spells the text, spaces between chunks included");
      const starts = s.messages.flatMap((m) => ((m.alignment as { charStartTimesMs?: number[] } | null)?.charStartTimesMs ?? []));
      assert.ok(starts.every((t, i) => i === 0 || t >= starts[i - 1]), "alignment times grow across chunks");
      const [rec] = await settledRecord(u.org_id);
      const billed = Number(rec.characters);
      assert.equal(billed, codePoints(PARAGRAPH) + 1, "every character spoken, the last word's trailing space included");
      assert.deepEqual([rec.kind, rec.status, Number(rec.cost_micros), Number(rec.close_code), Number(rec.contexts), Number(rec.realtime)], ["speech", "succeeded", flashPrice(billed), 1000, 1, 1]);
      const entries = await gw.services.db.kysely.selectFrom("ledger_entries").select(["kind", "amount_micros"]).where("request_id", "=", rec.id).orderBy("seq").execute();
      assert.ok(entries.filter((e) => e.kind === "hold").length >= 4, `the hold was extended many times (${entries.length} entries)`);
      assert.deepEqual(entries.slice(-2).map((e) => e.kind), ["hold_release", "charge"]);
      assert.equal(entries.reduce((a, e) => a + Number(e.amount_micros), 0), -flashPrice(billed));
      assert.equal(await exact(u.org_id), 500_000 - flashPrice(billed));
      // The request is readable through the API with its realtime fields.
      const r = await gw.request("GET", `/v1/requests/${rec.id}`, { token: u.api_key });
      assert.equal(r.status, 200);
      assert.equal(r.json.realtime, true);
      assert.equal(r.json.close_code, 1000);
    });

    test("every output format is one valid stream of that format", async () => {
      const u = await gw.register();
      for (const format of ["mp3_44100_128", "mp3_22050_32", "mp3_44100_192", "pcm_16000", "pcm_22050", "pcm_24000", "pcm_44100", "ulaw_8000"]) {
        const s = await open(path(DEMO_ALPHA_VOICE_ID, `model_id=eleven_flash_v2_5&output_format=${format}`), { authorization: `Bearer ${u.api_key}` });
        s.send({ text: " " });
        s.send({ text: "First sentence of the test. ", flush: true });
        s.send({ text: "Second sentence, after a flush. " });
        s.send({ text: "" });
        assert.equal((await s.waitClose()).code, 1000);
        const audio = s.audio();
        if (format.startsWith("mp3")) {
          const meta = await parseBuffer(audio, { mimeType: "audio/mpeg" });
          assert.equal(meta.format.sampleRate, Number(format.split("_")[1]), format);
          assert.ok((meta.format.duration ?? 0) > 2, `${format}: ${meta.format.duration}`);
        } else {
          const rate = Number(format.split("_")[1]);
          const bytesPerSample = format.startsWith("pcm") ? 2 : 1;
          assert.equal(audio.length % bytesPerSample, 0, format);
          assert.ok(audio.length / bytesPerSample / rate > 2, `${format}: ${audio.length} bytes`);
        }
      }
      await exact(u.org_id);
    });

    test("the chunk schedule, try_trigger_generation and auto_mode decide when text is spoken", async () => {
      const u = await gw.register();
      await gw.request("PUT", `/v1/admin/orgs/${u.org_id}/limits`, { token: ADMIN_TOKEN, body: { audio_concurrent_per_provider: POOLS(5) } });
      /** The text spoken so far on `s` (its alignment), spaces squeezed. */
      const spoken = (s: TestSocket) => s.messages.flatMap((m) => ((m.alignment as { chars?: string[] } | null)?.chars ?? [])).join("").replace(/\s+/g, " ").trim();
      // The schedule [60]: nothing is spoken before 60 characters are buffered, then all of them are.
      const sched = await open(path(), { "xi-api-key": u.api_key });
      sched.send({ text: " ", generation_config: { chunk_length_schedule: [60] } });
      sched.send({ text: "Short text waits in the buffer. " });
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(sched.audio().length, 0, "32 characters: below the schedule's 60, nothing spoken yet");
      sched.send({ text: "Now the buffer is past sixty characters. " });
      await sched.waitFor((m) => typeof m.audio === "string");
      sched.send({ text: "" });
      await sched.waitClose();
      assert.equal(spoken(sched), "Short text waits in the buffer. Now the buffer is past sixty characters.");
      // try_trigger_generation: 50 characters or more go at once, fewer wait.
      const tt = await open(path(), { "xi-api-key": u.api_key });
      tt.send({ text: " " });
      tt.send({ text: "Too short to trigger. ", try_trigger_generation: true });
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(tt.audio().length, 0, "22 characters do not trigger");
      tt.send({ text: "With this the buffer holds more than fifty characters. ", try_trigger_generation: true });
      await tt.waitFor((m) => typeof m.audio === "string");
      tt.ws.close();
      await tt.waitClose();
      // auto_mode: every sentence end is spoken at once, the schedule off.
      const auto = await open(path(DEMO_ALPHA_VOICE_ID, "model_id=alpha-flash-v2-5&auto_mode=true"), { "xi-api-key": u.api_key });
      auto.send({ text: " " });
      auto.send({ text: "One. " });
      await auto.waitFor((m) => typeof m.audio === "string");
      assert.equal(spoken(auto), "One.");
      auto.send({ text: "Two words" });
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(spoken(auto), "One.", "no sentence end yet: waits");
      auto.send({ text: "" });
      await auto.waitClose();
      assert.equal(spoken(auto), "One. Two words");
      await exact(u.org_id);
    });

    test("the balance runs out mid-session: what was paid for is spoken, then insufficient_balance and 1008", async () => {
      // 0.02 USD: 100 characters of flash, in blocks of 40.
      const u = await fundedOrg(0.02);
      const s = await open(path(DEMO_ALPHA_VOICE_ID, "model_id=alpha-flash-v2-5&output_format=pcm_16000"), { "xi-api-key": u.api_key });
      s.send({ text: " ", generation_config: { chunk_length_schedule: [50] } });
      for (let i = 0; i < 100; i++) s.send({ text: `Word${i} ` });
      s.send({ text: "", flush: true });
      const close = await s.waitClose();
      assert.equal(close.code, 1008);
      const err = s.messages.find((m) => typeof m.error === "string");
      assert.equal(err?.error, "insufficient_balance");
      assert.ok(s.audio().length > 0, "the paid text was spoken");
      const [rec] = await settledRecord(u.org_id);
      assert.ok(Number(rec.cost_micros) > 0 && Number(rec.cost_micros) <= 20_000, "never more than the balance");
      assert.equal(Number(rec.cost_micros), flashPrice(Number(rec.characters)));
      assert.equal(Number(rec.close_code), 1008);
      assert.equal(await exact(u.org_id), 20_000 - Number(rec.cost_micros));
    });

    test("a client that vanishes mid-sentence: the chunk in flight is charged (its audio came back), the hold settled", async () => {
      const u = await gw.register();
      const s = await open(path(DEMO_ALPHA_VOICE_ID, "model_id=alpha-flash-v2-5&output_format=pcm_16000"), { "xi-api-key": u.api_key });
      s.send({ text: " " });
      s.send({ text: `${PARAGRAPH} `, flush: true });
      await s.waitFor((m) => typeof m.audio === "string");
      s.ws.terminate();
      // Settled once the session's work ended: poll the record (the client is gone).
      let rec;
      for (let i = 0; i < 200; i++) {
        [rec] = await settledRecord(u.org_id);
        if (rec && rec.status !== "processing") break;
        await new Promise((r) => setTimeout(r, 25));
      }
      assert.ok(rec && rec.status !== "processing", "settled");
      assert.equal(Number(rec.close_code), 1006);
      assert.equal(Number(rec.cost_micros), flashPrice(Number(rec.characters)));
      await exact(u.org_id);
      const open2 = await gw.services.db.kysely.selectFrom("holds").select("id").where("account_id", "=", u.org_id).where("status", "=", "open").execute();
      assert.equal(open2.length, 0, "no hold left open");
    });

    test("100 sockets at once on a balance that covers only some: never below zero, balance equals the ledger", async () => {
      const u = await gw.register();
      const lift = await gw.request("PUT", `/v1/admin/orgs/${u.org_id}/limits`, { token: ADMIN_TOKEN, body: { rpm: 100_000, per_model_rpm: 100_000, audio_concurrent_per_provider: POOLS(200) } });
      assert.equal(lift.status, 200, JSON.stringify(lift.json));
      // 0.5 USD at 0.20 per 1000: 2,500 characters (blocks of 40) for 100 sockets of up to 40 x 61 characters.
      const text = "Sixty characters of text for every socket in the crowd now. ";
      const results = await Promise.all(
        Array.from({ length: 100 }, async () => {
          const c = await connect(path(DEMO_ALPHA_VOICE_ID, "model_id=alpha-flash-v2-5&output_format=ulaw_8000"), { "xi-api-key": u.api_key });
          if ("status" in c) return { refused: c.status };
          c.send({ text: " " });
          for (let i = 0; i < 40; i++) c.send({ text, flush: true });
          c.send({ text: "" });
          const close = await c.waitClose(60_000);
          return { code: close.code, audio: c.audio().length };
        }),
      );
      const closes = results.map((r) => ("code" in r ? r.code : r.refused));
      assert.ok(closes.every((c) => c === 1000 || c === 1008 || c === 402), JSON.stringify(closes));
      assert.ok(closes.includes(1008) || closes.includes(402), "some ran out of money");
      const balance = await exact(u.org_id);
      const rows = await settledRecord(u.org_id);
      const charged = rows.reduce((a, r) => a + Number(r.cost_micros ?? 0), 0);
      assert.equal(balance, 500_000 - charged);
      assert.ok(rows.every((r) => r.status !== "processing"), "every socket settled");
      const left = await gw.services.db.kysely.selectFrom("holds").select("id").where("account_id", "=", u.org_id).where("status", "=", "open").execute();
      assert.equal(left.length, 0);
    });

    test("multi-stream-input: contexts side by side, close_context ends one with isFinal + contextId, a sixth is refused", async () => {
      const u = await gw.register();
      const s = await open(path(DEMO_ALPHA_VOICE_ID, "model_id=alpha-flash-v2-5&output_format=pcm_22050", "multi-stream-input"), { "xi-api-key": u.api_key });
      for (const c of ["a", "b"]) {
        s.send({ text: " ", context_id: c });
        sendWords(s, `Context ${c} speaks this sentence.`, c);
        s.send({ context_id: c, text: "", flush: true });
        s.send({ context_id: c, close_context: true });
      }
      await s.waitFor((m) => m.isFinal === true && m.contextId === "a");
      await s.waitFor((m) => m.isFinal === true && m.contextId === "b");
      assert.ok(s.audio("a").length > 0 && s.audio("b").length > 0);
      for (const c of ["c", "d", "e", "f", "g", "h"]) s.send({ text: " ", context_id: c });
      const close = await s.waitClose();
      assert.equal(close.code, 1008);
      assert.equal(s.messages.find((m) => typeof m.error === "string")?.error, "max_active_conversations");
      const [rec] = await settledRecord(u.org_id);
      assert.equal(Number(rec.contexts), 7);
      await exact(u.org_id);
    });

    test("close_socket flushes nothing unflushed, finals every context, closes 1000", async () => {
      const u = await gw.register();
      const s = await open(path(DEMO_ALPHA_VOICE_ID, "model_id=alpha-flash-v2-5", "multi-stream-input"), { "xi-api-key": u.api_key });
      s.send({ text: " ", context_id: "x" });
      s.send({ text: "Spoken because flushed. ", context_id: "x", flush: true });
      s.send({ text: "Never spoken, never flushed. ", context_id: "x" });
      s.send({ close_socket: true });
      assert.equal((await s.waitClose()).code, 1000);
      assert.ok(s.messages.some((m) => m.isFinal === true && m.contextId === "x"));
      const [rec] = await settledRecord(u.org_id);
      assert.equal(Number(rec.characters), codePoints("Spoken because flushed. "));
    });

    test("inactivity_timeout closes an idle socket with 1000", async () => {
      const u = await gw.register();
      const s = await open(path(DEMO_ALPHA_VOICE_ID, "model_id=alpha-flash-v2-5&inactivity_timeout=1"), { "xi-api-key": u.api_key });
      s.send({ text: " " });
      const close = await s.waitClose(10_000);
      assert.equal(close.code, 1000);
      assert.equal(s.messages.find((m) => typeof m.error === "string")?.error, "input_timeout_exceeded");
      const [rec] = await settledRecord(u.org_id);
      assert.deepEqual([rec.status, Number(rec.cost_micros)], ["failed", 0]);
      await exact(u.org_id);
    });

    test("refusals before the upgrade are plain HTTP answers in each path's error shape", async () => {
      const u = await gw.register();
      const noKey = await refused(wsUrl(gw.url, `/v1/audio/speech/${DEMO_ALPHA_VOICE_ID}/stream-input`), { authorization: "Bearer gw_not_a_key_0000000000" });
      assert.equal(noKey.status, 401);
      assert.equal((noKey.body as { error: { code: string } }).error.code, "auth_error");
      const v3 = await refused(path(DEMO_ALPHA_VOICE_ID, "model_id=alpha-v3"), { "xi-api-key": u.api_key });
      assert.equal(v3.status, 400);
      assert.equal((v3.body as { error: { code: string } }).error.code, "realtime_not_supported");
      const el = await refused(wsUrl(gw.url, `/elevenlabs/v1/text-to-speech/${DEMO_ALPHA_VOICE_ID}/stream-input?model_id=eleven_v3`), { "xi-api-key": u.api_key });
      assert.equal(el.status, 400);
      assert.equal((el.body as { detail: { status: string } }).detail.status, "realtime_not_supported");
      const mismatch = await refused(path(DEMO_BETA_VOICE_ID), { "xi-api-key": u.api_key });
      assert.equal(mismatch.status, 400);
      const badFormat = await refused(path(DEMO_ALPHA_VOICE_ID, "output_format=opus_48000"), { "xi-api-key": u.api_key });
      assert.equal(badFormat.status, 400);
      // A plain GET: 426.
      const plain = await gw.request("GET", `/v1/audio/speech/${DEMO_ALPHA_VOICE_ID}/stream-input`, { token: u.api_key });
      assert.equal(plain.status, 426);
      // A balance below one character's price: 402.
      const poor = await fundedOrg(0.0001);
      const refusal = await refused(path(), { "xi-api-key": poor.api_key });
      assert.equal(refusal.status, 402);
      assert.equal((refusal.body as { error: { code: string } }).error.code, "billing_error");
      await exact(poor.org_id);
      // The tier's audio pool: Tier 0 allows one alpha socket at a time.
      const t0 = await gw.register();
      const first = await open(path(), { "xi-api-key": t0.api_key });
      const second = await refused(path(), { "xi-api-key": t0.api_key });
      assert.equal(second.status, 429);
      first.ws.close();
      await first.waitClose();
    });

    test("browsers: the key in the query; first-message auth, and a bad key there closes with 1008", async () => {
      const u = await gw.register();
      const q = await open(path(DEMO_ALPHA_VOICE_ID, `model_id=alpha-flash-v2-5&authorization=${encodeURIComponent(`Bearer ${u.api_key}`)}`));
      q.send({ text: " " });
      q.send({ text: "Hello from a browser. ", flush: true });
      q.send({ text: "" });
      assert.equal((await q.waitClose()).code, 1000);
      assert.ok(q.audio().length > 0);
      const m = await open(path());
      m.send({ text: " ", xi_api_key: u.api_key });
      m.send({ text: "Hello with the key in the first message. ", flush: true });
      m.send({ text: "" });
      assert.equal((await m.waitClose()).code, 1000);
      assert.ok(m.audio().length > 0);
      const bad = await open(path());
      bad.send({ text: " ", xi_api_key: "gw_wrong_key_000000000000" });
      assert.equal((await bad.waitClose()).code, 1008);
      assert.equal(bad.messages.find((x) => typeof x.error === "string")?.error, "auth_error");
      const invalid = await open(path(), { "xi-api-key": u.api_key });
      invalid.send({ text: " ", voice_settings: { stability: 3 } });
      assert.equal((await invalid.waitClose()).code, 1008);
      assert.equal(invalid.messages.find((x) => typeof x.error === "string")?.error, "invalid_request");
      await exact(u.org_id);
    });

    test("a test-mode key: simulated audio, a priced record, no money moves", async () => {
      const u = await gw.register();
      const key = await gw.request("POST", "/v1/auth/keys", { token: u.session_token, body: { name: "test", mode: "test" } });
      const before = await exact(u.org_id);
      const s = await open(path(), { "xi-api-key": key.json.api_key as string });
      s.send({ text: " " });
      s.send({ text: "Test mode speaks for free. ", flush: true });
      s.send({ text: "" });
      assert.equal((await s.waitClose()).code, 1000);
      assert.ok(s.audio().length > 0);
      assert.equal(await exact(u.org_id), before);
      const [rec] = await settledRecord(u.org_id);
      assert.deepEqual([rec.mode, rec.status, Number(rec.cost_micros)], ["test", "succeeded", flashPrice(codePoints("Test mode speaks for free. "))]);
    });

    test("a beta voice with a beta model; the upstream failing (X-Svc-Simulate: fail) is provider_error, 1011, nothing charged", async () => {
      const u = await gw.register();
      const s = await open(path(DEMO_BETA_VOICE_ID, "model_id=beta-speech-turbo&output_format=mp3_44100_128"), { "xi-api-key": u.api_key });
      s.send({ text: " " });
      s.send({ text: "A beta voice speaks. ", flush: true });
      s.send({ text: "" });
      assert.equal((await s.waitClose()).code, 1000);
      assert.ok((await parseBuffer(s.audio(), { mimeType: "audio/mpeg" })).format.duration! > 0.5);
      const f = await open(path(), { "xi-api-key": u.api_key, "x-svc-simulate": "fail" });
      f.send({ text: " " });
      f.send({ text: "This fails upstream. ", flush: true });
      assert.equal((await f.waitClose()).code, 1011);
      assert.equal(f.messages.find((x) => typeof x.error === "string")?.error, "provider_error");
      const [rec] = await settledRecord(u.org_id);
      assert.deepEqual([rec.status, Number(rec.cost_micros)], ["failed", 0]);
      await exact(u.org_id);
    });

    test("the socket's request id: the 101's X-Svc-Request-Id and the final message's request_id; a plain GET learns the refusal", async () => {
      const u = await gw.register();
      const s = await open(path(), { "xi-api-key": u.api_key });
      const id = s.upgradeHeaders["x-svc-request-id"];
      assert.match(String(id), /^req_/);
      s.send({ text: " " });
      s.send({ text: "Which record is mine? ", flush: true });
      s.send({ text: "" });
      await s.waitClose();
      assert.equal(s.messages.find((m) => m.isFinal === true)?.request_id, id);
      const r = await gw.request("GET", `/v1/requests/${String(id)}`, { token: u.api_key });
      assert.equal(r.json.realtime, true);
      const v3 = await gw.request("GET", `/v1/audio/speech/${DEMO_ALPHA_VOICE_ID}/stream-input?model_id=alpha-v3`, { token: u.api_key });
      assert.equal(v3.status, 400);
      assert.equal(v3.json.error.code, "realtime_not_supported");
      const poor = await fundedOrg(0.0001);
      const p402 = await gw.request("GET", `/v1/audio/speech/${DEMO_ALPHA_VOICE_ID}/stream-input?model_id=alpha-flash-v2-5`, { token: poor.api_key });
      assert.equal(p402.status, 402);
      const ok = await gw.request("GET", `/v1/audio/speech/${DEMO_ALPHA_VOICE_ID}/stream-input?model_id=alpha-flash-v2-5`, { token: u.api_key });
      assert.equal(ok.status, 426);
    });

    test("flow control: a client writing far faster than speech waits (the gateway stops reading), then ends as usual", async () => {
      const u = await fundedOrg(0.05);
      const s = await open(path(DEMO_ALPHA_VOICE_ID, "model_id=alpha-flash-v2-5&output_format=pcm_16000"), { "xi-api-key": u.api_key });
      s.send({ text: " " });
      const message = JSON.stringify({ text: "flooding! ", flush: true });
      for (let i = 0; i < 200_000; i++) s.ws.send(message);
      await new Promise((r) => setTimeout(r, 300));
      assert.ok(s.ws.bufferedAmount > 0 || s.closed !== null, "the gateway stopped reading: the client's writes wait in its own buffer");
      const close = await s.waitClose(30_000);
      assert.equal(close.code, 1008);
      assert.equal(s.messages.find((m) => typeof m.error === "string")?.error, "insufficient_balance");
      const [rec] = await settledRecord(u.org_id);
      assert.equal(Number(rec.cost_micros), flashPrice(Number(rec.characters)));
      assert.equal(await exact(u.org_id), 50_000 - Number(rec.cost_micros));
    });

    test("a socket is one request of the rpm windows at open (D42): over the key's rpm, 429 before the upgrade", async () => {
      const u = await gw.register();
      const key = await gw.request("POST", "/v1/auth/keys", { token: u.session_token, body: { name: "slow", rpm: 1 } });
      const k = key.json.api_key as string;
      const first = await open(path(), { "xi-api-key": k });
      first.ws.close();
      await first.waitClose();
      const second = await refused(path(), { "xi-api-key": k });
      assert.equal(second.status, 429);
      assert.equal((second.body as { error: { code: string } }).error.code, "rate_limited");
    });

    test("Prometheus: open sockets and units metered", async () => {
      const u = await gw.register();
      const s = await open(path(), { "xi-api-key": u.api_key });
      const during = await registry.getSingleMetricAsString("gateway_realtime_sockets_open");
      assert.match(during, /gateway_realtime_sockets_open\{kind="speech"\} [1-9]/);
      s.send({ text: " " });
      s.send({ text: "Counted characters. ", flush: true });
      s.send({ text: "" });
      await s.waitClose();
      const metered = await registry.getSingleMetricAsString("gateway_realtime_metered_total");
      assert.match(metered, /gateway_realtime_metered_total\{kind="speech",unit="characters"\} [1-9]/);
    });

    test("GET /v1/models marks speech models realtime", async () => {
      const u = await gw.register();
      const r = await gw.request("GET", "/v1/models?capability=speech", { token: u.api_key });
      const byId = Object.fromEntries((r.json.data as { id: string; realtime?: boolean }[]).map((m) => [m.id, m.realtime]));
      assert.equal(byId["alpha-v3"], false);
      assert.equal(byId["alpha-flash-v2-5"], true);
      assert.equal(byId["beta-speech-turbo"], true);
    });
  });
}
