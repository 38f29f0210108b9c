/**
 * Request ids, the usage log and test-mode keys (D29, D32) end to end on both databases: every
 * authenticated answer carries `X-Svc-Request-Id`; after a mixed workload (speech, music, a failed call,
 * a streamed speech, an image job that succeeds and one that fails, chat) every usage record's cost equals
 * what the ledger charged under its request id, and the totals agree; records are the caller's only; days
 * follow the asked time zone; the CSV parses; a test-mode key is priced but moves no money.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";
import { freePort } from "../helpers/process.ts";

const ALPHA_VOICE = "pNx4Lq8TzR2vWk7HdM3s";
const SPEECH = { input: "Hello from the usage log.", voice_id: ALPHA_VOICE };
const REQ_ID = /^req_[A-Za-z0-9]{30}$/;

/** Micro-USD of a USD number from the API (at most 6 decimals). */
const micros = (usd: number) => Math.round(usd * 1_000_000);

/** Parses a CSV without quoted line breaks (the usage CSV has none). */
function parseCsv(text: string): string[][] {
  return text
    .split(/\r\n/)
    .filter((l) => l.length > 0)
    .map((line) => {
      const out: string[] = [];
      const re = /("([^"]|"")*"|[^,]*)(,|$)/g;
      for (let m = re.exec(line); m !== null && m.index < line.length; m = re.exec(line)) {
        const f = m[1];
        out.push(f.startsWith('"') ? f.slice(1, -1).replace(/""/g, '"') : f);
        if (m[3] === "") break;
      }
      return out;
    });
}

for (const backend of BACKENDS) {
  describe(`usage log and test-mode keys on ${backend.name}`, { skip: backend.skip }, () => {
    let gw: TestGateway;
    let user: { user_id: string; org_id: string; api_key: string; session_token: string };
    const requestIds: Record<string, string> = {};

    before(async () => {
      gw = await startGateway(backend.name);
      user = await gw.register();
      await gw.deposit(user.user_id, 20);
    });
    after(async () => {
      await gw?.close();
    });

    const db = () => gw.services.db.kysely;
    const recordOf = (id: string) => db().selectFrom("usage_records").selectAll().where("id", "=", id).executeTakeFirstOrThrow();

    test("every authenticated answer carries a request id, errors included", async () => {
      const ok = await gw.request("GET", "/v1/auth/me", { token: user.api_key });
      assert.equal(ok.status, 200);
      assert.match(ok.headers.get("x-svc-request-id") ?? "", REQ_ID);
      const again = await gw.request("GET", "/v1/auth/me", { token: user.api_key });
      assert.notEqual(again.headers.get("x-svc-request-id"), ok.headers.get("x-svc-request-id"), "one id per request");

      const bad = await gw.request("POST", "/v1/audio/speech", { token: user.api_key, body: { input: "", voice_id: ALPHA_VOICE } });
      assert.equal(bad.status, 400);
      assert.match(bad.headers.get("x-svc-request-id") ?? "", REQ_ID);
      const unauth = await gw.request("GET", "/v1/auth/me", { token: "gw_not_a_key_at_all_0000" });
      assert.equal(unauth.status, 401);
      assert.match(unauth.headers.get("x-svc-request-id") ?? "", REQ_ID);
      // A refused call placed no hold: no usage record under its id.
      assert.equal(await db().selectFrom("usage_records").select("id").where("id", "=", bad.headers.get("x-svc-request-id")!).executeTakeFirst(), undefined);
    });

    test("a mixed workload: one usage record per paid call, each costing what the ledger charged", async () => {
      const key = { token: user.api_key };
      const speech = await gw.request("POST", "/v1/audio/speech", { ...key, body: SPEECH });
      assert.equal(speech.status, 200);
      requestIds.speech = speech.headers.get("x-svc-request-id")!;

      const music = await gw.request("POST", "/v1/audio/music", { ...key, body: { model: "beta-music", prompt: "lofi piano", lyrics: "[Instrumental]" } });
      assert.equal(music.status, 200);
      requestIds.music = music.headers.get("x-svc-request-id")!;

      const failed = await gw.request("POST", "/v1/audio/speech", { ...key, body: SPEECH, headers: { "x-svc-simulate": "fail" } });
      assert.equal(failed.status, 502);
      requestIds.failed = failed.headers.get("x-svc-request-id")!;

      const streamed = await gw.request("POST", "/v1/audio/speech", {
        ...key,
        body: { model: "beta-speech-turbo", input: "A streamed sentence for the log.", voice_id: "beta_aria_1", stream: true },
      });
      assert.equal(streamed.status, 200);
      assert.ok(streamed.bytes.length > 0);
      requestIds.streamed = streamed.headers.get("x-svc-request-id")!;

      const image = await gw.request("POST", "/v1/images/generations", { ...key, body: { model: "imgA-v4", prompt: "a lighthouse at dawn", n: 2 } });
      assert.equal(image.status, 202);
      requestIds.image = image.headers.get("x-svc-request-id")!;
      const badImage = await gw.request("POST", "/v1/images/generations", { ...key, body: { model: "imgA-v4", prompt: "a storm" }, headers: { "x-svc-simulate": "fail" } });
      assert.equal(badImage.status, 202);
      requestIds.badImage = badImage.headers.get("x-svc-request-id")!;
      // While the job waits or runs its record is open; it ends with the job.
      assert.ok(["pending", "processing", "succeeded"].includes((await recordOf(requestIds.image)).status));

      const chat = await gw.request("POST", "/v1/chat/completions", { ...key, body: { model: "fast", messages: [{ role: "user", content: "Say hi." }] } });
      assert.equal(chat.status, 200);
      requestIds.chat = chat.headers.get("x-svc-request-id")!;

      assert.equal((await gw.waitForJob(user.api_key, image.json.id)).json.status, "succeeded");
      assert.equal((await gw.waitForJob(user.api_key, badImage.json.id)).json.status, "failed");

      const expected: Record<string, { kind: string; status: string; units: string[] }> = {
        speech: { kind: "speech", status: "succeeded", units: ["characters"] },
        music: { kind: "music", status: "succeeded", units: ["seconds"] },
        failed: { kind: "speech", status: "failed", units: ["characters"] },
        streamed: { kind: "speech", status: "succeeded", units: ["characters"] },
        image: { kind: "image", status: "succeeded", units: ["images"] },
        badImage: { kind: "image", status: "failed", units: ["images"] },
        chat: { kind: "chat", status: "succeeded", units: ["cached_tokens", "input_tokens", "output_tokens"] },
      };
      for (const [name, want] of Object.entries(expected)) {
        const id = requestIds[name];
        assert.match(id, REQ_ID, name);
        const res = await gw.request("GET", `/v1/requests/${id}`, { token: user.session_token });
        assert.equal(res.status, 200, name);
        const r = res.json;
        assert.equal(r.id, id);
        assert.equal(r.kind, want.kind, name);
        assert.equal(r.status, want.status, name);
        assert.equal(r.mode, "live");
        assert.deepEqual(Object.keys(r.units).sort(), want.units, name);
        assert.ok(r.latency_ms !== null && r.latency_ms >= 0, name);
        // The record's cost is exactly what its ledger entries net, and every entry names the request.
        assert.ok(r.ledger.length >= 2, `${name}: a hold and its settlement`);
        assert.equal(r.ledger[0].kind, "hold");
        for (const e of r.ledger) assert.equal(e.request_id, id);
        const net = r.ledger.reduce((n: number, e: { amount_usd: number }) => n + micros(e.amount_usd), 0);
        assert.equal(micros(r.cost_usd) + net, 0, `${name}: usage cost equals the ledger charge`);
        if (want.status === "failed") assert.equal(r.cost_usd, 0);
        else assert.ok(r.cost_usd > 0, name);
      }
      assert.equal((await gw.request("GET", `/v1/requests/${requestIds.speech}`, { token: user.api_key })).json.units.characters, SPEECH.input.length);
      assert.equal((await gw.request("GET", `/v1/requests/${requestIds.image}`, { token: user.api_key })).json.units.images, 2);
      const speechCost = micros(Number(speech.headers.get("x-svc-cost-usd")));
      assert.equal(micros((await gw.request("GET", `/v1/requests/${requestIds.speech}`, { token: user.api_key })).json.cost_usd), speechCost);
      const imageJob = await gw.request("GET", `/v1/requests/${requestIds.image}`, { token: user.api_key });
      assert.equal(imageJob.json.job_id, image.json.id);

      // Totals: the usage summary's cost is what the ledger spent (every entry but credits), to the micro-USD.
      const ledger = await gw.request("GET", "/v1/billing/ledger?limit=100", { token: user.api_key });
      const spent = ledger.json.data
        .filter((e: { kind: string }) => e.kind !== "signup_credit" && e.kind !== "deposit")
        .reduce((n: number, e: { amount_usd: number }) => n - micros(e.amount_usd), 0);
      for (const groupBy of ["day", "model", "key"]) {
        const usage = await gw.request("GET", `/v1/usage?group_by=${groupBy}`, { token: user.api_key });
        assert.equal(usage.status, 200);
        assert.equal(usage.json.group_by, groupBy);
        assert.equal(usage.json.total.requests, 7, groupBy);
        assert.equal(micros(usage.json.total.cost_usd), spent, `${groupBy}: usage total equals ledger total`);
        const sum = usage.json.data.reduce((n: number, g: { cost_usd: number }) => n + micros(g.cost_usd), 0);
        assert.equal(sum, spent);
      }
      const byKey = await gw.request("GET", "/v1/usage?group_by=key", { token: user.api_key });
      assert.equal(byKey.json.data.length, 1, "one key made every call");
      // The ledger listing names requests (and references) too.
      const hold = ledger.json.data.find((e: { kind: string; request_id: string | null }) => e.kind === "hold" && e.request_id === requestIds.music);
      assert.ok(hold, "the music hold carries its request id");
      assert.equal(hold.reference, "beta-music");
      // Invariant 1 still holds.
      assert.equal(await getBalance(db(), user.org_id), await ledgerSum(db(), user.org_id));
    });

    test("GET /v1/requests lists newest first, filters and pages", async () => {
      const all = await gw.request("GET", "/v1/requests?limit=100", { token: user.api_key });
      assert.equal(all.status, 200);
      assert.equal(all.json.data.length, 7);
      assert.equal(all.json.has_more, false);
      const times = all.json.data.map((r: { created_at: string }) => Date.parse(r.created_at));
      assert.deepEqual(times, [...times].sort((a, b) => b - a), "newest first");

      const seen: string[] = [];
      let cursor: string | null = null;
      for (;;) {
        const page: Awaited<ReturnType<TestGateway["request"]>> = await gw.request("GET", `/v1/requests?limit=3${cursor ? `&after=${cursor}` : ""}`, { token: user.api_key });
        seen.push(...page.json.data.map((r: { id: string }) => r.id));
        if (!page.json.has_more) break;
        cursor = page.json.data.at(-1).id;
      }
      assert.deepEqual(seen, all.json.data.map((r: { id: string }) => r.id), "pages follow each other without gaps or repeats");

      const failed = await gw.request("GET", "/v1/requests?status=failed", { token: user.api_key });
      assert.deepEqual(failed.json.data.map((r: { id: string }) => r.id).sort(), [requestIds.failed, requestIds.badImage].sort());
      const music = await gw.request("GET", "/v1/requests?model=beta-music", { token: user.api_key });
      assert.deepEqual(music.json.data.map((r: { id: string }) => r.id), [requestIds.music]);
      const keyId = all.json.data[0].key_id;
      assert.equal((await gw.request("GET", `/v1/requests?key_id=${keyId}`, { token: user.api_key })).json.data.length, 7);
      assert.equal((await gw.request("GET", "/v1/requests?key_id=key_nobody", { token: user.api_key })).json.data.length, 0);
      assert.equal((await gw.request("GET", "/v1/requests?to=2000-01-01", { token: user.api_key })).json.data.length, 0);
      assert.equal((await gw.request("GET", "/v1/requests?from=2000-01-01", { token: user.api_key })).json.data.length, 7);
      assert.equal((await gw.request("GET", "/v1/requests?status=nope", { token: user.api_key })).status, 400);
      assert.equal((await gw.request("GET", "/v1/requests?from=yesterday", { token: user.api_key })).status, 400);
    });

    test("another user's request id, or an unknown one, is 404 request_not_found", async () => {
      const other = await gw.register();
      for (const id of [requestIds.speech, "req_doesnotexist0000000000"]) {
        const res = await gw.request("GET", `/v1/requests/${id}`, { token: other.api_key });
        assert.equal(res.status, 404);
        assert.equal(res.json.error.code, "request_not_found");
        assert.match(res.headers.get("x-svc-request-id") ?? "", REQ_ID);
      }
      assert.equal((await gw.request("GET", "/v1/requests", { token: other.api_key })).json.data.length, 0);
    });

    test("days follow the asked time zone: a record near midnight lands on its local day", async () => {
      // 23:30 UTC on 15 January is 00:30 on the 16th in Berlin (UTC+1) and 18:30 on the 15th in New York.
      const at = Date.UTC(2025, 0, 15, 23, 30);
      await db().updateTable("usage_records").set({ created_at: at }).where("id", "=", requestIds.speech).execute();
      const day = async (tz: string) => {
        const res = await gw.request("GET", `/v1/usage?group_by=day&tz=${encodeURIComponent(tz)}&from=2025-01-14&to=2025-01-17`, { token: user.api_key });
        assert.equal(res.status, 200);
        return res.json.data.map((g: { group: string; requests: number }) => [g.group, g.requests]);
      };
      assert.deepEqual(await day("UTC"), [["2025-01-15", 1]]);
      assert.deepEqual(await day("Europe/Berlin"), [["2025-01-16", 1]]);
      assert.deepEqual(await day("America/New_York"), [["2025-01-15", 1]]);
      assert.deepEqual(await day("Asia/Kolkata"), [["2025-01-16", 1]]);
      // A date bound is a whole local day: the Berlin day of the 16th holds it, the UTC one does not.
      const only16 = (tz: string) => gw.request("GET", `/v1/usage?tz=${encodeURIComponent(tz)}&from=2025-01-16&to=2025-01-16`, { token: user.api_key });
      assert.equal((await only16("Europe/Berlin")).json.total.requests, 1);
      assert.equal((await only16("UTC")).json.total.requests, 0);
      // Outside the default window (the last 30 days): not counted without from/to.
      assert.equal((await gw.request("GET", "/v1/usage", { token: user.api_key })).json.total.requests, 6);

      const badTz = await gw.request("GET", "/v1/usage?tz=Mars/Olympus", { token: user.api_key });
      assert.equal(badTz.status, 400);
      assert.equal(badTz.json.error.param, "tz");
      assert.equal((await gw.request("GET", "/v1/usage?from=2025-02-01&to=2025-01-01", { token: user.api_key })).status, 400);
      assert.equal((await gw.request("GET", "/v1/usage?group_by=hour", { token: user.api_key })).status, 400);
    });

    test("the CSV has a header row and one row per group, matching the JSON", async () => {
      const res = await gw.request("GET", "/v1/usage.csv?group_by=model&from=2000-01-01", { token: user.api_key });
      assert.equal(res.status, 200);
      assert.match(res.headers.get("content-type") ?? "", /^text\/csv/);
      const rows = parseCsv(Buffer.from(res.bytes).toString("utf8"));
      assert.deepEqual(rows[0], ["group", "requests", "cost_usd", "characters", "seconds", "images", "input_tokens", "output_tokens", "cached_tokens", "minutes"]);
      const json = await gw.request("GET", "/v1/usage?group_by=model&from=2000-01-01", { token: user.api_key });
      assert.equal(rows.length - 1, json.json.data.length);
      for (const [i, g] of json.json.data.entries()) {
        const row = rows[i + 1];
        assert.equal(row.length, 10);
        assert.equal(row[0], g.group);
        assert.equal(Number(row[1]), g.requests);
        assert.equal(Number(row[2]), g.cost_usd);
        assert.equal(Number(row[3]), g.units.characters ?? 0);
        assert.equal(Number(row[5]), g.units.images ?? 0);
      }
    });

    test("a test-mode key: priced, served, but no ledger entry and the balance unchanged and not gating", async () => {
      const poor = await gw.register();
      const created = await gw.request("POST", "/v1/auth/keys", { token: poor.session_token, body: { name: "ci", mode: "test" } });
      assert.equal(created.status, 201);
      assert.equal(created.json.mode, "test");
      assert.match(created.json.api_key, /^gw_test_/);
      const keys = await gw.request("GET", "/v1/auth/keys", { token: poor.api_key });
      assert.deepEqual(keys.json.data.map((k: { mode: string }) => k.mode).sort(), ["live", "test"]);
      assert.equal((await gw.request("POST", "/v1/auth/keys", { token: poor.api_key, body: { mode: "sandbox" } })).status, 400);
      const testKey = created.json.api_key as string;

      const balance = await getBalance(db(), poor.org_id);
      const entries = async () => (await db().selectFrom("ledger_entries").select("id").where("account_id", "=", poor.org_id).execute()).length;
      const before = await entries();

      const speech = await gw.request("POST", "/v1/audio/speech", { token: testKey, body: SPEECH });
      assert.equal(speech.status, 200);
      assert.equal(speech.headers.get("x-svc-test-mode"), "true");
      assert.ok(Number(speech.headers.get("x-svc-cost-usd")) > 0, "priced as usual");
      assert.equal(micros(Number(speech.headers.get("x-svc-balance-usd"))), balance, "the live balance, unchanged");
      // Voice design costs 4.20, far above this account's 0.50: a live key is refused, the test key is not.
      const design = { description: "a warm narrator" };
      assert.equal((await gw.request("POST", "/v1/audio/voice-design", { token: poor.api_key, body: design })).status, 402);
      const designed = await gw.request("POST", "/v1/audio/voice-design", { token: testKey, body: design });
      assert.equal(designed.status, 200);
      assert.equal(designed.headers.get("x-svc-test-mode"), "true");
      const failed = await gw.request("POST", "/v1/audio/speech", { token: testKey, body: SPEECH, headers: { "x-svc-simulate": "fail" } });
      assert.equal(failed.status, 502, "X-Svc-Simulate is honoured");
      assert.equal(failed.headers.get("x-svc-test-mode"), "true");
      const image = await gw.request("POST", "/v1/images/generations", { token: testKey, body: { model: "imgA-v4", prompt: "a test" } });
      assert.equal(image.status, 202);
      assert.equal((await gw.waitForJob(testKey, image.json.id)).json.status, "succeeded");
      const chat = await gw.request("POST", "/v1/chat/completions", { token: testKey, body: { model: "fast", messages: [{ role: "user", content: "hi" }] } });
      assert.equal(chat.status, 200);

      assert.equal(await getBalance(db(), poor.org_id), balance, "balance unchanged");
      assert.equal(await entries(), before, "no ledger entry");
      const me = await gw.request("GET", "/v1/auth/me", { token: testKey });
      assert.equal(me.headers.get("x-svc-test-mode"), "true");
      assert.equal(micros(me.json.balance_usd), balance);

      // Its records show only with mode=test, with their prices and statuses.
      // The live key's refused design placed no hold: no live record at all.
      assert.equal((await gw.request("GET", "/v1/requests", { token: poor.api_key })).json.data.length, 0);
      const live = await gw.request("GET", "/v1/usage", { token: poor.api_key });
      assert.equal(live.json.total.requests, 0);
      const listed = await gw.request("GET", "/v1/requests?mode=test&limit=100", { token: poor.api_key });
      assert.equal(listed.json.data.length, 5);
      for (const r of listed.json.data) assert.equal(r.mode, "test");
      const bySpeech = listed.json.data.find((r: { id: string }) => r.id === speech.headers.get("x-svc-request-id"));
      assert.equal(micros(bySpeech.cost_usd), micros(Number(speech.headers.get("x-svc-cost-usd"))));
      const one = await gw.request("GET", `/v1/requests/${bySpeech.id}`, { token: poor.api_key });
      assert.deepEqual(one.json.ledger, [], "no ledger entries");
      const usage = await gw.request("GET", "/v1/usage?mode=test&group_by=model", { token: poor.api_key });
      assert.equal(usage.json.total.requests, 5);
      assert.ok(usage.json.total.cost_usd >= 4.2);
      const statuses = listed.json.data.map((r: { status: string }) => r.status).sort();
      assert.deepEqual(statuses, ["failed", "succeeded", "succeeded", "succeeded", "succeeded"]);
    });
  });
}

describe("a test-mode key is served by the simulator even where UPSTREAMS configures real sources", () => {
  let gw: TestGateway;
  before(async () => {
    // Sources on a closed loopback port: every live alpha call fails over to nothing, and live txtB chat
    // falls back to an equivalent model of another family (layer 2).
    const dead = await freePort();
    const upstreams = [
      { name: "el-dead", protocol: "elevenlabs", base_url: `http://127.0.0.1:${dead}`, api_key: "env:USAGE_TEST_EL_KEY", families: ["alpha"] },
      { name: "txt-dead", protocol: "openai", base_url: `http://127.0.0.1:${dead}/v1`, api_key: "env:USAGE_TEST_EL_KEY", families: ["txtB"] },
    ];
    gw = await startGateway("sqlite", { USAGE_TEST_EL_KEY: "sk_test_usage", UPSTREAMS: JSON.stringify(upstreams) });
  });
  after(async () => {
    await gw?.close();
  });

  test("live speech and chat reach the (dead) real sources; test-mode calls are the simulator's", async () => {
    const u = await gw.register();
    const testKey = (await gw.request("POST", "/v1/auth/keys", { token: u.api_key, body: { mode: "test" } })).json.api_key as string;
    const live = await gw.request("POST", "/v1/audio/speech", { token: u.api_key, body: SPEECH });
    assert.equal(live.status, 502);
    const sim = await gw.request("POST", "/v1/audio/speech", { token: testKey, body: SPEECH });
    assert.equal(sim.status, 200);
    assert.equal(sim.headers.get("content-type"), "audio/mpeg");
    assert.ok(sim.bytes.length > 1000);
    const sfx = await gw.request("POST", "/v1/audio/sfx", { token: testKey, body: { prompt: "a door creaks" } });
    assert.equal(sfx.status, 200);
    const chat = { model: "txtB-flash", messages: [{ role: "user", content: "hi" }] };
    const liveChat = await gw.request("POST", "/v1/chat/completions", { token: u.api_key, body: chat });
    assert.equal(liveChat.status, 200);
    assert.ok(Number(liveChat.headers.get("x-svc-fallback-layer")) >= 2, "live chat left its dead source for an equivalent model");
    const testChat = await gw.request("POST", "/v1/chat/completions", { token: testKey, body: chat });
    assert.equal(testChat.status, 200);
    assert.equal(testChat.headers.get("x-svc-fallback"), null, "test-mode chat is the simulator's, on the model asked for");
    assert.equal(testChat.json.model, "txtB-flash");
    const records = await gw.request("GET", "/v1/requests?mode=test", { token: u.api_key });
    assert.deepEqual(records.json.data.map((r: { kind: string; status: string }) => `${r.kind}:${r.status}`).sort(), ["chat:succeeded", "sfx:succeeded", "speech:succeeded"]);
    const liveRecords = await gw.request("GET", "/v1/requests", { token: u.api_key });
    assert.deepEqual(liveRecords.json.data.map((r: { kind: string; status: string; fallback_layer: number }) => [r.kind, r.status, r.fallback_layer >= 2]), [
      ["chat", "succeeded", true],
      ["speech", "failed", false],
    ]);
  });
});
