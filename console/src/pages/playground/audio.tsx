/**
 * Playground: music (`POST /v1/audio/music`) and sound effects (`POST /v1/audio/sfx`), each with its
 * prompt, length and format, played back with the call's cost and request id (spec "POST /v1/audio/music",
 * "POST /v1/audio/sfx"). The limits below are the spec's; the gateway checks them again.
 */
import { useMutation } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import type { PageMeta } from "../../pages.ts";
import { CallError, ClipPlayer, FormatSelect, ModelSelect, PlaygroundShell, PriceLine, useClip, visibleLength } from "../playground.tsx";
import { composeMusic, makeSoundEffect, type MusicBody, type SfxBody } from "./calls.ts";
import type { PlaygroundKey } from "./key.ts";
import { Loading } from "../../components/states.tsx";

export const page: PageMeta = { path: "/playground/audio", title: "Playground: music and sound effects", group: "customer", order: 41, nav: false };

type Format = NonNullable<MusicBody["response_format"]>;

/** Prompt limits per music model, visible characters (spec "POST /v1/audio/music"). */
const MUSIC_PROMPT_MAX: Record<string, number> = { "alpha-music": 2000, "beta-music": 200, "beta-music-pro": 200 };
const LYRICS_MAX = 600;
const SFX_PROMPT_MAX = 500;

function Counter({ id, length, max }: { id: string; length: number; max: number }) {
  return (
    <small id={id} aria-live="polite">
      {length.toLocaleString()} / {max.toLocaleString()} characters{length > max ? ": too long" : ""}
    </small>
  );
}

function MusicTool({ pgKey }: { pgKey: PlaygroundKey }) {
  const [model, setModel] = useState("");
  const [prompt, setPrompt] = useState("");
  const [lyrics, setLyrics] = useState("");
  const [seconds, setSeconds] = useState("10");
  const [format, setFormat] = useState<Format>("mp3_44100_128");
  const [clip, setClip] = useClip();
  const isAlpha = model === "alpha-music";
  const promptMax = MUSIC_PROMPT_MAX[model] ?? 2000;
  const promptLength = visibleLength(prompt);
  const lyricsLength = visibleLength(lyrics);
  const run = useMutation({
    mutationFn: () => {
      const body: MusicBody = { model: model as MusicBody["model"], prompt, response_format: format };
      if (isAlpha) body.music_length_ms = Math.round(Number(seconds) * 1000);
      else if (lyrics.trim()) body.lyrics = lyrics;
      return composeMusic(pgKey, body);
    },
    onSuccess: (c) => setClip(c),
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    run.mutate();
  };
  const invalid = promptLength > promptMax || lyricsLength > LYRICS_MAX || (isAlpha && prompt.trim() === "");
  return (
    <section aria-labelledby="pg-music-title">
      <h2 id="pg-music-title">Music</h2>
      <form onSubmit={submit}>
        <ModelSelect capability="music" value={model} onChange={setModel} label="Music model" />
        {model && <PriceLine id={model} />}
        <label htmlFor="pg-music-prompt">Music prompt</label>
        <textarea id="pg-music-prompt" rows={3} value={prompt} placeholder="calm lo-fi piano" aria-describedby="pg-music-prompt-count" onChange={(e) => setPrompt(e.target.value)} />
        <Counter id="pg-music-prompt-count" length={promptLength} max={promptMax} />
        {isAlpha ? (
          <>
            <label htmlFor="pg-music-seconds">Length (seconds, 1 to 300)</label>
            <input id="pg-music-seconds" type="number" min={1} max={300} step={1} required value={seconds} onChange={(e) => setSeconds(e.target.value)} />
          </>
        ) : (
          model && (
            <>
              <label htmlFor="pg-music-lyrics">Lyrics (optional; [Instrumental] alone for no vocals)</label>
              <textarea id="pg-music-lyrics" rows={3} value={lyrics} aria-describedby="pg-music-lyrics-count" onChange={(e) => setLyrics(e.target.value)} />
              <Counter id="pg-music-lyrics-count" length={lyricsLength} max={LYRICS_MAX} />
              <small>This model picks the length itself, from the lyrics.</small>
            </>
          )
        )}
        <FormatSelect value={format} onChange={setFormat} label="Music format" />
        {run.isError && <CallError error={run.error} />}
        <button type="submit" aria-busy={run.isPending} disabled={run.isPending || !model || invalid}>
          Generate music
        </button>
      </form>
      {run.isPending && <Loading label="Composing…" />}
      {clip && <ClipPlayer clip={clip} title="Generated music" />}
    </section>
  );
}

function SfxTool({ pgKey }: { pgKey: PlaygroundKey }) {
  const [prompt, setPrompt] = useState("");
  const [seconds, setSeconds] = useState("");
  const [format, setFormat] = useState<Format>("mp3_44100_128");
  const [clip, setClip] = useClip();
  const length = visibleLength(prompt);
  const run = useMutation({
    mutationFn: () => {
      const body: SfxBody = { model: "alpha-sfx", prompt, response_format: format };
      if (seconds.trim() !== "") body.duration_seconds = Number(seconds);
      return makeSoundEffect(pgKey, body);
    },
    onSuccess: (c) => setClip(c),
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    run.mutate();
  };
  return (
    <section aria-labelledby="pg-sfx-title">
      <h2 id="pg-sfx-title">Sound effect</h2>
      <form onSubmit={submit}>
        <PriceLine id="alpha-sfx" />
        <label htmlFor="pg-sfx-prompt">Sound effect prompt</label>
        <textarea id="pg-sfx-prompt" rows={2} required value={prompt} placeholder="a door creaking open" aria-describedby="pg-sfx-count" onChange={(e) => setPrompt(e.target.value)} />
        <Counter id="pg-sfx-count" length={length} max={SFX_PROMPT_MAX} />
        <label htmlFor="pg-sfx-seconds">Length (seconds, 0.5 to 22; empty: the model decides)</label>
        <input id="pg-sfx-seconds" type="number" min={0.5} max={22} step={0.5} value={seconds} onChange={(e) => setSeconds(e.target.value)} />
        <FormatSelect value={format} onChange={setFormat} label="Sound effect format" />
        {run.isError && <CallError error={run.error} />}
        <button type="submit" aria-busy={run.isPending} disabled={run.isPending || prompt.trim() === "" || length > SFX_PROMPT_MAX}>
          Generate sound effect
        </button>
      </form>
      {run.isPending && <Loading label="Generating…" />}
      {clip && <ClipPlayer clip={clip} title="Generated sound effect" />}
    </section>
  );
}

export default function AudioPlayground() {
  return (
    <PlaygroundShell>
      {(key) => (
        <>
          <MusicTool pgKey={key} />
          <SfxTool pgKey={key} />
        </>
      )}
    </PlaygroundShell>
  );
}
