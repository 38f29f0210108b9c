import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { parseBuffer } from "music-metadata";
import { mp3FramesFrom } from "../../../src/upstreams/mp3-frames.ts";
import type { SpeechPiece, SpeechStream, SpeechStreamRequest } from "../../../src/upstreams/realtime.ts";
import { defaultChunkSamples } from "../../../src/upstreams/simulator/encode.ts";
import { createSimulatedAudioUpstream, type SimulatedAudioUpstream } from "../../../src/upstreams/simulator/speech.ts";
import { speechDurationSec } from "../../../src/upstreams/simulator/speech/synthesize.ts";
import { DEMO_ALPHA_VOICE_ID } from "../../../src/upstreams/simulator/voices.ts";
import { AUDIO_FORMATS, type AudioFormat, UpstreamError } from "../../../src/upstreams/types.ts";
import { concatBytes } from "../../../src/upstreams/util.ts";
import { WatermarkExtractor } from "../../../src/upstreams/simulator/watermark.ts";

const CHUNKS = [
  "Good morning, and welcome to the realtime speech of the simulator. ",
  "Each chunk is spoken as soon as it arrives, ",
  "and its audio follows the text. ",
];

const upstreams: SimulatedAudioUpstream[] = [];
function make(opts: { latencyScale?: number; inlineMaxSec?: number } = {}): SimulatedAudioUpstream {
  const up = createSimulatedAudioUpstream({ latencyScale: opts.latencyScale ?? 0, publicBaseUrl: "http://localhost:8080", inlineMaxSec: opts.inlineMaxSec });
  upstreams.push(up);
  return up;
}
after(async () => {
  await Promise.all(upstreams.map((u) => u.close()));
});

function sreq(over: Partial<SpeechStreamRequest> = {}): SpeechStreamRequest {
  return { model: "alpha-flash-v2-5", voiceId: DEMO_ALPHA_VOICE_ID, format: "pcm_16000", voiceSettings: {}, simulate: null, ...over };
}

/** Every piece of every chunk, chunk by chunk. */
async function speak(stream: SpeechStream, chunks: readonly string[]): Promise<SpeechPiece[][]> {
  const out: SpeechPiece[][] = [];
  for (const c of chunks) {
    const pieces: SpeechPiece[] = [];
    for await (const p of stream.synthesize(c)) pieces.push(p);
    out.push(pieces);
  }
  return out;
}

function rateOf(format: AudioFormat): number {
  return Number(format.split("_")[1]);
}

/** Samples a piece holds at the format's rate. */
function samplesOf(piece: Uint8Array, format: AudioFormat): number {
  if (format.startsWith("pcm_")) return piece.length / 2;
  if (format === "ulaw_8000") return piece.length;
  let n = 0;
  let bytes = 0;
  for (const f of mp3FramesFrom(piece, 0)) {
    n += f.samplesPerFrame;
    bytes += f.length;
  }
  assert.equal(bytes, piece.length, "a piece holds whole MP3 frames");
  return n;
}

describe("SimulatedAudioUpstream.openSpeechStream", () => {
  const up = make();

  for (const format of AUDIO_FORMATS) {
    it(`${format}: the pieces of every chunk form one valid stream of the right duration`, async () => {
      const stream = await up.openSpeechStream(sreq({ format }));
      const chunks = await speak(stream, CHUNKS);
      await stream.close();
      const rate = rateOf(format);
      const all = concatBytes(chunks.flat().map((p) => p.audio));
      const spoken = CHUNKS.reduce((s, c) => s + Math.round(speechDurationSec(c) * rate), 0);
      if (format.startsWith("pcm_")) assert.equal(all.length, 2 * spoken);
      else if (format === "ulaw_8000") assert.equal(all.length, spoken);
      else {
        // Bare frames one after the other (no tag between chunks): one stream, read to its end by a parser.
        const frames = [...mp3FramesFrom(all, 0)];
        assert.equal(frames.reduce((n, f) => n + f.length, 0), all.length);
        assert.ok(frames.every((f) => f.sampleRate === rate));
        // No bit reservoir (main_data_begin 0 in every frame): a chunk's first frame needs nothing of the previous chunk.
        for (const f of frames) {
          const side = f.offset + 4 + ((all[f.offset + 1] & 1) === 0 ? 2 : 0);
          const mainDataBegin = f.version === 1 ? (all[side] << 1) | (all[side + 1] >> 7) : all[side];
          assert.equal(mainDataBegin, 0);
        }
        // No Xing/Info tag frame at any chunk's start (ID3 tags are ruled out above: frames cover every byte).
        for (const f of frames) {
          const at = f.offset + 4 + f.sideInfoLength;
          const tag = Buffer.from(all.subarray(at, at + 4)).toString("latin1");
          assert.ok(tag !== "Xing" && tag !== "Info");
        }
        const framesSec = (frames.length * frames[0].samplesPerFrame) / rate;
        // Each chunk adds LAME's delay and padding: between 0 and 3 frames of audio.
        const extra = framesSec - spoken / rate;
        assert.ok(extra > 0 && extra < (CHUNKS.length * 3 * frames[0].samplesPerFrame) / rate, `extra ${extra} s`);
        const meta = await parseBuffer(all, { mimeType: "audio/mpeg" }, { duration: true });
        assert.equal(meta.format.sampleRate, rate);
        assert.equal(meta.format.codec, "MPEG 1 Layer 3".replace("1", rate >= 32000 ? "1" : "2"));
        // The parser reads to the end of the last chunk (it may leave out a frame or two of its own count).
        const frameSec = frames[0].samplesPerFrame / rate;
        assert.ok(Math.abs((meta.format.duration ?? 0) - framesSec) <= 3 * frameSec, `${meta.format.duration} vs ${framesSec}`);
      }
      // Each chunk's pieces are about 0.2 s of audio (raw formats: exactly the render chunk, the last one shorter).
      for (const pieces of chunks) {
        assert.ok(pieces.length >= 3);
        if (!format.startsWith("mp3_")) {
          for (const p of pieces.slice(0, -1)) assert.equal(samplesOf(p.audio, format), defaultChunkSamples(rate));
        }
      }
    });

    it(`${format}: alignments cover the chunk's characters once, on the synthesizer's timeline`, async () => {
      const stream = await up.openSpeechStream(sreq({ format }));
      const chunks = await speak(stream, CHUNKS);
      const rate = rateOf(format);
      for (let c = 0; c < CHUNKS.length; c++) {
        const chars: string[] = [];
        const starts: number[] = [];
        const durations: number[] = [];
        let before = 0; // samples of the chunk's earlier pieces
        for (const p of chunks[c]) {
          assert.deepEqual(p.normalizedAlignment, p.alignment);
          const n = samplesOf(p.audio, format);
          if (p.alignment !== null) {
            const a = p.alignment;
            assert.ok(a.chars.length > 0);
            assert.equal(a.charStartTimesMs.length, a.chars.length);
            assert.equal(a.charDurationsMs.length, a.chars.length);
            if (!format.startsWith("mp3_")) {
              // A raw piece holds the start of each character it names.
              for (const t of a.charStartTimesMs) assert.ok(t >= (before / rate) * 1000 - 1 && t <= ((before + n) / rate) * 1000 + 1, `${t} ms`);
            }
            chars.push(...a.chars);
            starts.push(...a.charStartTimesMs);
            durations.push(...a.charDurationsMs);
          }
          before += n;
        }
        assert.equal(chars.join(""), CHUNKS[c]);
        assert.equal(starts[0], 0);
        for (let i = 1; i < starts.length; i++) assert.equal(starts[i], starts[i - 1] + durations[i - 1]);
        const lastEnd = starts.at(-1)! + durations.at(-1)!;
        // The last character ends with the chunk's audio (15 characters a second).
        assert.ok(Math.abs(lastEnd - speechDurationSec(CHUNKS[c]) * 1000) <= 1, `${lastEnd} ms`);
        // Not uniform: a phrase end lasts longer than a letter, as the synthesizer speaks it.
        assert.ok(new Set(durations).size > 2);
      }
    });
  }

  it("speaks with the HTTP route's voice: MP3 identical, PCM identical but for the watermark's low bits", async () => {
    const text = CHUNKS[0];
    for (const format of ["mp3_44100_128", "pcm_24000"] as const) {
      const http = await up.speech({ model: "alpha-flash-v2-5", text, voiceId: DEMO_ALPHA_VOICE_ID, format, voiceSettings: { stability: 0.3 }, stream: false, simulate: null });
      assert.equal(http.kind, "bytes");
      if (http.kind !== "bytes") return;
      const stream = await up.openSpeechStream(sreq({ format, voiceSettings: { stability: 0.3, speed: 1.1 } }));
      const rt = concatBytes((await speak(stream, [text]))[0].map((p) => p.audio));
      if (format === "mp3_44100_128") {
        assert.deepEqual(rt, http.body);
        continue;
      }
      assert.equal(rt.length, http.body.length);
      let changed = 0;
      for (let i = 0; i < rt.length; i++) {
        if (rt[i] === http.body[i]) continue;
        assert.equal(i % 2, 0, "only low bytes differ");
        assert.equal(rt[i] ^ http.body[i], 1, "only bit 0 differs");
        changed++;
      }
      assert.ok(changed > 0);
      // The text is in the realtime audio, not in the HTTP route's.
      assert.deepEqual(new WatermarkExtractor("pcm").push(rt).map((h) => h.text), [text]);
      assert.deepEqual(new WatermarkExtractor("pcm").push(http.body), []);
    }
  });

  it("is deterministic across instances and identical through the inline and worker paths", async () => {
    const viaWorker = make({ inlineMaxSec: 0 });
    const fresh = make();
    for (const format of ["mp3_22050_32", "pcm_44100", "ulaw_8000"] as const) {
      const results = [];
      for (const u of [up, fresh, viaWorker]) {
        const s = await u.openSpeechStream(sreq({ format }));
        results.push(await speak(s, CHUNKS));
      }
      assert.deepEqual(results[1], results[0]);
      assert.deepEqual(results[2], results[0]);
    }
    assert.ok(viaWorker.stats().workers > 0, "the worker path rendered");
    assert.equal(viaWorker.stats().inflight, 0);
  });

  it("yields nothing for an empty or whitespace-only chunk", async () => {
    const s = await up.openSpeechStream(sreq());
    for (const text of ["", " ", "  \n\t ", "\u00a0"]) assert.deepEqual(await speak(s, [text]), [[]]);
  });

  it("simulate=fail: the first chunk fails before any audio, not retryable", async () => {
    const s = await up.openSpeechStream(sreq({ simulate: "fail" }));
    const got: SpeechPiece[] = [];
    await assert.rejects(
      (async () => {
        for await (const p of s.synthesize("Hello there. ")) got.push(p);
      })(),
      (err: unknown) => err instanceof UpstreamError && !err.retryable,
    );
    assert.equal(got.length, 0);
  });

  it("simulate=slow and hang: at least 1 s before the first piece of each chunk at latency scale 0", async () => {
    await Promise.all(
      (["slow", "hang"] as const).map(async (simulate) => {
        const s = await up.openSpeechStream(sreq({ simulate }));
        for (const text of ["One. ", "Two. "]) {
          const t0 = performance.now();
          const it = s.synthesize(text)[Symbol.asyncIterator]();
          const first = await it.next();
          assert.ok(performance.now() - t0 >= 990);
          assert.equal(first.done, false);
          while (!(await it.next()).done);
        }
      }),
    );
  });

  it("applies scaled latency: the open and the first piece come after their delays", async () => {
    const u = make({ latencyScale: 0.5 });
    let t0 = performance.now();
    const s = await u.openSpeechStream(sreq());
    assert.ok(performance.now() - t0 >= 20);
    t0 = performance.now();
    const it = s.synthesize(CHUNKS[1])[Symbol.asyncIterator]();
    await it.next();
    assert.ok(performance.now() - t0 >= 95, "first piece after about 0.2 s x scale");
    await it.next();
    assert.ok(performance.now() - t0 >= 115, "later pieces about 0.05 s x scale apart");
    await it.return?.();
  });

  it("honours the signal: an abort ends the chunk with its reason and gives the rendering back", async () => {
    const u = make({ latencyScale: 1, inlineMaxSec: 0 });
    const s = await u.openSpeechStream(sreq({ format: "mp3_44100_128" }));
    const ac = new AbortController();
    const it = s.synthesize(CHUNKS.join("").repeat(3), ac.signal)[Symbol.asyncIterator]();
    assert.equal((await it.next()).done, false);
    ac.abort();
    await assert.rejects(it.next(), { name: "AbortError" });
    await assert.rejects(u.openSpeechStream(sreq(), AbortSignal.abort()), { name: "AbortError" });
    // The next chunk of the same stream still works.
    assert.ok((await speak(s, ["Still here. "]))[0].length > 0);
  });

  it("close ends the chunk being spoken with an UpstreamError, and later chunks fail", async () => {
    const u = make({ latencyScale: 1 });
    const s = await u.openSpeechStream(sreq());
    const it = s.synthesize(CHUNKS[0])[Symbol.asyncIterator]();
    assert.equal((await it.next()).done, false);
    await s.close();
    await assert.rejects(it.next(), (err: unknown) => err instanceof UpstreamError && !err.retryable);
    await assert.rejects(speak(s, ["After close. "]), UpstreamError);
    await s.close(); // twice: no throw
  });

  it("fails once the upstream is closed", async () => {
    const u = make();
    const s = await u.openSpeechStream(sreq());
    await u.close();
    await assert.rejects(speak(s, ["Closed upstream. "]), (err: unknown) => err instanceof UpstreamError && !err.retryable);
  });

  it("serves many streams at once through the workers without holding the event loop", async () => {
    const u = make({ inlineMaxSec: 0 });
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    try {
      const results = await Promise.all(
        Array.from({ length: 40 }, async (_, i) => {
          const s = await u.openSpeechStream(sreq({ format: i % 2 === 0 ? "mp3_44100_128" : "pcm_16000", voiceId: `voice-${i % 5}` }));
          const pieces = await speak(s, [`Stream number ${i} speaks this sentence. `, "Then a second one. "]);
          await s.close();
          return pieces.flat().length;
        }),
      );
      assert.ok(results.every((n) => n >= 4));
    } finally {
      clearInterval(timer);
    }
    assert.ok(ticks > 0, "the event loop ran meanwhile");
    assert.equal(u.stats().inflight, 0);
  });
});
