import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import type { RealtimeAudioFormat, TranscriptionEvent, TranscriptionStreamRequest } from "../../../src/upstreams/realtime.ts";
import { SIMULATED_WORDS } from "../../../src/upstreams/simulator/audio-text.ts";
import { linearToUlaw } from "../../../src/upstreams/simulator/encode.ts";
import { SimulatedRealtimeTranscription, type SimulatedTranscriptionStream } from "../../../src/upstreams/simulator/realtime-transcription.ts";
import { createRng } from "../../../src/upstreams/simulator/rng.ts";
import { createSimulatedAudioUpstream, type SimulatedAudioUpstream } from "../../../src/upstreams/simulator/speech.ts";
import { speechCharStarts, speechDurationSec } from "../../../src/upstreams/simulator/speech/synthesize.ts";
import { type AudioFormat, UpstreamError } from "../../../src/upstreams/types.ts";
import { concatBytes } from "../../../src/upstreams/util.ts";

const PARAGRAPHS = [
  "The gateway speaks in real time. Every chunk of text becomes audio as soon as it arrives, and the words come back in order. ",
  "Numbers like 42 and 1999 are spoken too;  so are names such as Zoë and Łódź.\nQuestions? Of course! ",
  "A last paragraph, cut in the middle of words by the chunk schedule, still comes back as one text.",
];

/** Cuts `text` into chunks of these lengths (code points), cycling: some cuts fall inside words. */
function chunksOf(text: string, lengths: readonly number[] = [37, 50, 23, 61]): string[] {
  const cps = Array.from(text);
  const out: string[] = [];
  for (let i = 0, k = 0; i < cps.length; k++) {
    const n = lengths[k % lengths.length];
    out.push(cps.slice(i, i + n).join(""));
    i += n;
  }
  return out;
}

function normalize(text: string): string {
  return text.trim().split(/\s+/u).join(" ");
}

const upstreams: SimulatedAudioUpstream[] = [];
function makeSpeech(inlineMaxSec?: number): SimulatedAudioUpstream {
  const up = createSimulatedAudioUpstream({ latencyScale: 0, publicBaseUrl: "http://localhost:8080", inlineMaxSec });
  upstreams.push(up);
  return up;
}
after(async () => {
  await Promise.all(upstreams.map((u) => u.close()));
});
const speech = makeSpeech();

/** The audio of `chunks` spoken one after the other on one realtime speech stream. */
async function tts(format: AudioFormat, chunks: readonly string[], up = speech): Promise<Uint8Array> {
  const s = await up.openSpeechStream({ model: "alpha-flash-v2-5", voiceId: "JBFqnCBsd6RMkjVDRZzb", format, voiceSettings: {}, simulate: null });
  const parts: Uint8Array[] = [];
  for (const c of chunks) for await (const p of s.synthesize(c)) parts.push(p.audio);
  await s.close();
  return concatBytes(parts);
}

function treq(over: Partial<TranscriptionStreamRequest> = {}): TranscriptionStreamRequest {
  return {
    model: "host1-transcribe-1",
    audioFormat: "pcm_16000",
    commitStrategy: "manual",
    vad: { silenceThresholdSecs: 1.5, threshold: 0.4, minSpeechDurationMs: 100, minSilenceDurationMs: 100 },
    languageCode: null,
    includeTimestamps: false,
    includeLanguageDetection: false,
    simulate: null,
    ...over,
  };
}

const source = new SimulatedRealtimeTranscription({ latencyScale: 0 });

/** An open stream and the events it reported so far. */
async function open(over: Partial<TranscriptionStreamRequest> = {}): Promise<{ stream: SimulatedTranscriptionStream; events: TranscriptionEvent[] }> {
  const events: TranscriptionEvent[] = [];
  const stream = await source.openTranscriptionStream(treq(over), (e) => events.push(e));
  return { stream, events };
}

/** Sends `bytes` in slices of these sizes, cycling (odd sizes split 16-bit samples between sends). */
function feed(stream: SimulatedTranscriptionStream, bytes: Uint8Array, slices: readonly number[] = [331, 1, 977, 2, 4099, 7]): void {
  for (let i = 0, k = 0; i < bytes.length; k++) {
    const n = slices[k % slices.length];
    stream.send(bytes.subarray(i, i + n), false);
    i += n;
  }
}

/** Lets the microtask queue deliver the events. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

function committed(events: readonly TranscriptionEvent[]) {
  return events.filter((e) => e.type === "committed");
}

/** `seconds` of silence in `format`. */
function silence(format: RealtimeAudioFormat, seconds: number): Uint8Array {
  const rate = Number(format.split("_")[1]);
  const n = Math.round(seconds * rate);
  return format === "ulaw_8000" ? new Uint8Array(n).fill(0xff) : new Uint8Array(2 * n);
}

/** `seconds` of white noise of peak `amplitude` (16-bit units) in `format`. */
function noise(format: RealtimeAudioFormat, seconds: number, amplitude: number, seed: string): Uint8Array {
  const rate = Number(format.split("_")[1]);
  const n = Math.round(seconds * rate);
  const r = createRng(seed);
  const ulaw = format === "ulaw_8000";
  const out = new Uint8Array(ulaw ? n : 2 * n);
  for (let i = 0; i < n; i++) {
    const v = Math.round((r() * 2 - 1) * amplitude);
    if (ulaw) out[i] = linearToUlaw(v);
    else {
      out[2 * i] = v & 0xff;
      out[2 * i + 1] = (v >> 8) & 0xff;
    }
  }
  return out;
}

/** Every partial is a prefix of the text it grows into, and no two consecutive partials are equal. */
function assertPartialsGrow(events: readonly TranscriptionEvent[]): void {
  let last = "";
  let partials = 0;
  for (const e of events) {
    if (e.type === "partial") {
      assert.notEqual(e.text, last);
      assert.ok(e.text.length > 0);
      last = e.text;
      partials++;
    } else if (e.type === "committed") {
      assert.ok(e.text.startsWith(last), `partial ${JSON.stringify(last)} then committed ${JSON.stringify(e.text)}`);
      last = "";
    }
  }
  assert.ok(partials > 0);
}

describe("SimulatedRealtimeTranscription: the simulator hears its own speech", () => {
  for (const format of ["pcm_16000", "pcm_24000", "ulaw_8000", "pcm_44100"] as const) {
    it(`${format}, manual commits: each paragraph comes back as its text`, async () => {
      const { stream, events } = await open({ audioFormat: format });
      for (const p of PARAGRAPHS) {
        feed(stream, await tts(format, chunksOf(p)));
        stream.send(new Uint8Array(0), true);
      }
      await stream.close();
      await settle();
      assert.deepEqual(
        committed(events).map((e) => e.text),
        PARAGRAPHS.map(normalize),
      );
      assertPartialsGrow(events);
      assert.deepEqual(events.at(-1), { type: "closed", error: null });
      for (const e of committed(events)) {
        assert.equal(e.words, null);
        assert.equal(e.languageCode, null);
      }
    });

    it(`${format}, vad: silence after each paragraph commits it, and silence alone never does`, async () => {
      const { stream, events } = await open({ audioFormat: format, commitStrategy: "vad" });
      feed(stream, silence(format, 2));
      for (const p of PARAGRAPHS) {
        feed(stream, await tts(format, chunksOf(p)));
        feed(stream, silence(format, 1.7));
      }
      feed(stream, silence(format, 5));
      await stream.close();
      await settle();
      assert.deepEqual(
        committed(events).map((e) => e.text),
        PARAGRAPHS.map(normalize),
      );
      assertPartialsGrow(events);
    });
  }

  it("reveals words progressively as the audio of each word arrives (the synthesizer's timeline)", async () => {
    const text = "One two three four five six seven eight nine ten. ";
    const audio = await tts("pcm_16000", [text]);
    // When each word's last character ends, seconds from the chunk's start.
    const starts = speechCharStarts(text, 16000);
    const wordEnds: number[] = [];
    Array.from(text).forEach((ch, i, all) => {
      if (!/\s/u.test(ch) && (i + 1 === all.length || /\s/u.test(all[i + 1]))) wordEnds.push(starts[i + 1] / 16000);
    });
    const { stream, events } = await open();
    const step = 1600; // 0.05 s
    let partials = 0;
    for (let i = 0; i < audio.length; i += step) {
      stream.send(audio.subarray(i, i + step), false);
      await settle();
      const heard = Math.min(audio.length, i + step) / 32000;
      const last = events.filter((e) => e.type === "partial").at(-1);
      const n = last?.type === "partial" ? last.text.split(" ").length : 0;
      // Never a word before its end; every word once its end and a 20 ms frame (plus the 31 samples the reader keeps) are in.
      assert.ok(n === 0 || wordEnds[n - 1] <= heard, `${n} words at ${heard} s`);
      assert.ok(n >= wordEnds.filter((e) => e <= heard - 0.025).length, `${n} words at ${heard} s`);
      partials = events.filter((e) => e.type === "partial").length;
    }
    assert.equal(partials, 10, "one partial per word");
    stream.send(new Uint8Array(0), true);
    await settle();
    assert.equal(committed(events)[0].text, normalize(text));
  });

  it("gives word timestamps (Scribe's items) and the language when asked", async () => {
    const audio = await tts("pcm_24000", chunksOf(PARAGRAPHS[0]));
    const second = await tts("pcm_24000", ["And then more words. "]);
    const { stream, events } = await open({ audioFormat: "pcm_24000", includeTimestamps: true });
    feed(stream, audio);
    stream.send(new Uint8Array(0), true);
    feed(stream, second);
    stream.send(new Uint8Array(0), true);
    await settle();
    const [c1, c2] = committed(events);
    for (const c of [c1, c2]) {
      assert.equal(c.languageCode, null);
      const words = c.words ?? [];
      assert.deepEqual(
        words.filter((w) => w.type === "word").map((w) => w.text).join(" "),
        c.text,
      );
      for (let i = 0; i < words.length; i++) {
        assert.equal(words[i].type, i % 2 === 0 ? "word" : "spacing");
        assert.ok(words[i].end >= words[i].start);
        if (i > 0) assert.equal(words[i].start, words[i - 1].end);
      }
    }
    const audioSec = audio.length / 2 / 24000;
    // Seconds from the stream's first audio: the first paragraph ends with its audio, the second follows it.
    assert.ok(Math.abs((c1.words ?? []).at(-1)!.end - audioSec) < 0.1);
    assert.equal((c1.words ?? [])[0].start, 0);
    assert.ok(Math.abs((c2.words ?? [])[0].start - audioSec) < 0.01);

    for (const [languageCode, expected] of [[null, "en"], ["fra", "fra"]] as const) {
      const o = await open({ includeLanguageDetection: true, languageCode });
      feed(o.stream, await tts("pcm_16000", ["Bonjour. "]));
      o.stream.send(new Uint8Array(0), true);
      await settle();
      const c = committed(o.events)[0];
      assert.equal(c.languageCode, expected);
      assert.ok(Array.isArray(c.words), "words come with the language detection too");
    }
  });

  it("hears speech rendered on the workers too (long chunks)", async () => {
    const viaWorker = makeSpeech(0);
    const text = PARAGRAPHS.join("");
    const audio = await tts("ulaw_8000", [text], viaWorker);
    const { stream, events } = await open({ audioFormat: "ulaw_8000" });
    feed(stream, audio, [8191]);
    stream.send(new Uint8Array(0), true);
    await settle();
    assert.equal(committed(events)[0].text, normalize(text));
  });

  it("is deterministic and does not depend on how the bytes are cut", async () => {
    const audio = concatBytes([await tts("pcm_16000", chunksOf(PARAGRAPHS[1])), noise("pcm_16000", 1.3, 9000, "tail")]);
    const runs: TranscriptionEvent[][] = [];
    for (const slices of [[audio.length], [1], [333, 1, 5]]) {
      const { stream, events } = await open({ includeTimestamps: true });
      feed(stream, audio, slices);
      stream.send(new Uint8Array(0), true);
      await settle();
      runs.push(committed(events));
    }
    assert.deepEqual(runs[1], runs[0]);
    assert.deepEqual(runs[2], runs[0]);
    // The spoken text, then pseudo-words for the noise after it.
    const text = runs[0][0].type === "committed" ? runs[0][0].text : "";
    assert.ok(text.startsWith(normalize(PARAGRAPHS[1])));
    assert.ok(text.length > normalize(PARAGRAPHS[1]).length);
  });
});

describe("SimulatedRealtimeTranscription: silence and other sounds", () => {
  for (const format of ["pcm_16000", "ulaw_8000"] as const) {
    it(`${format}: silence and near-silence give no words: nothing with vad, an empty commit with manual`, async () => {
      for (const quiet of [silence(format, 4), noise(format, 4, 30, "hiss")]) {
        const vad = await open({ audioFormat: format, commitStrategy: "vad" });
        feed(vad.stream, quiet);
        await vad.stream.close();
        await settle();
        assert.deepEqual(vad.events, [{ type: "closed", error: null }]);

        const manual = await open({ audioFormat: format, includeTimestamps: true });
        feed(manual.stream, quiet);
        manual.stream.send(new Uint8Array(0), true);
        manual.stream.send(new Uint8Array(0), true); // nothing since the last commit: empty again
        await settle();
        assert.deepEqual(manual.events, [
          { type: "committed", text: "", words: [], languageCode: null },
          { type: "committed", text: "", words: [], languageCode: null },
        ]);
      }
    });

    it(`${format}: other sounds give deterministic pseudo-words, about 2.5 per voiced second`, async () => {
      const loud = noise(format, 3, 12000, "noise a");
      const texts: string[] = [];
      for (const bytes of [loud, loud, noise(format, 3, 12000, "noise b")]) {
        const { stream, events } = await open({ audioFormat: format });
        feed(stream, bytes);
        stream.send(new Uint8Array(0), true);
        await settle();
        const c = committed(events);
        assert.equal(c.length, 1);
        texts.push(c[0].text);
        assert.ok(events.some((e) => e.type === "partial"), "partials as the words come");
      }
      const words = texts[0].split(" ");
      assert.ok(words.length >= 6 && words.length <= 9, texts[0]);
      for (const w of words) assert.ok(SIMULATED_WORDS.includes(w), w);
      assert.equal(texts[1], texts[0]);
      assert.notEqual(texts[2], texts[0]);
    });
  }

  it("vad respects the silence threshold and the shortest speech", async () => {
    const format = "pcm_16000";
    const { stream, events } = await open({ commitStrategy: "vad", vad: { silenceThresholdSecs: 1, threshold: 0.4, minSpeechDurationMs: 300, minSilenceDurationMs: 100 } });
    // A 0.1 s click is shorter than the shortest speech: it never opens a segment.
    feed(stream, noise(format, 0.1, 12000, "click"));
    feed(stream, silence(format, 3));
    await settle();
    assert.equal(committed(events).length, 0);
    feed(stream, noise(format, 1, 12000, "speech"));
    feed(stream, silence(format, 0.8)); // below the threshold: the segment goes on
    await settle();
    assert.equal(committed(events).length, 0);
    feed(stream, silence(format, 0.4));
    await settle();
    assert.equal(committed(events).length, 1);
    // The click was forgotten with the silence after it; 1 s of noise gives 2 words of 0.4 s and one of 0.2 s.
    assert.equal(committed(events)[0].text.split(" ").length, 3);
  });

  it("honours a commit sent with vad", async () => {
    const { stream, events } = await open({ commitStrategy: "vad" });
    feed(stream, await tts("pcm_16000", ["Commit me now. "]));
    stream.send(new Uint8Array(0), true);
    feed(stream, silence("pcm_16000", 3));
    await settle();
    assert.deepEqual(committed(events).map((e) => e.text), ["Commit me now."]);
  });
});

describe("SimulatedRealtimeTranscription: lifecycle", () => {
  it("simulate=fail refuses the open, not retryable", async () => {
    await assert.rejects(open({ simulate: "fail" }), (err: unknown) => err instanceof UpstreamError && !err.retryable);
  });

  it("simulate=slow adds at least 1 s to the open at latency scale 0", async () => {
    const t0 = performance.now();
    await open({ simulate: "slow" });
    assert.ok(performance.now() - t0 >= 990);
  });

  it("opens at once at scale 0, honours an aborted signal", async () => {
    await assert.rejects(source.openTranscriptionStream(treq(), () => {}, AbortSignal.abort()), { name: "AbortError" });
  });

  it("close reports closed (error null) after the events already due, then nothing", async () => {
    const { stream, events } = await open();
    feed(stream, await tts("pcm_16000", ["Before the close. "]));
    stream.send(new Uint8Array(0), true);
    await stream.close();
    stream.send(await tts("pcm_16000", ["After the close. "]), true);
    await stream.close();
    await settle();
    assert.deepEqual(events.slice(-2).map((e) => e.type), ["committed", "closed"]);
    assert.deepEqual(events.at(-1), { type: "closed", error: null });
    assert.equal(events.filter((e) => e.type === "closed").length, 1);
  });

  it("delivers events after send returns, in order", async () => {
    const { stream, events } = await open();
    stream.send(await tts("pcm_16000", ["Asynchronous. "]), true);
    assert.equal(events.length, 0);
    await settle();
    assert.deepEqual(events.map((e) => e.type), ["committed"]);
  });

  it("speech timing matches the synthesizer's duration", () => {
    // The transcription derives each chunk's span from its text: the same function the synthesizer uses.
    assert.equal(speechDurationSec("abc"), 0.3);
    assert.equal(speechDurationSec("a".repeat(30)), 2);
  });
});
