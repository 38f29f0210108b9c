import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { parseBuffer } from "music-metadata";
import {
  createSimulatedMediaUpstream,
  type SimulatedMediaUpstream,
} from "../../../src/upstreams/simulator/media.ts";
import { planMusic } from "../../../src/upstreams/simulator/music/arrangement.ts";
import {
  isInstrumentalOnly,
  MUSIC_LYRICS_MAX_SEC,
  musicDurationFromLyrics,
  musicHasVocals,
} from "../../../src/upstreams/simulator/music/lyrics.ts";
import { synthesizeMusic } from "../../../src/upstreams/simulator/music/synthesize.ts";
import { sfxDurationSec, sfxKindsOf } from "../../../src/upstreams/simulator/sfx/kinds.ts";
import { synthesizeSfx } from "../../../src/upstreams/simulator/sfx/synthesize.ts";
import {
  AUDIO_FORMATS,
  type AudioFormat,
  contentTypeOf,
  type MusicRequest,
  type SfxRequest,
  UpstreamError,
} from "../../../src/upstreams/types.ts";

const LYRICS = [
  "[verse]",
  "I walked along the river side",
  "The morning light was in my eyes",
  "[chorus]",
  "Oh we sing, we sing tonight",
  "Until the stars are burning bright",
].join("\n");

function musicReq(over: Partial<MusicRequest> = {}): MusicRequest {
  return {
    model: "alpha-music",
    prompt: "upbeat pop song with piano and drums",
    lyrics: null,
    lengthMs: 2000,
    lengthFromLyrics: false,
    format: "mp3_44100_128",
    simulate: null,
    ...over,
  };
}

function sfxReq(over: Partial<SfxRequest> = {}): SfxRequest {
  return {
    model: "alpha-sfx",
    prompt: "heavy rain on a tin roof",
    durationSec: 1,
    promptInfluence: 0.3,
    format: "mp3_44100_128",
    simulate: null,
    ...over,
  };
}

function rms(x: Float32Array): number {
  let e = 0;
  for (const v of x) e += v * v;
  return Math.sqrt(e / Math.max(1, x.length));
}

function peak(x: Float32Array): number {
  let m = 0;
  for (const v of x) m = Math.max(m, Math.abs(v));
  return m;
}

function sameSamples(a: Float32Array, b: Float32Array): boolean {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(
    Buffer.from(b.buffer, b.byteOffset, b.byteLength),
  );
}

/** Checks that `body` is a valid file of `format` lasting about `sec` seconds. */
async function assertAudio(body: Uint8Array, format: AudioFormat, sec: number): Promise<void> {
  const rate = Number(format.split("_")[1]);
  if (format.startsWith("pcm_")) assert.ok(Math.abs(body.length - 2 * rate * sec) <= 4, `${body.length}`);
  else if (format === "ulaw_8000") assert.ok(Math.abs(body.length - 8000 * sec) <= 2, `${body.length}`);
  else {
    const meta = await parseBuffer(body, { mimeType: "audio/mpeg" }, { duration: true });
    assert.equal(meta.format.sampleRate, rate);
    assert.equal(meta.format.numberOfChannels, 1);
    const d = meta.format.duration ?? 0;
    assert.ok(Math.abs(d - sec) < 0.12, `mp3 lasts ${d} s, expected ${sec}`);
  }
}

const upstreams: SimulatedMediaUpstream[] = [];
function make(opts: { latencyScale?: number; inlineMaxMs?: number; cacheMaxBytes?: number } = {}) {
  const up = createSimulatedMediaUpstream({
    latencyScale: opts.latencyScale ?? 0,
    inlineMaxMs: opts.inlineMaxMs,
    cacheMaxBytes: opts.cacheMaxBytes,
  });
  upstreams.push(up);
  return up;
}
after(async () => {
  await Promise.all(upstreams.map((u) => u.close()));
});

describe("musicDurationFromLyrics", () => {
  it("derives 30..90 s from the prompt without lyrics or with [Instrumental] alone", () => {
    for (const prompt of ["calm piano", "fast rock anthem", "", "ambient drones for sleeping"]) {
      const d = musicDurationFromLyrics(null, prompt);
      assert.ok(Number.isInteger(d) && d >= 30 && d <= 90, `${d}`);
      assert.equal(musicDurationFromLyrics(null, prompt), d);
      assert.equal(musicDurationFromLyrics("[Instrumental]", prompt), d);
      assert.equal(musicDurationFromLyrics("  [ INSTRUMENTAL ]\n", prompt), d);
      assert.equal(musicDurationFromLyrics("", prompt), d);
    }
  });

  it("grows with the lyrics and stays within 10..300 s", () => {
    const one = musicDurationFromLyrics("Hello world", "pop");
    const two = musicDurationFromLyrics("Hello world\nGoodbye moon", "pop");
    const tagged = musicDurationFromLyrics("[verse]\nHello world\n[chorus]\nGoodbye moon", "pop");
    const full = musicDurationFromLyrics(LYRICS, "pop");
    assert.ok(one >= 10 && one < two && two < tagged && tagged < full, `${one} ${two} ${tagged} ${full}`);
    // 6 s intro + 6 s outro + 2.5..3.5 s per line + tag time.
    assert.ok(full >= 12 + 4 * 2.5 && full <= 12 + 4 * 3.5 + 3, `${full}`);
    const long = Array.from({ length: 150 }, (_, i) => `line number ${i} of a very long song`).join("\n");
    assert.equal(musicDurationFromLyrics(long, "pop"), MUSIC_LYRICS_MAX_SEC);
  });

  it("knows [Instrumental] alone, ignoring case and whitespace", () => {
    assert.ok(isInstrumentalOnly("[Instrumental]"));
    assert.ok(isInstrumentalOnly(" [ instrumental ] \n"));
    assert.ok(!isInstrumentalOnly("[Instrumental]\nla la la"));
    assert.ok(!isInstrumentalOnly(null));
    assert.ok(!musicHasVocals("[instrumental]"));
    assert.ok(!musicHasVocals(null));
    assert.ok(!musicHasVocals("[verse]\n[chorus]"));
    assert.ok(musicHasVocals(LYRICS));
    assert.ok(musicHasVocals("[Instrumental]\nla la la"));
  });
});

describe("planMusic", () => {
  it("follows prompt keywords", () => {
    const edm = planMusic({ prompt: "fast EDM dance track", lyrics: null, durationSec: 30 });
    assert.equal(edm.drums, "four");
    assert.ok(edm.bpm >= 130, `${edm.bpm}`);
    const sad = planMusic({ prompt: "sad ambient piano", lyrics: null, durationSec: 30 });
    assert.equal(sad.mode, "minor");
    assert.equal(sad.drums, "none");
    assert.equal(sad.lead, "piano");
    assert.ok(sad.bpm < edm.bpm);
    const keyed = planMusic({ prompt: "rock song at 97 bpm in F# major", lyrics: null, durationSec: 30 });
    assert.equal(keyed.bpm, 97);
    assert.equal(keyed.key, "F# major");
    assert.equal(keyed.drums, "rock");
  });

  it("has intro, verse, chorus and outro sections covering the whole song", () => {
    const plan = planMusic({ prompt: "pop", lyrics: null, durationSec: 90 });
    const kinds = plan.sections.map((s) => s.kind);
    for (const k of ["intro", "verse", "chorus", "outro"] as const) {
      assert.ok(kinds.includes(k), kinds.join());
    }
    assert.equal(plan.sections[0].startSec, 0);
    assert.ok(Math.abs(plan.sections[plan.sections.length - 1].endSec - 90) < 1e-9);
    assert.equal(plan.vocals, false);
    assert.equal(plan.sungSyllables, 0);
  });

  it("sings the lyrics' syllables, and nothing for [Instrumental]", () => {
    const sung = planMusic({ prompt: "pop", lyrics: LYRICS, durationSec: 30 });
    assert.equal(sung.vocals, true);
    assert.ok(sung.sungSyllables >= 28, `${sung.sungSyllables}`);
    assert.ok(sung.sections.some((s) => s.kind === "chorus"));
    const inst = planMusic({ prompt: "pop", lyrics: " [INSTRUMENTAL] ", durationSec: 30 });
    assert.equal(inst.vocals, false);
    assert.equal(inst.sungSyllables, 0);
  });
});

describe("synthesizeMusic", () => {
  const base = {
    prompt: "upbeat rock with drums and guitar",
    lyrics: null,
    durationSec: 6,
    sampleRate: 22050,
  };

  it("produces exactly round(d x rate) samples of real, normalized audio", () => {
    const s = synthesizeMusic(base);
    assert.equal(s.length, 6 * 22050);
    assert.ok(peak(s) <= 0.9 && peak(s) > 0.8);
    assert.ok(rms(s) > 0.03, `rms ${rms(s)}`);
    // Fades: the first and last samples are (nearly) silent.
    assert.ok(Math.abs(s[0]) < 1e-3 && Math.abs(s[s.length - 1]) < 1e-3);
    assert.equal(synthesizeMusic({ ...base, durationSec: 1.2345, sampleRate: 8000 }).length, 9876);
  });

  it("is deterministic and depends on prompt, seed and length", () => {
    const a = synthesizeMusic(base);
    assert.ok(sameSamples(a, synthesizeMusic(base)));
    assert.ok(!sameSamples(a, synthesizeMusic({ ...base, prompt: "calm ambient pads" })));
    assert.ok(!sameSamples(a, synthesizeMusic({ ...base, seed: "beta-music" })));
  });

  it("adds a vocal line for lyrics; [Instrumental] alone renders exactly the instrumental track", () => {
    const opts = { ...base, prompt: "pop ballad", durationSec: 20 };
    const none = synthesizeMusic(opts);
    const inst = synthesizeMusic({ ...opts, lyrics: "[Instrumental]" });
    const inst2 = synthesizeMusic({ ...opts, lyrics: "  [instrumental]\n" });
    const sung = synthesizeMusic({ ...opts, lyrics: LYRICS });
    assert.ok(sameSamples(none, inst));
    assert.ok(sameSamples(none, inst2));
    assert.ok(!sameSamples(none, sung));
    assert.equal(sung.length, none.length);
    assert.ok(rms(sung) > 0.03);
  });
});

describe("synthesizeSfx", () => {
  it("picks a character from the prompt keywords", () => {
    assert.deepEqual(sfxKindsOf("Heavy rain on a roof"), ["rain"]);
    assert.deepEqual(sfxKindsOf("distant thunder and rain"), ["thunder", "rain"]);
    assert.deepEqual(sfxKindsOf("explosion"), ["explosion"]);
    assert.deepEqual(sfxKindsOf("footsteps on gravel"), ["footsteps"]);
    assert.deepEqual(sfxKindsOf("a laser blaster"), ["laser"]);
    assert.deepEqual(sfxKindsOf("something indescribable"), ["generic"]);
  });

  it("honours 0.5 and 22 s and picks 2..6 s when no duration is given", () => {
    const click = synthesizeSfx({ prompt: "click", durationSec: 0.5, promptInfluence: 0.3, sampleRate: 8000 });
    assert.equal(click.length, 4000);
    const long = synthesizeSfx({ prompt: "wind", durationSec: 22, promptInfluence: 1, sampleRate: 16000 });
    assert.equal(long.length, 22 * 16000);
    assert.ok(rms(long) > 0.02);
    for (const prompt of ["dog bark", "door slam", "sci-fi laser", "ocean waves"]) {
      const d = sfxDurationSec(prompt, null);
      assert.ok(d >= 2 && d <= 6, `${d}`);
      const s = synthesizeSfx({ prompt, durationSec: null, promptInfluence: 0.5, sampleRate: 8000 });
      assert.equal(s.length, Math.round(d * 8000));
    }
    assert.equal(sfxDurationSec("anything", 3.3), 3.3);
  });

  it("produces normalized, deterministic audio for every character", () => {
    const prompts = [
      "rain",
      "wind",
      "river water",
      "campfire",
      "explosion",
      "thunder",
      "door knock",
      "footsteps",
      "clock ticking",
      "beep",
      "alarm",
      "police siren",
      "laser",
      "whoosh",
      "birds",
      "car engine",
      "church bell",
      "applause",
      "glass shatter",
      "mysterious texture",
    ];
    for (const prompt of prompts) {
      const opts = { prompt, durationSec: 1.5, promptInfluence: 0.3, sampleRate: 16000 };
      const s = synthesizeSfx(opts);
      assert.ok(peak(s) > 0.85 && peak(s) <= 0.9, `${prompt}: peak ${peak(s)}`);
      assert.ok(rms(s) > 0.005, `${prompt}: rms ${rms(s)}`);
      assert.ok(sameSamples(s, synthesizeSfx(opts)), prompt);
    }
    const a = synthesizeSfx({ prompt: "wind", durationSec: 1, promptInfluence: 0.3, sampleRate: 16000 });
    const b = synthesizeSfx({ prompt: "wind", durationSec: 1, promptInfluence: 0.9, sampleRate: 16000 });
    assert.ok(!sameSamples(a, b));
  });
});

describe("SimulatedMediaUpstream", () => {
  const up = make();

  for (const format of AUDIO_FORMATS) {
    it(`answers music and sfx as valid ${format}`, async () => {
      const m = await up.music(musicReq({ format, lengthMs: 1500 }));
      assert.equal(m.kind, "bytes");
      assert.equal(m.contentType, contentTypeOf(format));
      assert.equal(m.durationSec, 1.5);
      await assertAudio(m.body, format, 1.5);
      const s = await up.sfx(sfxReq({ format, durationSec: 0.5 }));
      assert.equal(s.contentType, contentTypeOf(format));
      assert.equal(s.durationSec, 0.5);
      await assertAudio(s.body, format, 0.5);
    });
  }

  it("alpha-music honours lengthMs (1 s and 30 s)", async () => {
    for (const lengthMs of [1000, 30000]) {
      const r = await up.music(musicReq({ lengthMs }));
      assert.equal(r.durationSec, lengthMs / 1000);
      await assertAudio(r.body, "mp3_44100_128", lengthMs / 1000);
    }
  });

  it("beta music takes its length from the lyrics, longer for more lines", async () => {
    const beta = (lyrics: string | null) =>
      up.music(
        musicReq({
          model: "beta-music",
          prompt: "indie pop",
          lyrics,
          lengthFromLyrics: true,
          format: "pcm_16000",
        }),
      );
    const short = await beta("Hello world\nGoodbye moon");
    const long = await beta(LYRICS);
    assert.equal(short.durationSec, musicDurationFromLyrics("Hello world\nGoodbye moon", "indie pop"));
    assert.equal(long.durationSec, musicDurationFromLyrics(LYRICS, "indie pop"));
    assert.ok(long.durationSec > short.durationSec);
    await assertAudio(long.body, "pcm_16000", long.durationSec);
    const inst = await beta("[Instrumental]");
    const plain = await beta(null);
    assert.ok(inst.durationSec >= 30 && inst.durationSec <= 90);
    assert.equal(inst.durationSec, plain.durationSec);
    assert.deepEqual(inst.body, plain.body); // no vocal line at all
    assert.notDeepEqual(long.body.subarray(0, 1000), new Uint8Array(1000));
  });

  it("sfx lengths: 0.5 s, 22 s and the model's pick", async () => {
    const a = await up.sfx(sfxReq({ durationSec: 0.5, prompt: "click" }));
    await assertAudio(a.body, "mp3_44100_128", 0.5);
    const b = await up.sfx(sfxReq({ durationSec: 22, prompt: "thunder storm", format: "mp3_22050_32" }));
    assert.equal(b.durationSec, 22);
    await assertAudio(b.body, "mp3_22050_32", 22);
    const c = await up.sfx(sfxReq({ durationSec: null, prompt: "glass shatter", format: "pcm_22050" }));
    assert.equal(c.durationSec, sfxDurationSec("glass shatter", null));
    await assertAudio(c.body, "pcm_22050", c.durationSec);
  });

  it("is deterministic across instances and across the inline and worker paths", async () => {
    const inline = make({ inlineMaxMs: 1e9 });
    const worker = make({ inlineMaxMs: 0 });
    const reqs = [
      musicReq({ lengthMs: 1000 }),
      musicReq({ model: "beta-music", lyrics: "la la la", lengthMs: 1000 }),
    ];
    for (const r of reqs) {
      const a = await inline.music(r);
      assert.deepEqual((await worker.music(r)).body, a.body);
      assert.deepEqual((await make().music(r)).body, a.body);
    }
    const s = await inline.sfx(sfxReq());
    assert.deepEqual((await worker.sfx(sfxReq())).body, s.body);
    assert.notDeepEqual((await worker.sfx(sfxReq({ promptInfluence: 0.9 }))).body, s.body);
    const pro = await worker.music(musicReq({ lengthMs: 1000, model: "beta-music-pro" }));
    assert.notDeepEqual(pro.body, (await worker.music(reqs[0])).body);
  });

  it("renders a long track in a worker without blocking the event loop, then caches it", async () => {
    const u = make();
    const req = musicReq({ prompt: "epic cinematic orchestral", lengthMs: 60000 });
    assert.equal(u.stats().workers, 0, "workers start on first use, not at construction");
    const pending = Promise.all([u.music(req), u.music(req), u.music(req)]);
    // One rendering, handed to a worker (an inline one would be finished and cached by now).
    assert.deepEqual(u.stats(), { cacheEntries: 0, cacheBytes: 0, inflight: 1, workers: 1 });
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    const results = await pending;
    clearInterval(timer);
    assert.ok(ticks > 0, "the event loop ran while the track rendered");
    for (const r of results) assert.equal(r.body, results[0].body); // one shared rendering
    assert.equal(u.stats().cacheEntries, 1);
    assert.equal(u.stats().inflight, 0);
    await assertAudio(results[0].body, "mp3_44100_128", 60);
    const again = u.music(req);
    assert.equal(u.stats().inflight, 0); // served from the cache, no new rendering
    assert.equal((await again).body, results[0].body);
  });

  it("simulate=fail throws a non-retryable UpstreamError", async () => {
    for (const p of [up.music(musicReq({ simulate: "fail" })), up.sfx(sfxReq({ simulate: "fail" }))]) {
      await assert.rejects(p, (err: unknown) => err instanceof UpstreamError && !err.retryable);
    }
  });

  it("simulate=slow and hang add at least 1 s at latency scale 0", async () => {
    const t0 = performance.now();
    const [slow, hang, sfx] = await Promise.all([
      up.music(musicReq({ simulate: "slow" })),
      up.music(musicReq({ simulate: "hang" })),
      up.sfx(sfxReq({ simulate: "slow" })),
    ]);
    assert.ok(performance.now() - t0 >= 990);
    assert.deepEqual(slow.body, hang.body);
    assert.equal(sfx.durationSec, 1);
  });

  it("aborts: rejects with the signal's reason and stops waiting", async () => {
    const pre = AbortSignal.abort();
    await assert.rejects(up.music(musicReq(), pre), { name: "AbortError" });
    const ac = new AbortController();
    const p = up.music(musicReq({ simulate: "slow", lengthMs: 3000 }), ac.signal);
    setTimeout(() => ac.abort(), 50);
    await assert.rejects(p, { name: "AbortError" });
    const ac2 = new AbortController();
    const p2 = up.sfx(sfxReq({ simulate: "hang" }), ac2.signal);
    ac2.abort(new Error("client went away"));
    await assert.rejects(p2, /client went away/);
    // A worker rendering nobody waits for any more is dropped or finishes into the cache.
    const w = make({ inlineMaxMs: 0, latencyScale: 1 });
    const ac3 = new AbortController();
    const p3 = w.music(musicReq({ lengthMs: 1000 }), ac3.signal);
    setTimeout(() => ac3.abort(), 20);
    await assert.rejects(p3, { name: "AbortError" });
  });

  it("latency scales with latencyScale", async () => {
    const u = make({ latencyScale: 0.02 });
    await u.sfx(sfxReq({ durationSec: 0.5 })); // warm the cache
    const t0 = performance.now();
    await u.sfx(sfxReq({ durationSec: 0.5 }));
    const sfxMs = performance.now() - t0;
    assert.ok(sfxMs >= 35, `${sfxMs}`);
    await u.music(musicReq({ lengthMs: 1000 }));
    const t1 = performance.now();
    await u.music(musicReq({ lengthMs: 1000 }));
    const musicMs = performance.now() - t1;
    assert.ok(musicMs >= 190, `${musicMs}`);
  });

  it("rejects impossible lengths and fails after close", async () => {
    const u = make();
    await assert.rejects(u.music(musicReq({ lengthMs: 0 })), UpstreamError);
    await u.close();
    await assert.rejects(u.music(musicReq()), UpstreamError);
  });
});
