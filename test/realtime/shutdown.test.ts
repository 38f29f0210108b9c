/**
 * A graceful shutdown with realtime sockets open (D42, D43): the gateway settles every socket's hold (the
 * chunks in flight finish and are charged) before it closes each socket with 1001, and only then closes the
 * database: no hold is left open, every record carries close code 1001, the balance equals the ledger sum.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { DEMO_ALPHA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { startGateway } from "../helpers/gateway.ts";
import { open, wsUrl } from "../helpers/realtime.ts";

for (const backend of BACKENDS) {
  test(`shutdown settles open sockets, then closes them with 1001 (${backend.name})`, { skip: backend.skip }, async () => {
    const gw = await startGateway(backend.name, { SIM_LATENCY_SCALE: "0.5" });
    try {
      const u = await gw.register();
      await gw.request("PUT", `/v1/admin/orgs/${u.org_id}/limits`, { token: "test-admin-token-0123456789", body: { audio_concurrent_per_provider: { host_1: 5, host_2: 5, alpha: 5, beta: 5, host_3: 5 } } });
      const speech = await open(wsUrl(gw.url, `/v1/audio/speech/${DEMO_ALPHA_VOICE_ID}/stream-input?model_id=alpha-flash-v2-5&output_format=pcm_16000`), { "xi-api-key": u.api_key });
      speech.send({ text: " " });
      speech.send({ text: "A sentence being spoken while the gateway shuts down, long enough to still be going. ", flush: true });
      await speech.waitFor((m) => typeof m.audio === "string");
      const stt = await open(wsUrl(gw.url, "/v1/audio/transcriptions/realtime"), { "xi-api-key": u.api_key });
      await stt.waitFor((m) => m.message_type === "session_started");
      stt.send({ message_type: "input_audio_chunk", audio_base_64: Buffer.alloc(32000 * 2).toString("base64"), commit: false, sample_rate: 16000 });
      await new Promise((r) => setTimeout(r, 100));
      await gw.app.close();
      const [a, b] = await Promise.all([speech.waitClose(), stt.waitClose()]);
      assert.deepEqual([a.code, b.code], [1001, 1001]);
      assert.ok(!speech.messages.some((m) => typeof m.error === "string"), "no error message: a shutdown is not the client's fault");
      const db = gw.services.db.kysely;
      const open_ = await db.selectFrom("holds").select("id").where("status", "=", "open").execute();
      assert.equal(open_.length, 0, "every hold settled before the database closes");
      const recs = await db.selectFrom("usage_records").selectAll().where("account_id", "=", u.org_id).where("realtime", "=", 1).execute();
      assert.equal(recs.length, 2);
      for (const r of recs) assert.equal(Number(r.close_code), 1001);
      const speechRec = recs.find((r) => r.kind === "speech")!;
      assert.ok(Number(speechRec.cost_micros) > 0, "the chunk in flight finished and was charged");
      assert.equal((await getBalance(db, u.org_id))!, await ledgerSum(db, u.org_id));
    } finally {
      await gw.close();
    }
  });
}

test("the session time limit (REALTIME_MAX_SESSION_S) closes a busy socket with 1000 after settling it", async () => {
  const gw = await startGateway("sqlite", { REALTIME_MAX_SESSION_S: "1" });
  try {
    const u = await gw.register();
    const s = await open(wsUrl(gw.url, `/v1/audio/speech/${DEMO_ALPHA_VOICE_ID}/stream-input?model_id=alpha-flash-v2-5&output_format=pcm_16000`), { "xi-api-key": u.api_key });
    s.send({ text: " " });
    const talk = setInterval(() => s.send({ text: "Still talking. ", flush: true }), 100);
    const close = await s.waitClose(10_000);
    clearInterval(talk);
    assert.equal(close.code, 1000);
    assert.equal(s.messages.find((m) => typeof m.error === "string")?.error, "session_time_limit_exceeded");
    const db = gw.services.db.kysely;
    const [rec] = await db.selectFrom("usage_records").selectAll().where("account_id", "=", u.org_id).where("realtime", "=", 1).execute();
    assert.equal(rec.status, "succeeded");
    assert.equal(Number(rec.close_code), 1000);
    assert.equal(Number(rec.cost_micros), Number(rec.characters) * 200);
    assert.equal((await getBalance(db, u.org_id))!, await ledgerSum(db, u.org_id));
  } finally {
    await gw.close();
  }
});
