/**
 * A SIGKILL with realtime sockets open (D42, D43) on both databases: the gateway (a child process) serves
 * speech and transcription sockets that stream continuously and is killed while they run. The restarted
 * gateway's sweep settles every hold the kill left open from its persisted running count: no hold stays open,
 * the balance equals the ledger sum, every socket's usage record ends with exactly the cost of the
 * characters or seconds it names (what was persisted), and at most a heartbeat's worth of delivered audio
 * goes uncharged (a bound on metering, not on time).
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { after, describe, test } from "node:test";
import { sql } from "kysely";
import { checkInvariants } from "../../bench/invariants.ts";
import { ADMIN_TOKEN, benchUser } from "../../bench/lib.ts";
import { openDatabase } from "../../src/storage/db.ts";
import { DEMO_ALPHA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";
import { BACKENDS, createTempDatabase, type TempDatabase } from "../helpers/backends.ts";
import { type GatewayProcess, spawnGateway } from "../helpers/process.ts";
import { open, type TestSocket, wsUrl } from "../helpers/realtime.ts";

const SPEECH_SOCKETS = 6;
const TRANSCRIPTION_SOCKETS = 3;
/** How long the restarted gateway may take to settle every hold (a bound on the wait, not a performance claim). */
const SETTLE_TIMEOUT_MS = 45_000;

/** Open realtime holds on the database. */
async function openHolds(databaseUrl: string): Promise<number> {
  const db = openDatabase(databaseUrl, { poolSize: 1 });
  try {
    const r = await db.kysely.selectFrom("holds").select(sql<string>`count(*)`.as("n")).where("status", "=", "open").executeTakeFirstOrThrow();
    return Number(r.n);
  } finally {
    await db.close();
  }
}

for (const backend of BACKENDS) {
  describe(`SIGKILL with realtime sockets open on ${backend.name}`, { skip: backend.skip }, () => {
    let db: TempDatabase | null = null;
    let proc: GatewayProcess | null = null;
    let blobDir: string | null = null;
    after(async () => {
      await proc?.kill();
      await db?.drop();
      if (blobDir !== null) rmSync(blobDir, { recursive: true, force: true });
    });

    test("the sweep captures each socket's persisted count and releases the rest; invariants hold", async () => {
      db = await createTempDatabase(backend.name);
      blobDir = mkdtempSync(join(tmpdir(), "gw-rt-kill-"));
      const env = {
        DATABASE_URL: db.url,
        STORAGE_URL: `file:${blobDir}`,
        GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN,
        SIM_LATENCY_SCALE: "0.2",
        REALTIME_HEARTBEAT_MS: "300",
        REALTIME_SWEEP_AFTER_S: "2",
        REALTIME_HOLD_CHARS: "100",
      };
      proc = await spawnGateway("serve", env);
      const { apiKey } = await benchUser(proc.url);
      const sockets: TestSocket[] = [];
      const stop = { now: false };
      const feeders: Promise<void>[] = [];
      for (let i = 0; i < SPEECH_SOCKETS; i++) {
        const s = await open(wsUrl(proc.url, `/v1/audio/speech/${DEMO_ALPHA_VOICE_ID}/stream-input?model_id=alpha-flash-v2-5&output_format=pcm_16000`), { "xi-api-key": apiKey });
        s.send({ text: " ", generation_config: { chunk_length_schedule: [50] } });
        sockets.push(s);
        feeders.push(
          (async () => {
            for (let n = 0; !stop.now && s.closed === null; n++) {
              s.send({ text: `Socket ${i} keeps talking, sentence ${n}. ` });
              await sleep(30);
            }
          })(),
        );
      }
      for (let i = 0; i < TRANSCRIPTION_SOCKETS; i++) {
        const s = await open(wsUrl(proc.url, "/v1/audio/transcriptions/realtime?audio_format=pcm_16000"), { "xi-api-key": apiKey });
        await s.waitFor((m) => m.message_type === "session_started");
        sockets.push(s);
        feeders.push(
          (async () => {
            const second = Buffer.alloc(32000, 3);
            while (!stop.now && s.closed === null) {
              s.send({ message_type: "input_audio_chunk", audio_base_64: second.toString("base64"), commit: false, sample_rate: 16000 });
              await sleep(100);
            }
          })(),
        );
      }
      // Let every socket be charged a while (several heartbeats), then kill the gateway mid-stream.
      await sleep(2500);
      assert.ok(sockets.every((s) => s.closed === null), "every socket still open before the kill");
      await proc.kill();
      stop.now = true;
      await Promise.all(feeders);
      assert.ok((await openHolds(db.url)) >= SPEECH_SOCKETS + TRANSCRIPTION_SOCKETS, "the kill left the sockets' holds open");

      proc = await spawnGateway("serve", env);
      const deadline = Date.now() + SETTLE_TIMEOUT_MS;
      let left = await openHolds(db.url);
      while (left > 0 && Date.now() < deadline) {
        await sleep(250);
        left = await openHolds(db.url);
      }
      assert.equal(left, 0, `every hold settled within ${SETTLE_TIMEOUT_MS} ms`);
      await proc.stop();

      const report = await checkInvariants(db.url);
      assert.deepEqual(report.problems, []);
      const check = openDatabase(db.url, { poolSize: 1 });
      try {
        const rows = await check.kysely.selectFrom("usage_records").selectAll().where("realtime", "=", 1).execute();
        assert.equal(rows.length, SPEECH_SOCKETS + TRANSCRIPTION_SOCKETS);
        for (const r of rows) {
          assert.equal(r.status, "succeeded", `${r.kind} ${r.id} was charged what it persisted`);
          assert.equal(r.close_code, null, "settled by the sweep: no close code");
          const expected = r.kind === "speech" ? Number(r.characters) * 200 : (Number(r.duration_ms) / 1000) * 15;
          assert.equal(Number(r.cost_micros), expected, `${r.kind}: the cost of the units it names`);
          assert.ok(Number(r.cost_micros) > 0);
        }
      } finally {
        await check.close();
      }
    });
  });
}
