/**
 * The `Idempotency-Key` header on the synchronous paid calls (D37, http/idempotent-calls.ts), on a real gateway
 * on loopback with both databases: a retry with the same key and request makes one hold, one charge and one
 * usage record and gets the first answer byte for byte (`Idempotent-Replayed: true`): speech as bytes and as a
 * streamed beta answer, music, chat completions (JSON and server-sent events), voice cloning (multipart), the
 * ElevenLabs SDK and the `openai` SDK with the header in their request options. Concurrent duplicates: one runs,
 * the other is 409 `idempotency_in_progress`. Another request under the key: 409 `idempotency_conflict`. A
 * failed first call frees the key. Expired answers are swept; a lapsed lease is taken over. The balance equals
 * the ledger's sum after every step.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ElevenLabsClient, ElevenLabsError } from "@elevenlabs/elevenlabs-js";
import OpenAI from "openai";
import { IdempotentCalls, sweepIdempotentCalls } from "../../src/billing/idempotent-calls.ts";
import type { AppError } from "../../src/errors.ts";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { DEMO_ALPHA_VOICE_ID, DEMO_BETA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";
import { makeWav } from "../helpers/audio-fixtures.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway, type TestResponse } from "../helpers/gateway.ts";

/** What an account has been through: balance (equal to its ledger sum), holds, charges, usage records. */
interface Money {
  balance: number;
  holds: number;
  charges: number;
  usage: number;
}

for (const backend of BACKENDS) {
  describe(`Idempotency-Key on synchronous paid calls (D37), ${backend.name}`, { skip: backend.skip }, () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startGateway(backend.name);
    });
    after(async () => {
      await gw?.close();
    });

    /** A fresh account with `usd` deposited and a high request limit. */
    async function account(usd = 20): Promise<{ user_id: string; org_id: string; api_key: string; session_token: string }> {
      const u = await gw.register();
      await gw.deposit(u.user_id, usd);
      assert.equal((await gw.request("PUT", `/v1/admin/users/${u.user_id}/limits`, { token: ADMIN_TOKEN, body: { rpm: 100_000 } })).status, 200);
      return u;
    }

    async function money(accountId: string): Promise<Money> {
      const db = gw.services.db.kysely;
      const balance = (await getBalance(db, accountId)) ?? -1;
      assert.equal(await ledgerSum(db, accountId), balance, "the balance is the ledger's sum");
      const count = async (table: "holds" | "usage_records") => (await db.selectFrom(table).select("id").where("account_id", "=", accountId).execute()).length;
      const charges = (await db.selectFrom("ledger_entries").select("id").where("account_id", "=", accountId).where("kind", "=", "charge").execute()).length;
      return { balance, holds: await count("holds"), charges, usage: await count("usage_records") };
    }

    /** `first` and `again` carry the same answer, `again` marked as replayed. */
    function assertReplay(first: TestResponse, again: TestResponse): void {
      assert.equal(again.status, first.status);
      assert.equal(again.headers.get("idempotent-replayed"), "true");
      assert.equal(first.headers.get("idempotent-replayed"), null);
      assert.equal(again.headers.get("content-type"), first.headers.get("content-type"));
      assert.equal(again.headers.get("x-svc-cost-usd"), first.headers.get("x-svc-cost-usd"));
      assert.equal(again.headers.get("x-svc-request-id"), first.headers.get("x-svc-request-id"), "the replay names the charged request");
      assert.ok(Buffer.from(again.bytes).equals(Buffer.from(first.bytes)), "identical bytes");
    }

    /** One hold, one charge, one usage record since `before`, costing what the first answer said. */
    async function assertChargedOnce(accountId: string, before: Money, first: TestResponse): Promise<void> {
      const now = await money(accountId);
      assert.deepEqual({ holds: now.holds - before.holds, charges: now.charges - before.charges, usage: now.usage - before.usage }, { holds: 1, charges: 1, usage: 1 });
      const cost = Math.round(Number(first.headers.get("x-svc-cost-usd")) * 1_000_000);
      assert.ok(cost > 0);
      assert.equal(before.balance - now.balance, cost);
    }

    test("speech (bytes): a retry with the same key replays the answer, charged once", async () => {
      const u = await account();
      const m0 = await money(u.org_id);
      const body = { input: "Say it once, even when asked twice.", voice_id: DEMO_ALPHA_VOICE_ID };
      const headers = { "Idempotency-Key": "speech-1" };
      const first = await gw.request("POST", "/v1/audio/speech", { token: u.api_key, body, headers });
      assert.equal(first.status, 200);
      assert.equal(first.headers.get("content-type"), "audio/mpeg");
      const again = await gw.request("POST", "/v1/audio/speech", { token: u.api_key, body, headers });
      assertReplay(first, again);
      assert.equal(again.headers.get("content-length"), String(first.bytes.length));
      await assertChargedOnce(u.org_id, m0, first);
      // The same body in another key order is the same request.
      const reordered = await gw.request("POST", "/v1/audio/speech", { token: u.api_key, body: { voice_id: body.voice_id, input: body.input }, headers });
      assertReplay(first, reordered);
      // Without the header every call is its own.
      const plain = await gw.request("POST", "/v1/audio/speech", { token: u.api_key, body });
      assert.equal(plain.status, 200);
      assert.equal(plain.headers.get("idempotent-replayed"), null);
      assert.equal((await money(u.org_id)).charges - m0.charges, 2);
    });

    test("speech streamed (beta, chunked): the stream is stored as it goes and replayed whole", async () => {
      const u = await account();
      const m0 = await money(u.org_id);
      const body = { input: "Streaming speech arrives progressively. ".repeat(5), voice_id: DEMO_BETA_VOICE_ID, model: "beta-speech-hd", stream: true };
      const send = async (): Promise<TestResponse> => {
        const res = await fetch(`${gw.url}/v1/audio/speech`, {
          method: "POST",
          headers: { authorization: `Bearer ${u.api_key}`, "content-type": "application/json", "idempotency-key": "stream-1" },
          body: JSON.stringify(body),
        });
        let chunks = 0;
        const parts: Uint8Array[] = [];
        for await (const chunk of res.body!) {
          chunks++;
          parts.push(chunk);
        }
        if (res.headers.get("idempotent-replayed") === null) assert.ok(chunks > 1, `the first answer streams (${chunks} chunks)`);
        return { status: res.status, headers: res.headers, json: null, bytes: Buffer.concat(parts) };
      };
      const first = await send();
      assert.equal(first.status, 200);
      assert.equal(first.headers.get("transfer-encoding"), "chunked");
      assert.ok(first.bytes.length > 10_000);
      const again = await send();
      assertReplay(first, again);
      await assertChargedOnce(u.org_id, m0, first);
    });

    test("music: replayed, charged once", async () => {
      const u = await account();
      const m0 = await money(u.org_id);
      const body = { prompt: "calm piano", music_length_ms: 3000 };
      const headers = { "Idempotency-Key": "music-1" };
      const first = await gw.request("POST", "/v1/audio/music", { token: u.api_key, body, headers });
      assert.equal(first.status, 200);
      const again = await gw.request("POST", "/v1/audio/music", { token: u.api_key, body, headers });
      assertReplay(first, again);
      await assertChargedOnce(u.org_id, m0, first);
    });

    test("chat completions, JSON and server-sent events: replayed, charged once each", async () => {
      const u = await account();
      const m0 = await money(u.org_id);
      const body = { model: "txtA-small", messages: [{ role: "user", content: "Count to three." }] };
      const first = await gw.request("POST", "/v1/chat/completions", { token: u.api_key, body, headers: { "Idempotency-Key": "chat-1" } });
      assert.equal(first.status, 200, JSON.stringify(first.json));
      const again = await gw.request("POST", "/v1/chat/completions", { token: u.api_key, body, headers: { "Idempotency-Key": "chat-1" } });
      assertReplay(first, again);
      assert.equal(again.json.id, first.json.id, "the same completion, not a new one");
      await assertChargedOnce(u.org_id, m0, first);

      // A streamed answer is written by hand (a hijacked reply): recorded all the same.
      const m1 = await money(u.org_id);
      const streamed = { ...body, stream: true, stream_options: { include_usage: true } };
      const s1 = await gw.request("POST", "/v1/chat/completions", { token: u.api_key, body: streamed, headers: { "Idempotency-Key": "chat-2" } });
      assert.equal(s1.status, 200);
      assert.match(s1.headers.get("content-type") ?? "", /text\/event-stream/);
      assert.match(Buffer.from(s1.bytes).toString(), /data: \[DONE\]/);
      const s2 = await gw.request("POST", "/v1/chat/completions", { token: u.api_key, body: streamed, headers: { "Idempotency-Key": "chat-2" } });
      assert.equal(s2.headers.get("idempotent-replayed"), "true");
      assert.ok(Buffer.from(s2.bytes).equals(Buffer.from(s1.bytes)), "identical events");
      const m2 = await money(u.org_id);
      assert.deepEqual({ holds: m2.holds - m1.holds, charges: m2.charges - m1.charges, usage: m2.usage - m1.usage }, { holds: 1, charges: 1, usage: 1 });
    });

    test("concurrent duplicates: one runs, the others are 409 idempotency_in_progress; one charge", async () => {
      const u = await account();
      const m0 = await money(u.org_id);
      const body = { input: "Racing requests.", voice_id: DEMO_ALPHA_VOICE_ID };
      // `slow` keeps the first call running for a second: its duplicates arrive while it runs.
      const headers = { "Idempotency-Key": "race-1", "X-Svc-Simulate": "slow" };
      const answers = await Promise.all(Array.from({ length: 4 }, () => gw.request("POST", "/v1/audio/speech", { token: u.api_key, body, headers })));
      const ok = answers.filter((a) => a.status === 200);
      const busy = answers.filter((a) => a.status === 409);
      assert.equal(ok.length, 1, answers.map((a) => a.status).join(","));
      assert.equal(busy.length, 3);
      for (const b of busy) {
        assert.equal(b.json.error.code, "idempotency_in_progress");
        assert.equal(b.json.error.type, "invalid_request_error");
        assert.equal(b.headers.get("retry-after"), "1");
        assert.equal(b.headers.get("x-should-retry"), "true");
      }
      await assertChargedOnce(u.org_id, m0, ok[0]);
      const later = await gw.request("POST", "/v1/audio/speech", { token: u.api_key, body, headers });
      assertReplay(ok[0], later);
      await assertChargedOnce(u.org_id, m0, ok[0]);
    });

    test("a client that hangs up mid-call keeps its key until the call ended; the retry then runs once", async () => {
      const u = await account();
      const m0 = await money(u.org_id);
      const body = { input: "Hanging up early.", voice_id: DEMO_ALPHA_VOICE_ID };
      const controller = new AbortController();
      const gone = fetch(`${gw.url}/v1/audio/speech`, {
        method: "POST",
        headers: { authorization: `Bearer ${u.api_key}`, "content-type": "application/json", "idempotency-key": "gone-1", "x-svc-simulate": "slow" },
        body: JSON.stringify(body),
        signal: controller.signal,
      }).catch(() => null);
      await new Promise((r) => setTimeout(r, 300));
      controller.abort();
      assert.equal(await gone, null);
      let retry: TestResponse | null = null;
      for (let i = 0; i < 40; i++) {
        retry = await gw.request("POST", "/v1/audio/speech", { token: u.api_key, body, headers: { "Idempotency-Key": "gone-1" } });
        if (retry.status !== 409) break;
        assert.equal(retry.json.error.code, "idempotency_in_progress");
        await new Promise((r) => setTimeout(r, 250));
      }
      assert.equal(retry?.status, 200);
      const m1 = await money(u.org_id);
      assert.equal(m1.charges - m0.charges, 1, "the abandoned call was not charged, its retry once");
      assert.equal(m0.balance - m1.balance, Math.round(Number(retry?.headers.get("x-svc-cost-usd")) * 1_000_000));
    });

    test("the same key with another request is 409 idempotency_conflict, nothing charged", async () => {
      const u = await account();
      const headers = { "Idempotency-Key": "conflict-1" };
      const first = await gw.request("POST", "/v1/audio/speech", { token: u.api_key, body: { input: "One thing.", voice_id: DEMO_ALPHA_VOICE_ID }, headers });
      assert.equal(first.status, 200);
      const m1 = await money(u.org_id);
      const other = await gw.request("POST", "/v1/audio/speech", { token: u.api_key, body: { input: "Another thing.", voice_id: DEMO_ALPHA_VOICE_ID }, headers });
      assert.equal(other.status, 409);
      assert.equal(other.json.error.code, "idempotency_conflict");
      assert.equal(other.json.error.param, "Idempotency-Key");
      assert.equal(other.headers.get("x-should-retry"), "false");
      // Another route under the same key is another request too.
      const music = await gw.request("POST", "/v1/audio/music", { token: u.api_key, body: { prompt: "x", music_length_ms: 1000 }, headers });
      assert.equal(music.status, 409);
      assert.equal(music.json.error.code, "idempotency_conflict");
      assert.deepEqual(await money(u.org_id), m1);
      // Keys are per API key: another key of the account uses the same key freely.
      const second = await gw.request("POST", "/v1/auth/keys", { token: u.session_token, body: { name: "second" } });
      assert.equal(second.status, 201, JSON.stringify(second.json));
      const elsewhere = await gw.request("POST", "/v1/audio/speech", { token: second.json.api_key, body: { input: "Another thing.", voice_id: DEMO_ALPHA_VOICE_ID }, headers });
      assert.equal(elsewhere.status, 200);
      assert.equal(elsewhere.headers.get("idempotent-replayed"), null);
    });

    test("a failed first call frees the key: the retry runs afresh and is charged once", async () => {
      const u = await account();
      const m0 = await money(u.org_id);
      const body = { input: "Try, fail, try again.", voice_id: DEMO_ALPHA_VOICE_ID };
      const failed = await gw.request("POST", "/v1/audio/speech", { token: u.api_key, body, headers: { "Idempotency-Key": "fail-1", "X-Svc-Simulate": "fail" } });
      assert.equal(failed.status, 502, JSON.stringify(failed.json));
      assert.equal(failed.json.error.code, "provider_error");
      const m1 = await money(u.org_id);
      assert.equal(m1.balance, m0.balance, "nothing charged");
      assert.equal(m1.charges, m0.charges);
      const retry = await gw.request("POST", "/v1/audio/speech", { token: u.api_key, body, headers: { "Idempotency-Key": "fail-1" } });
      assert.equal(retry.status, 200);
      assert.equal(retry.headers.get("idempotent-replayed"), null, "a new call, not a replay of the failure");
      const m2 = await money(u.org_id);
      assert.equal(m2.charges - m0.charges, 1);
      assert.equal(m0.balance - m2.balance, Math.round(Number(retry.headers.get("x-svc-cost-usd")) * 1_000_000));
      // A refused request (4xx) frees it too.
      const refused = await gw.request("POST", "/v1/audio/music", { token: u.api_key, body: { prompt: "x", music_length_ms: 999_999_999 }, headers: { "Idempotency-Key": "fail-2" } });
      assert.equal(refused.status, 400, JSON.stringify(refused.json));
      const fixed = await gw.request("POST", "/v1/audio/music", { token: u.api_key, body: { prompt: "x", music_length_ms: 1000 }, headers: { "Idempotency-Key": "fail-2" } });
      assert.equal(fixed.status, 200, "another body under a released key is a first request");
      const m3 = await money(u.org_id);
      assert.equal(m3.charges - m2.charges, 1);
    });

    test("voice cloning (multipart): the parts are the request; one voice, one charge", async () => {
      const u = await account();
      const m0 = await money(u.org_id);
      const wav = makeWav(12);
      const form = (name: string) => {
        const f = new FormData();
        f.append("name", name);
        f.append("file", new Blob([Buffer.from(wav)], { type: "audio/wav" }), "me.wav");
        return f;
      };
      const clone = async (name: string) => {
        const res = await fetch(`${gw.url}/v1/audio/voice-clone`, { method: "POST", headers: { authorization: `Bearer ${u.api_key}`, "idempotency-key": "clone-1" }, body: form(name) });
        const bytes = new Uint8Array(await res.arrayBuffer());
        return { status: res.status, headers: res.headers, json: JSON.parse(Buffer.from(bytes).toString()) as Record<string, unknown>, bytes };
      };
      const first = await clone("Me");
      assert.equal(first.status, 200, JSON.stringify(first.json));
      const again = await clone("Me");
      assertReplay(first, again);
      assert.equal(again.json.voice_id, first.json.voice_id);
      const other = await clone("Someone else");
      assert.equal(other.status, 409);
      assert.equal((other.json.error as { code: string }).code, "idempotency_conflict");
      await assertChargedOnce(u.org_id, m0, first);
      const voices = await gw.services.db.kysely.selectFrom("voices").select("id").where("account_id", "=", u.org_id).execute();
      assert.equal(voices.length, 1);
    });

    test("the ElevenLabs SDK with the header in its request options: one charge, identical bytes; 409 in ElevenLabs' shape", async () => {
      const u = await account();
      const el = new ElevenLabsClient({ baseUrl: `${gw.url}/elevenlabs`, apiKey: u.api_key, maxRetries: 0 });
      const m0 = await money(u.org_id);
      const convert = async (text: string) => {
        const { data, rawResponse } = await el.textToSpeech
          .convert(DEMO_ALPHA_VOICE_ID, { text }, { headers: { "Idempotency-Key": "el-1" } })
          .withRawResponse();
        const parts: Buffer[] = [];
        for await (const chunk of data as unknown as AsyncIterable<Uint8Array>) parts.push(Buffer.from(chunk));
        return { bytes: Buffer.concat(parts), headers: rawResponse.headers };
      };
      const first = await convert("Hello from the SDK.");
      const again = await convert("Hello from the SDK.");
      assert.ok(again.bytes.equals(first.bytes));
      assert.equal(again.headers.get("idempotent-replayed"), "true");
      assert.equal(again.headers.get("request-id"), first.headers.get("request-id"));
      assert.equal(again.headers.get("character-cost"), first.headers.get("character-cost"));
      const m1 = await money(u.org_id);
      assert.deepEqual({ holds: m1.holds - m0.holds, charges: m1.charges - m0.charges, usage: m1.usage - m0.usage }, { holds: 1, charges: 1, usage: 1 });
      assert.equal(m0.balance - m1.balance, Math.round(Number(first.headers.get("x-svc-cost-usd")) * 1_000_000));
      let caught: unknown = null;
      try {
        await convert("Something else.");
      } catch (err) {
        caught = err;
      }
      assert.ok(caught instanceof ElevenLabsError, String(caught));
      assert.equal(caught.statusCode, 409);
      assert.deepEqual((caught.body as { detail: { status: string } }).detail.status, "idempotency_conflict");
      assert.deepEqual(await money(u.org_id), m1);
    });

    test("the openai SDK's chat with the header in its request options: one charge, the same completion", async () => {
      const u = await account();
      const client = new OpenAI({ apiKey: u.api_key, baseURL: `${gw.url}/openai/v1`, maxRetries: 0 });
      const m0 = await money(u.org_id);
      const ask = () =>
        client.chat.completions
          .create({ model: "txtA-small", messages: [{ role: "user", content: "Name a colour." }] }, { headers: { "Idempotency-Key": "oa-1" } })
          .withResponse();
      const first = await ask();
      const again = await ask();
      assert.equal(again.response.headers.get("idempotent-replayed"), "true");
      assert.deepEqual(again.data, first.data);
      const m1 = await money(u.org_id);
      assert.deepEqual({ holds: m1.holds - m0.holds, charges: m1.charges - m0.charges, usage: m1.usage - m0.usage }, { holds: 1, charges: 1, usage: 1 });
    });

    test("a test-mode key works the same, moving no money", async () => {
      const u = await account();
      const key = await gw.request("POST", "/v1/auth/keys", { token: u.session_token, body: { name: "test", mode: "test" } });
      assert.equal(key.status, 201, JSON.stringify(key.json));
      const m0 = await money(u.org_id);
      const body = { input: "Test mode.", voice_id: DEMO_ALPHA_VOICE_ID };
      const headers = { "Idempotency-Key": "test-1" };
      const first = await gw.request("POST", "/v1/audio/speech", { token: key.json.api_key, body, headers });
      assert.equal(first.status, 200);
      assert.equal(first.headers.get("x-svc-test-mode"), "true");
      const again = await gw.request("POST", "/v1/audio/speech", { token: key.json.api_key, body, headers });
      assertReplay(first, again);
      assert.equal(again.headers.get("x-svc-test-mode"), "true");
      const m1 = await money(u.org_id);
      assert.equal(m1.balance, m0.balance);
      assert.equal(m1.usage - m0.usage, 1, "one usage record (test mode)");
    });

    test("stored answers expire (the sweep forgets them and their blobs); a lapsed lease is taken over", async () => {
      const u = await account();
      const body = { input: "Remember me for a day.", voice_id: DEMO_ALPHA_VOICE_ID };
      const headers = { "Idempotency-Key": "expire-1" };
      const first = await gw.request("POST", "/v1/audio/speech", { token: u.api_key, body, headers });
      assert.equal(first.status, 200);
      const db = gw.services.db.kysely;
      const row = await db.selectFrom("idempotent_calls").selectAll().where("idem_key", "=", "expire-1").executeTakeFirstOrThrow();
      assert.equal(row.state, "done");
      const expiresIn = Number(row.expires_at) - Date.now();
      assert.ok(expiresIn > 23.9 * 3600_000 && expiresIn <= 24 * 3600_000, `expires in ${expiresIn} ms`);
      assert.ok(row.blob_key !== null && (await gw.services.blobs.head(row.blob_key)) !== null);
      // A stored answer is its caller's alone: the public file route does not serve it.
      const leaked = await fetch(`${gw.url}/v1/files/${row.blob_key}`);
      assert.equal(leaked.status, 404);
      await leaked.arrayBuffer();
      assert.ok((await sweepIdempotentCalls(db, gw.services.blobs, Date.now() + 25 * 3600_000)) >= 1);
      assert.equal(await db.selectFrom("idempotent_calls").select("owner").where("idem_key", "=", "expire-1").executeTakeFirst(), undefined);
      assert.equal(await gw.services.blobs.head(row.blob_key), null);
      const m1 = await money(u.org_id);
      const afresh = await gw.request("POST", "/v1/audio/speech", { token: u.api_key, body, headers });
      assert.equal(afresh.headers.get("idempotent-replayed"), null);
      assert.equal((await money(u.org_id)).charges - m1.charges, 1);

      // A running row whose claimant stopped renewing its lease (its process died) does not block the key.
      const keyRow = await db.selectFrom("api_keys").select("id").where("account_id", "=", u.org_id).executeTakeFirstOrThrow();
      await db
        .insertInto("idempotent_calls")
        .values({ scope: keyRow.id, idem_key: "dead-1", account_id: u.org_id, request_hash: "x", state: "running", owner: "req_dead", status: null, headers_json: null, blob_key: null, created_at: Date.now() - 60_000, expires_at: Date.now() - 1 })
        .execute();
      const taken = await gw.request("POST", "/v1/audio/speech", { token: u.api_key, body, headers: { "Idempotency-Key": "dead-1" } });
      assert.equal(taken.status, 200);
      const again = await gw.request("POST", "/v1/audio/speech", { token: u.api_key, body, headers: { "Idempotency-Key": "dead-1" } });
      assertReplay(taken, again);
    });

    test("a running claim renews its lease; once it stops, the next request takes the key over", async () => {
      const calls = new IdempotentCalls(gw.services.db.kysely, gw.services.blobs, { leaseMs: 150 });
      const id = { scope: "key_lease_test", key: "lease-1", accountId: "acct_none", requestHash: "h", requestId: "req_lease_a" };
      const first = await calls.begin(id);
      assert.equal(first.kind, "run");
      await new Promise((r) => setTimeout(r, 600));
      // Four leases later the claim still holds the key: its renewals kept it.
      await assert.rejects(calls.begin({ ...id, requestId: "req_lease_b" }), (err: AppError) => err.code === "idempotency_in_progress");
      await assert.rejects(calls.begin({ ...id, requestHash: "other", requestId: "req_lease_c" }), (err: AppError) => err.code === "idempotency_conflict");
      // A claimant that stops renewing (its process died) loses the key after its lease.
      const row = await gw.services.db.kysely.selectFrom("idempotent_calls").select("expires_at").where("idem_key", "=", "lease-1").executeTakeFirstOrThrow();
      assert.ok(Number(row.expires_at) > Date.now());
      if (first.kind === "run") await first.claim.release();
      const again = await calls.begin({ ...id, requestId: "req_lease_d" });
      assert.equal(again.kind, "run");
      if (again.kind === "run") again.claim.abandoned(0);
      await new Promise((r) => setTimeout(r, 800));
      const after = await calls.begin({ ...id, requestHash: "other", requestId: "req_lease_e" });
      assert.equal(after.kind, "run", "an abandoned claim past its wait frees the key");
      if (after.kind === "run") await after.claim.release();
    });

    test("a bad header is 400 and holds nothing", async () => {
      const u = await account();
      const m0 = await money(u.org_id);
      for (const key of ["", "k".repeat(129)]) {
        const r = await gw.request("POST", "/v1/audio/speech", { token: u.api_key, body: { input: "x", voice_id: DEMO_ALPHA_VOICE_ID }, headers: { "Idempotency-Key": key } });
        assert.equal(r.status, 400, JSON.stringify(r.json));
        assert.match(r.json.error.message, /Idempotency-Key/);
      }
      assert.deepEqual(await money(u.org_id), m0);
    });
  });
}
