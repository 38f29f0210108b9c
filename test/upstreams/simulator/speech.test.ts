import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { parseBuffer } from "music-metadata";
import { concatBytes } from "../../../src/upstreams/util.ts";
import { speechDurationSec } from "../../../src/upstreams/simulator/speech/synthesize.ts";
import { ByteLruCache } from "../../../src/upstreams/simulator/render-cache.ts";
import { createSimulatedAudioUpstream, type SimulatedAudioUpstream } from "../../../src/upstreams/simulator/speech.ts";
import { DEMO_ALPHA_VOICE_ID, DEMO_BETA_VOICE_ID } from "../../../src/upstreams/simulator/voices.ts";
import {
  AUDIO_FORMATS,
  type AudioResult,
  contentTypeOf,
  type SpeechRequest,
  UpstreamError,
} from "../../../src/upstreams/types.ts";

const TEXT = "Good morning. The simulator speaks this sentence for the tests.";

function req(over: Partial<SpeechRequest> = {}): SpeechRequest {
  return {
    model: "alpha-multilingual-v2",
    text: TEXT,
    voiceId: DEMO_ALPHA_VOICE_ID,
    format: "mp3_44100_128",
    voiceSettings: {},
    stream: false,
    simulate: null,
    ...over,
  };
}

function bytesOf(r: AudioResult): Uint8Array {
  assert.equal(r.kind, "bytes");
  return r.kind === "bytes" ? r.body : new Uint8Array();
}

async function collect(r: AudioResult): Promise<Uint8Array[]> {
  assert.equal(r.kind, "stream");
  const out: Uint8Array[] = [];
  if (r.kind === "stream") for await (const c of r.chunks) out.push(c);
  return out;
}

const upstreams: SimulatedAudioUpstream[] = [];
function make(opts: { latencyScale?: number; inlineMaxSec?: number; cacheMaxBytes?: number } = {}) {
  const up = createSimulatedAudioUpstream({
    latencyScale: opts.latencyScale ?? 0,
    publicBaseUrl: "http://localhost:8080",
    inlineMaxSec: opts.inlineMaxSec,
    cacheMaxBytes: opts.cacheMaxBytes,
  });
  upstreams.push(up);
  return up;
}
after(async () => {
  await Promise.all(upstreams.map((u) => u.close()));
});

describe("SimulatedAudioUpstream.speech", () => {
  const up = make();
  const viaWorker = make({ inlineMaxSec: 0 });

  for (const format of AUDIO_FORMATS) {
    it(`answers ${format} bytes with the right content type and duration`, async () => {
      const r = await up.speech(req({ format }));
      assert.equal(r.kind, "bytes");
      if (r.kind !== "bytes") return;
      assert.equal(r.contentType, contentTypeOf(format));
      assert.ok(Math.abs(r.durationSec - speechDurationSec(TEXT)) < 0.01);
      const rate = Number(format.split("_")[1]);
      if (format.startsWith("pcm_")) assert.ok(Math.abs(r.body.length - 2 * rate * r.durationSec) <= 4);
      else if (format === "ulaw_8000") assert.ok(Math.abs(r.body.length - 8000 * r.durationSec) <= 2);
      else {
        const meta = await parseBuffer(r.body, { mimeType: "audio/mpeg" }, { duration: true });
        assert.equal(meta.format.sampleRate, rate);
        assert.ok(Math.abs((meta.format.duration ?? 0) - r.durationSec) < 0.12);
      }
    });
  }

  it("is deterministic per input, across instances and across the inline and worker paths", async () => {
    const a = bytesOf(await up.speech(req()));
    const fresh = make();
    assert.deepEqual(bytesOf(await fresh.speech(req())), a);
    assert.deepEqual(bytesOf(await viaWorker.speech(req())), a);
    const others = [
      req({ voiceId: "Gk2WmT9bVq4XnR7sLp1D" }),
      req({ model: "alpha-v3" }),
      req({ voiceSettings: { stability: 0.1 } }),
      req({ text: `${TEXT}!` }),
    ];
    for (const o of others) assert.notDeepEqual(bytesOf(await up.speech(o)), a);
  });

  it("caches encoded results and shares identical concurrent renderings", async () => {
    const u = make({ inlineMaxSec: 0 });
    const text = "Concurrent identical requests render only once in the worker pool.";
    const results = await Promise.all(Array.from({ length: 5 }, () => u.speech(req({ text }))));
    const first = bytesOf(results[0]);
    for (const r of results) assert.equal(bytesOf(r), first); // the very same array
    assert.equal(u.stats().cacheEntries, 1);
    assert.equal(u.stats().inflight, 0);
    assert.equal(bytesOf(await u.speech(req({ text }))), first);
  });

  it("streams beta speech as several chunks that form one valid MP3", async () => {
    for (const u of [up, viaWorker]) {
      const r = await u.speech(
        req({ model: "beta-speech-turbo", voiceId: DEMO_BETA_VOICE_ID, stream: true }),
      );
      assert.equal(r.contentType, "audio/mpeg");
      const chunks = await collect(r);
      assert.ok(chunks.length >= 3, `${chunks.length} chunks`);
      const all = concatBytes(chunks);
      const meta = await parseBuffer(all, { mimeType: "audio/mpeg" }, { duration: true });
      assert.equal(meta.format.sampleRate, 44100);
      assert.ok(Math.abs((meta.format.duration ?? 0) - speechDurationSec(TEXT)) < 0.12);
      const whole = bytesOf(
        await u.speech(req({ model: "beta-speech-turbo", voiceId: DEMO_BETA_VOICE_ID, stream: false })),
      );
      assert.deepEqual(all, whole);
    }
  });

  it("streams pcm too", async () => {
    const r = await up.speech(req({ model: "beta-speech-hd", format: "pcm_16000", stream: true }));
    assert.equal(r.contentType, "audio/pcm");
    const all = concatBytes(await collect(r));
    assert.ok(Math.abs(all.length - 2 * 16000 * speechDurationSec(TEXT)) <= 4);
  });

  it("simulate=fail throws UpstreamError", async () => {
    await assert.rejects(up.speech(req({ simulate: "fail" })), UpstreamError);
    await assert.rejects(up.speech(req({ simulate: "fail", stream: true })), UpstreamError);
  });

  it("simulate=slow and hang add at least 1 s at latency scale 0", async () => {
    const t0 = performance.now();
    const [slow, hang] = await Promise.all([
      up.speech(req({ simulate: "slow" })),
      up.speech(req({ simulate: "hang" })),
    ]);
    assert.ok(performance.now() - t0 >= 990);
    assert.deepEqual(bytesOf(slow), bytesOf(hang));
  });

  it("applies scaled latency: about 1.8 s x scale, first stream chunk about 0.4 s x scale", async () => {
    const u = make({ latencyScale: 0.1 });
    let t0 = performance.now();
    await u.speech(req());
    assert.ok(performance.now() - t0 >= 175);
    t0 = performance.now();
    const r = await u.speech(req({ model: "beta-speech-turbo", stream: true }));
    const tFirst = performance.now() - t0;
    assert.ok(tFirst >= 35, `first chunk after ${tFirst} ms`);
    await collect(r);
  });

  it("aborts while waiting", async () => {
    // 180 s of simulated latency: only the abort can end the wait within the test's run.
    const u = make({ latencyScale: 100 });
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    await assert.rejects(u.speech(req(), ac.signal), { name: "AbortError" });
    await assert.rejects(u.speech(req(), AbortSignal.abort()), { name: "AbortError" });
  });

  it("aborts a stream in progress", async () => {
    const u = make({ latencyScale: 1 });
    const ac = new AbortController();
    const r = await u.speech(req({ model: "beta-speech-turbo", stream: true }), ac.signal);
    assert.equal(r.kind, "stream");
    if (r.kind !== "stream") return;
    const it = r.chunks[Symbol.asyncIterator]();
    const first = await it.next();
    assert.equal(first.done, false);
    setTimeout(() => ac.abort(), 20);
    await assert.rejects(
      (async () => {
        for (;;) if ((await it.next()).done) break;
      })(),
      { name: "AbortError" },
    );
  });

  it("renders long inputs in a worker without blocking the event loop", async () => {
    const u = make();
    const text = "The quick brown fox jumps over the lazy dog. ".repeat(14); // 630 chars, 42 s
    await u.speech(req({ text: "Short." })); // rendered inline
    assert.equal(u.stats().workers, 0, "workers start on first use, not at construction");
    const pending = u.speech(req({ text }));
    // Handed to a worker (an inline rendering would be finished and cached by now).
    assert.deepEqual({ ...u.stats(), cacheBytes: 0 }, { cacheEntries: 1, cacheBytes: 0, inflight: 1, workers: 1 });
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    try {
      const r = await pending;
      assert.ok(Math.abs((r.kind === "bytes" ? r.durationSec : 0) - 42) < 0.01);
    } finally {
      clearInterval(timer);
    }
    assert.ok(ticks > 0, "the event loop ran while the clip rendered");
    assert.equal(u.stats().inflight, 0);
  });

  it("serves voice previews as short MP3s", async () => {
    const mp3 = await up.voicePreview(DEMO_ALPHA_VOICE_ID);
    const meta = await parseBuffer(mp3, { mimeType: "audio/mpeg" }, { duration: true });
    assert.ok((meta.format.duration ?? 0) > 1);
  });

  it("fails after close", async () => {
    const u = make({ inlineMaxSec: 0 });
    await u.close();
    await assert.rejects(u.speech(req()), UpstreamError);
  });
});

describe("SimulatedAudioUpstream voice library", () => {
  const up = make();

  it("lists both catalogs and tells alpha voices apart", async () => {
    const alpha = await up.listVoices("alpha");
    const beta = await up.listVoices("beta", null);
    assert.equal(alpha.length, 3000);
    assert.equal(beta.length, 300);
    assert.ok(alpha.every((v) => v.provider === "alpha"));
    assert.ok(beta.every((v) => v.provider === "beta"));
    assert.equal(up.isAlphaVoice(DEMO_ALPHA_VOICE_ID), true);
    assert.equal(up.isAlphaVoice(DEMO_BETA_VOICE_ID), false);
    alpha.length = 0; // a copy: the catalog is unaffected
    assert.equal((await up.listVoices("alpha")).length, 3000);
  });

  it("simulate=fail throws UpstreamError", async () => {
    await assert.rejects(up.listVoices("alpha", "fail"), UpstreamError);
    await assert.rejects(up.listVoices("beta", "fail"), UpstreamError);
  });
});

describe("ByteLruCache", () => {
  it("evicts the least recently used entries over the byte budget", () => {
    const c = new ByteLruCache<{ bytes: number }>(100);
    c.set("a", { bytes: 40 });
    c.set("b", { bytes: 40 });
    assert.ok(c.get("a"));
    c.set("c", { bytes: 40 }); // evicts b
    assert.equal(c.get("b"), undefined);
    assert.ok(c.get("a") && c.get("c"));
    assert.deepEqual(c.size, { entries: 2, bytes: 80 });
    c.set("huge", { bytes: 101 });
    assert.equal(c.get("huge"), undefined);
    c.set("a", { bytes: 10 });
    assert.deepEqual(c.size, { entries: 2, bytes: 50 });
  });
});
