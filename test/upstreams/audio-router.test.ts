/**
 * The audio router and the failover of synchronous calls (src/upstreams/audio-router.ts,
 * sync-failover.ts; D25, D27): a family's sources in file order, a retryable failure moving the call to
 * the next source (layer 1), a refusal ending it, a source at its cap skipped and 429 when all are, a
 * stream failing over only before its first chunk and keeping its source's concurrency place until its
 * end, owned voices pinned to their source, the simulator for a family without sources. The sources here
 * are small in-process adapters: the protocols themselves are proved against their loopback fakes.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { AppError } from "../../src/errors.ts";
import type { UpstreamSource } from "../../src/upstreams/config.ts";
import { AudioRouter, type RealAudioSource, type SimulatedAudio } from "../../src/upstreams/audio-router.ts";
import { UpstreamRegistry } from "../../src/upstreams/registry.ts";
import { type AudioResult, type SpeechRequest, UpstreamError } from "../../src/upstreams/types.ts";

function entry(name: string, families: string[], patch: Partial<UpstreamSource> = {}): UpstreamSource {
  return {
    name,
    protocol: families.includes("alpha") ? "elevenlabs" : "minimax",
    baseUrl: "https://audio.example",
    apiKey: "k",
    families,
    models: {},
    timeoutMs: null,
    maxConcurrency: null,
    trustedHosts: [],
    origin: "UPSTREAMS",
    ...patch,
  };
}

const bytes = (tag: number): AudioResult => ({ kind: "bytes", contentType: "audio/mpeg", body: new Uint8Array([tag]), durationSec: 1 });

/** A speech source answering `behave()` and counting its calls. */
function speaker(name: string, behave: () => Promise<AudioResult>): RealAudioSource & { calls: number } {
  const src = {
    name,
    calls: 0,
    async speech(): Promise<AudioResult> {
      src.calls++;
      return behave();
    },
    async close() {},
  };
  return src;
}

const simulated: SimulatedAudio = {
  speech: { speech: async () => bytes(99) },
  media: { music: async () => ({ ...bytes(98), kind: "bytes" }) as never, sfx: async () => bytes(97) as never },
  voiceCreation: { designVoice: async () => ({ upstreamVoiceId: "sim-design" }), cloneVoice: async () => ({ upstreamVoiceId: "sim-clone" }) },
  voices: { listVoices: async () => [], isAlphaVoice: () => false },
  audioText: { transcribe: async () => ({ text: "sim" }), understand: async () => ({ text: "sim" }) },
  speechStream: { openSpeechStream: async () => Promise.reject(new Error("not used here")) },
  transcriptionStream: { openTranscriptionStream: async () => Promise.reject(new Error("not used here")) },
};

const req: SpeechRequest = { model: "alpha-v3", text: "hi", voiceId: "v", format: "mp3_44100_128", voiceSettings: {}, stream: false, simulate: null };

function router(entries: UpstreamSource[], sources: RealAudioSource[]): { router: AudioRouter; registry: UpstreamRegistry } {
  const registry = new UpstreamRegistry(entries);
  return { registry, router: new AudioRouter(registry, simulated, new Map(sources.map((s) => [s.name, s]))) };
}

describe("synchronous failover (D27)", () => {
  test("a retryable failure moves the call to the next source: layer 1", async () => {
    const a = speaker("el-a", () => Promise.reject(new UpstreamError("500", true)));
    const b = speaker("el-b", async () => bytes(2));
    const { router: r } = router([entry("el-a", ["alpha"]), entry("el-b", ["alpha"])], [a, b]);
    const out = await r.speech("alpha", req, undefined);
    assert.deepEqual([out.source, out.fallbackLayer, a.calls, b.calls], ["el-b", 1, 1, 1]);
    assert.equal(out.value.kind === "bytes" && out.value.body[0], 2);
  });

  test("the first source serving answers layer 0; a refusal of the input ends the call", async () => {
    const a = speaker("el-a", async () => bytes(1));
    const { router: r1 } = router([entry("el-a", ["alpha"])], [a]);
    assert.equal((await r1.speech("alpha", req, undefined)).fallbackLayer, 0);
    const refusing = speaker("el-a", () => Promise.reject(new UpstreamError("422", false)));
    const b = speaker("el-b", async () => bytes(2));
    const { router: r2 } = router([entry("el-a", ["alpha"]), entry("el-b", ["alpha"])], [refusing, b]);
    await assert.rejects(r2.speech("alpha", req, undefined), (e: unknown) => e instanceof UpstreamError && !e.retryable);
    assert.equal(b.calls, 0);
  });

  test("every source at max_concurrency: 429 rate_limited with Retry-After; one at its cap is skipped", async () => {
    let release: () => void = () => {};
    const slow = speaker("el-a", () => new Promise((resolve) => (release = () => resolve(bytes(1)))));
    const { router: r } = router([entry("el-a", ["alpha"], { maxConcurrency: 1 })], [slow]);
    const first = r.speech("alpha", req, undefined);
    await assert.rejects(r.speech("alpha", req, undefined), (e: unknown) => e instanceof AppError && e.status === 429 && e.headers["Retry-After"] === "1");
    release();
    await first;

    const busy = speaker("el-a", () => new Promise(() => {}));
    const other = speaker("el-b", async () => bytes(2));
    const { router: r2 } = router([entry("el-a", ["alpha"], { maxConcurrency: 1 }), entry("el-b", ["alpha"])], [busy, other]);
    void r2.speech("alpha", req, undefined);
    const served = await r2.speech("alpha", req, undefined);
    assert.deepEqual([served.source, served.fallbackLayer], ["el-b", 1]);
  });

  test("a stream fails over before its first chunk only, and keeps its source's place until its end", async () => {
    const broken = (): AsyncIterable<Uint8Array> => ({
      [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(new UpstreamError("stream reset", true)) }),
    });
    async function* good(): AsyncGenerator<Uint8Array> {
      yield new Uint8Array([1]);
      yield new Uint8Array([2]);
    }
    const a = speaker("mm-a", async () => ({ kind: "stream", contentType: "audio/mpeg", chunks: broken() }));
    const b = speaker("mm-b", async () => ({ kind: "stream", contentType: "audio/mpeg", chunks: good() }));
    const { router: r, registry } = router([entry("mm-a", ["beta"]), entry("mm-b", ["beta"], { maxConcurrency: 1 })], [a, b]);
    const out = await r.speech("beta", { ...req, model: "beta-speech-hd", stream: true }, undefined);
    assert.equal(out.fallbackLayer, 1);
    assert.equal(registry.get("mm-b")!.gate.inFlight, 1, "the stream holds its place");
    assert.equal(out.value.kind, "stream");
    const got: number[] = [];
    if (out.value.kind === "stream") for await (const c of out.value.chunks) got.push(...c);
    assert.deepEqual(got, [1, 2]);
    assert.equal(registry.get("mm-b")!.gate.inFlight, 0, "given back at the end");

    // Dropped without being read: the place is given back too.
    const out2 = await r.speech("beta", { ...req, model: "beta-speech-hd", stream: true }, undefined);
    if (out2.value.kind === "stream") await out2.value.chunks[Symbol.asyncIterator]().return?.();
    assert.equal(registry.get("mm-b")!.gate.inFlight, 0);
  });
});

describe("owned voices and the simulator", () => {
  test("an owned voice is served by its source only; a source no longer configured: voiceUnavailable", async () => {
    const a = speaker("mm-a", () => Promise.reject(new UpstreamError("500", true)));
    const b = speaker("mm-b", async () => bytes(2));
    const { router: r } = router([entry("mm-a", ["beta"]), entry("mm-b", ["beta"])], [a, b]);
    await assert.rejects(r.speech("beta", req, "mm-a"), (e: unknown) => e instanceof UpstreamError && e.retryable);
    assert.equal(b.calls, 0, "no failover for a pinned voice");
    await assert.rejects(r.speech("beta", req, "mm-gone"), (e: unknown) => e instanceof UpstreamError && e.voiceUnavailable);
    const sim = await r.speech("beta", req, null);
    assert.deepEqual([sim.source, sim.value.kind === "bytes" && sim.value.body[0]], [null, 99]);
  });

  test("a family without a source is served by the simulator; voice creation reports its source", async () => {
    const { router: r } = router([], []);
    const out = await r.speech("alpha", req, undefined);
    assert.deepEqual([out.source, out.fallbackLayer], [null, 0]);
    const designed = await r.designVoice({ description: "d", name: null, previewText: null, gender: null, ageGroup: null, simulate: null });
    assert.deepEqual([designed.source, designed.value.upstreamVoiceId], [null, "sim-design"]);
    assert.equal(r.library.isAlphaVoice("x"), false);
    assert.equal(r.simulatedAlphaLibrary, true);
  });

  test("a real alpha library: membership is left to the cached list", async () => {
    const lister: RealAudioSource = { name: "el-a", listVoices: async () => [], close: async () => {} };
    const { router: r } = router([entry("el-a", ["alpha"])], [lister]);
    assert.equal(r.library.isAlphaVoice("x"), null);
    assert.equal(r.simulatedAlphaLibrary, false);
  });
});
