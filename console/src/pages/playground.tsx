/**
 * The playground (issue 15): try the gateway from the browser. This file is the speech tool and the parts
 * every tool shares: the playground key panel (the generation endpoints take an API key, not the session,
 * so the playground makes and keeps one: playground/key.ts), the tool tabs, the model list, the audio
 * player with the call's cost and request id, and the readable error of a refused call (D1; a 402 says
 * "top up"). The other tools are pages of their own under `pages/playground/`, one route each, so the URL
 * says which tool is open. The speech tool has two modes: a file from one call (`POST /v1/audio/speech`),
 * or "Stream (realtime)": the text sent word by word over the speech socket and played as it arrives
 * (D42, playground/realtime.ts).
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, type ReactNode, useEffect, useId, useMemo, useState } from "react";
import { Link, NavLink } from "react-router";
import { api, GatewayError, type Schemas, unwrap } from "../api.ts";
import { ErrorNotice, Loading, QueryView } from "../components/states.tsx";
import { Usd } from "../components/values.tsx";
import { formatUsd, plural } from "../format.ts";
import type { PageMeta } from "../pages.ts";
import { useSession } from "../session.ts";
import { type AudioClip, speak, type SpeechBody } from "./playground/calls.ts";
import { can } from "../roles.ts";
import { createPlaygroundKey, PLAYGROUND_KEY_NAME, type PlaygroundKey, playgroundScope, savePlaygroundKey, usePlaygroundKey } from "./playground/key.ts";
import { DEFAULT_PACE_MS, PACES, type StreamFailure, type StreamState, useSpeechStream } from "./playground/realtime.ts";

export const page: PageMeta = { path: "/playground", title: "Playground: speech", navLabel: "Playground", group: "customer", order: 40, section: "build" };

const TOOLS = [
  { path: "/playground", label: "Speech" },
  { path: "/playground/audio", label: "Music and sound effects" },
  { path: "/playground/media", label: "Image and video" },
  { path: "/playground/chat", label: "Chat" },
];

/** The tabs between the playground's tools (links: each tool has its own URL). */
function ToolTabs() {
  return (
    <nav aria-label="Playground tools" className="playground-tabs">
      <ul>
        {TOOLS.map((t) => (
          <li key={t.path}>
            <NavLink to={t.path} end>
              {t.label}
            </NavLink>
          </li>
        ))}
      </ul>
    </nav>
  );
}

type KeyRow = Awaited<ReturnType<typeof listKeys>>["data"][number];
function listKeys() {
  return unwrap(api.GET("/v1/auth/keys"));
}

/** Offers to create the playground key: its mode, and what keeping it in this browser means. */
function CreateKeyForm({ scope, reason }: { scope: string; reason: "none" | "revoked" }) {
  const queryClient = useQueryClient();
  const [mode, setMode] = useState<PlaygroundKey["mode"]>("test");
  const create = useMutation({
    mutationFn: () => createPlaygroundKey(scope, mode),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: ["keys"] }),
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate();
  };
  return (
    <article aria-labelledby="pg-key-title">
      <h2 id="pg-key-title">{reason === "revoked" ? "The playground key no longer works" : "A key for the playground"}</h2>
      {reason === "revoked" ? (
        <p role="alert" className="notice error">
          The key this browser kept for the playground was revoked or refused by the gateway. Make a new one to go on.
        </p>
      ) : (
        <p>
          Generation calls need an API key, not your sign-in session. The playground makes a key of its own, named “{PLAYGROUND_KEY_NAME}”.
        </p>
      )}
      <form onSubmit={submit}>
        <fieldset>
          <legend>Key mode</legend>
          <label>
            <input type="radio" name="pg-key-mode" value="test" checked={mode === "test"} onChange={() => setMode("test")} />
            Test: simulated answers, priced but no money moves
          </label>
          <label>
            <input type="radio" name="pg-key-mode" value="live" checked={mode === "live"} onChange={() => setMode("live")} />
            Live: real calls, charged to your balance
          </label>
        </fieldset>
        <KeyStorageNote />
        {create.isError && <ErrorNotice error={create.error} />}
        <button type="submit" aria-busy={create.isPending} disabled={create.isPending}>
          Create the playground key
        </button>
      </form>
    </article>
  );
}

function KeyStorageNote() {
  return (
    <p>
      <small>
        The key's secret is kept in this browser's local storage (for you and this organization only), so the playground keeps working after a reload. It is listed on
        the <Link to="/keys">Keys page</Link> like any other key; revoke it there to stop it.
      </small>
    </p>
  );
}

/**
 * The playground key panel and tool tabs, then `children(key)` once this browser holds a working key. A
 * key no longer among the organization's active keys (revoked on the Keys page) counts as gone. The key
 * is the selected organization's (one per user and organization, key.ts); a viewer, who makes no calls
 * (D41), gets a sentence instead of the tools.
 */
export function PlaygroundShell({ children }: { children: (key: PlaygroundKey) => ReactNode }) {
  const session = useSession();
  const me = useQuery({ queryKey: ["me"], queryFn: () => unwrap(api.GET("/v1/auth/me")) });
  const scope = me.data && session.userId ? playgroundScope(session.userId, me.data.org_id) : null;
  const key = usePlaygroundKey(scope);
  const keys = useQuery({ queryKey: ["keys"], queryFn: listKeys, enabled: key !== null });
  const row: KeyRow | undefined = key ? keys.data?.data.find((k) => k.key_id === key.keyId) : undefined;
  const revoked = key !== null && keys.isSuccess && row === undefined;

  let body: ReactNode;
  if (me.isError) body = <ErrorNotice error={me.error} retry={() => void me.refetch()} />;
  else if (scope === null || me.data === undefined) body = <Loading />;
  else if (!can(me.data.role, "call"))
    body = (
      <p className="notice">
        Your role in this organization is {me.data.role}: it reads usage, the ledger and jobs, and makes no calls. Ask an admin for the member role to
        use the playground.
      </p>
    );
  else if (key === null) body = <CreateKeyForm scope={scope} reason="none" />;
  else if (revoked) body = <CreateKeyForm scope={scope} reason="revoked" />;
  else
    body = (
      <>
        <p className="playground-key">
          Calls use the key <strong>{PLAYGROUND_KEY_NAME}</strong>
          {row && <code>{` ${row.prefix}…`}</code>} in <span className={`mode mode-${key.mode}`}>{key.mode}</span> mode
          {key.mode === "test" ? ": simulated answers, no money moves." : ": charged to your balance."}{" "}
          <button type="button" className="secondary outline small" onClick={() => savePlaygroundKey(scope, null)}>
            Forget this key
          </button>
        </p>
        <KeyStorageNote />
        {children(key)}
      </>
    );
  return (
    <>
      <ToolTabs />
      {body}
    </>
  );
}

/** The catalog's models with `capability` (`GET /v1/models?capability=`), sorted by id. */
export function useModels(capability: string) {
  return useQuery({
    queryKey: ["models", { capability }],
    queryFn: () => unwrap(api.GET("/v1/models", { params: { query: { capability } } })),
    select: (d) => d.data.filter((m) => !m.legacy).sort((a, b) => a.id.localeCompare(b.id)),
    staleTime: 5 * 60_000,
  });
}

/** The public price list (`GET /v1/pricing`), for the price line under a model select. */
export function usePricing() {
  return useQuery({ queryKey: ["pricing"], queryFn: () => unwrap(api.GET("/v1/pricing")), staleTime: 5 * 60_000 });
}

export type MediaPriceRow = NonNullable<ReturnType<typeof usePricing>["data"]>["media"][number];

/** The price of a media model in words, from its catalog row (spec "GET /v1/pricing"). */
export function priceText(row: MediaPriceRow | undefined): string {
  if (!row) return "";
  const d = row.detail as Record<string, number | null | Record<string, number>>;
  const markup = typeof d.markup === "number" ? d.markup : 1;
  switch (row.pricing_mode) {
    case "per-char":
      return `${formatUsd((d.provider_cost_per_kchar as number) * markup)} per 1,000 characters`;
    case "per-second":
      return `${formatUsd(d.provider_cost_per_sec as number)} per second`;
    case "per-image":
      return `${formatUsd((d.provider_cost as number) * markup)} per image`;
    case "per-song":
      return `${formatUsd(d.usd_per_song as number)} per song`;
    case "per-call":
      return `${formatUsd(row.usd_per_call)} per call`;
    default:
      return `about ${formatUsd(row.usd_per_call)} per typical call`;
  }
}

/** The price line of model `id`. */
export function PriceLine({ id }: { id: string }) {
  const pricing = usePricing();
  const text = priceText(pricing.data?.media.find((m) => m.id === id));
  return text ? <small>Price: {text}</small> : null;
}

type ModelRow = NonNullable<ReturnType<typeof useModels>["data"]>[number];

/**
 * Whether a speech model is served on the realtime socket (`realtime` of `GET /v1/models`, D42; not yet in
 * the generated client's types); undefined when the catalog does not say.
 */
export function isRealtimeModel(m: ModelRow | undefined): boolean | undefined {
  const v = (m as { realtime?: unknown } | undefined)?.realtime;
  return typeof v === "boolean" ? v : undefined;
}

/**
 * A labelled model select fed by {@link useModels}; calls `onChange` with the first model once loaded.
 * `optionNote` adds a word to a model's option (e.g. "realtime").
 */
export function ModelSelect({
  capability,
  value,
  onChange,
  label = "Model",
  optionNote,
}: {
  capability: string;
  value: string;
  onChange: (id: string) => void;
  label?: string;
  optionNote?: (m: ModelRow) => string;
}) {
  const id = useId();
  const models = useModels(capability);
  const first = models.data?.[0]?.id;
  useEffect(() => {
    if (!value && first) onChange(first);
  }, [value, first, onChange]);
  return (
    <QueryView query={models} isEmpty={(d) => d.length === 0} empty="No model of this kind is available." loadingLabel="Loading the models…">
      {(list) => (
        <div>
          <label htmlFor={id}>{label}</label>
          <select id={id} value={value} onChange={(e) => onChange(e.target.value)}>
            {list.map((m) => (
              <option key={m.id} value={m.id}>
                {m.id}
                {m.tier_min ? ` (tier ${m.tier_min}+)` : ""}
                {optionNote?.(m) ?? ""}
              </option>
            ))}
          </select>
        </div>
      )}
    </QueryView>
  );
}

/** The number of characters the gateway counts (Unicode code points after NFC). */
export function visibleLength(text: string): number {
  return [...text.normalize("NFC")].length;
}

/** A refused call in words: the D1 message, "top up" with a link on a 402, a new key on a 401. */
export function CallError({ error }: { error: unknown }) {
  const session = useSession();
  const queryClient = useQueryClient();
  if (error instanceof GatewayError && error.status === 402)
    return (
      <div role="alert" className="notice error">
        <p>
          {error.message} Your balance is too low for this call: <Link to="/">top up your balance</Link> and try again.
        </p>
        {error.requestId && <small>Request id: {error.requestId}</small>}
      </div>
    );
  if (error instanceof GatewayError && error.status === 401)
    return (
      <div role="alert" className="notice error">
        <p>The gateway refused the playground key: it was revoked, or it expired.</p>
        <button
          type="button"
          onClick={() => {
            if (session.userId) savePlaygroundKey(session.userId, null);
            void queryClient.invalidateQueries({ queryKey: ["keys"] });
          }}
        >
          Make a new playground key
        </button>
      </div>
    );
  return <ErrorNotice error={error} />;
}

/** Ids (`req_...`, `job_...`) are long unbroken words: they may wrap anywhere rather than widen a phone's page. */
export const BREAK_ANYWHERE = { overflowWrap: "anywhere" } as const;

/** What an audio call answered: a player, its cost and request id, a download link. */
export function ClipPlayer({ clip, title }: { clip: AudioClip; title: string }) {
  const playable = clip.contentType.includes("mpeg");
  return (
    <article aria-label={title}>
      {playable ? (
        <audio controls src={clip.url} aria-label={title} style={{ width: "100%" }} />
      ) : (
        <p>The browser cannot play {clip.contentType}; download the file instead.</p>
      )}
      <dl className="limits">
        <dt>Cost</dt>
        <dd>
          <Usd amount={clip.costUsd} />
          {clip.testMode && " (test key: no money moved)"}
        </dd>
        {clip.balanceUsd !== null && (
          <>
            <dt>Balance after</dt>
            <dd>
              <Usd amount={clip.balanceUsd} />
            </dd>
          </>
        )}
        {clip.model && (
          <>
            <dt>Model</dt>
            <dd>{clip.model}</dd>
          </>
        )}
        <dt>Request id</dt>
        <dd>
          <code style={BREAK_ANYWHERE}>
            {clip.requestId ?? "—"}
          </code>
        </dd>
      </dl>
      <a href={clip.url} download={clip.fileName}>
        Download {clip.fileName}
      </a>
    </article>
  );
}

/**
 * The latest clip of a tool, with its blob URL revoked when replaced or when the tool goes away (a blob
 * URL keeps its audio in memory until then).
 */
export function useClip(): [AudioClip | null, (clip: AudioClip | null) => void] {
  const [clip, setClip] = useState<AudioClip | null>(null);
  useEffect(() => () => {
    if (clip) URL.revokeObjectURL(clip.url);
  }, [clip]);
  return [clip, setClip];
}

/** Audio formats of the speech, music and sound effect endpoints; only MP3 plays in every browser. */
export const AUDIO_FORMATS: { value: NonNullable<SpeechBody["response_format"]>; label: string }[] = [
  { value: "mp3_44100_128", label: "MP3, 44.1 kHz, 128 kbit/s" },
  { value: "mp3_44100_192", label: "MP3, 44.1 kHz, 192 kbit/s" },
  { value: "mp3_22050_32", label: "MP3, 22.05 kHz, 32 kbit/s" },
  { value: "pcm_16000", label: "PCM 16 kHz (download only)" },
  { value: "pcm_22050", label: "PCM 22.05 kHz (download only)" },
  { value: "pcm_24000", label: "PCM 24 kHz (download only)" },
  { value: "pcm_44100", label: "PCM 44.1 kHz (download only)" },
  { value: "ulaw_8000", label: "µ-law 8 kHz (download only)" },
];

/** A labelled select of {@link AUDIO_FORMATS}. */
export function FormatSelect({ value, onChange, label = "Format" }: { value: string; onChange: (v: NonNullable<SpeechBody["response_format"]>) => void; label?: string }) {
  const id = useId();
  return (
    <div>
      <label htmlFor={id}>{label}</label>
      <select id={id} value={value} onChange={(e) => onChange(e.target.value as NonNullable<SpeechBody["response_format"]>)}>
        {AUDIO_FORMATS.map((f) => (
          <option key={f.value} value={f.value}>
            {f.label}
          </option>
        ))}
      </select>
    </div>
  );
}

/** Most characters of a speech input (spec "POST /v1/audio/speech"). */
const SPEECH_MAX_CHARS = 5000;
/** Most voices listed at once in the picker; the search narrows the rest. */
const VOICES_SHOWN = 200;

type Voice = Schemas["Voice"];

function voiceText(v: Voice): string {
  const facets = v.labels ? Object.values(v.labels).join(", ") : Array.isArray(v.description) ? v.description.join(", ") : "";
  return facets ? `${v.name} (${facets})` : v.name;
}

/** A voice picker for `provider`'s library: a search box, the matching voices, a preview when there is one. */
function VoicePicker({ pgKey, provider, value, onChange }: { pgKey: PlaygroundKey; provider: "alpha" | "beta"; value: string; onChange: (id: string) => void }) {
  const [search, setSearch] = useState("");
  const voices = useQuery({
    queryKey: ["voices", provider, pgKey.keyId],
    queryFn: () => unwrap(api.GET("/v1/audio/voices", { params: { query: { provider } }, headers: { authorization: `Bearer ${pgKey.secret}` } })),
    staleTime: 5 * 60_000,
  });
  const all = voices.data?.data;
  const matching = useMemo(() => {
    const q = search.trim().toLowerCase();
    return (all ?? []).filter((v) => !q || voiceText(v).toLowerCase().includes(q) || v.voice_id.toLowerCase() === q);
  }, [all, search]);
  const shown = matching.slice(0, VOICES_SHOWN);
  const selected = all?.find((v) => v.voice_id === value);
  // The choice follows the list: a voice of the other library, or none yet, becomes the first match.
  useEffect(() => {
    if (all && all.length > 0 && !all.some((v) => v.voice_id === value)) onChange(all[0].voice_id);
  }, [all, value, onChange]);
  return (
    <QueryView query={voices} isEmpty={(d) => d.data.length === 0} empty="This voice library is empty." loadingLabel="Loading the voices…">
      {() => (
        <fieldset>
          <legend>Voice ({provider} library)</legend>
          <label htmlFor="pg-voice-search">Search voices</label>
          <input id="pg-voice-search" type="search" value={search} placeholder="name, accent, gender…" onChange={(e) => setSearch(e.target.value)} />
          <label htmlFor="pg-voice">Voice</label>
          <select id="pg-voice" value={value} onChange={(e) => onChange(e.target.value)}>
            {selected && !shown.includes(selected) && <option value={selected.voice_id}>{voiceText(selected)}</option>}
            {shown.map((v) => (
              <option key={v.voice_id} value={v.voice_id}>
                {voiceText(v)}
              </option>
            ))}
          </select>
          <small>
            {matching.length === 0
              ? "No voice matches the search."
              : matching.length > shown.length
                ? `The first ${shown.length} of ${plural(matching.length, "matching voice")}; search to narrow them.`
                : `${plural(matching.length, "voice")}.`}
          </small>
          {selected?.preview_url && (
            <p>
              <span id="pg-voice-preview">Preview of {selected.name}</span>
              <audio controls preload="none" src={selected.preview_url} aria-labelledby="pg-voice-preview" style={{ width: "100%" }} />
            </p>
          )}
        </fieldset>
      )}
    </QueryView>
  );
}

type SpeechMode = "file" | "stream";

/** Stream phases during which the socket is (or is about to be) open. */
const LIVE_PHASES: readonly StreamState["phase"][] = ["connecting", "streaming", "settling"];

function SpeechTool({ pgKey }: { pgKey: PlaygroundKey }) {
  const [mode, setMode] = useState<SpeechMode>("file");
  const [model, setModel] = useState("");
  const [voice, setVoice] = useState("");
  const [text, setText] = useState("");
  const [format, setFormat] = useState<NonNullable<SpeechBody["response_format"]>>("mp3_44100_128");
  const [pace, setPace] = useState<number>(DEFAULT_PACE_MS);
  const [clip, setClip] = useClip();
  const models = useModels("speech");
  const stream = useSpeechStream();
  const provider = model.startsWith("beta-") ? "beta" : "alpha";
  const length = visibleLength(text);
  const tooLong = length > SPEECH_MAX_CHARS;
  const realtime = isRealtimeModel(models.data?.find((m) => m.id === model));
  const streaming = stream.state !== null && LIVE_PHASES.includes(stream.state.phase);
  const run = useMutation({
    mutationFn: () => speak(pgKey, { model: model as SpeechBody["model"], input: text, voice_id: voice, response_format: format }),
    onSuccess: (c) => setClip(c),
  });
  const chooseMode = (next: SpeechMode) => {
    setMode(next);
    // The stream's panel goes away: its audio stops with it.
    if (next === "file") stream.stop();
    // Streaming starts on a model with a socket; another one can still be picked (the gateway refuses it).
    if (next === "stream" && realtime === false) {
      const first = models.data?.find((m) => isRealtimeModel(m) === true);
      if (first) setModel(first.id);
    }
  };
  const submit = (e: FormEvent) => {
    e.preventDefault();
    // In the click's handler: the stream's AudioContext may play (the browser's autoplay policy).
    if (mode === "stream") stream.start({ key: pgKey, model, voiceId: voice, text, paceMs: pace, modelRealtime: realtime });
    else run.mutate();
  };
  const busy = mode === "stream" ? streaming : run.isPending;
  return (
    <section aria-labelledby="pg-speech-title">
      <h2 id="pg-speech-title">Text to speech</h2>
      <form onSubmit={submit}>
        <fieldset>
          <legend>Mode</legend>
          <label>
            <input type="radio" name="pg-speech-mode" value="file" checked={mode === "file"} disabled={streaming} onChange={() => chooseMode("file")} />
            Generate a file (one call)
          </label>
          <label>
            <input type="radio" name="pg-speech-mode" value="stream" checked={mode === "stream"} disabled={streaming} onChange={() => chooseMode("stream")} />
            Stream (realtime)
          </label>
          {mode === "stream" && (
            <small>
              The text is sent word by word over a WebSocket, as a language model writes it, and the speech plays as it arrives (PCM 24 kHz). One usage
              record per stream: the characters spoken.
            </small>
          )}
        </fieldset>
        <ModelSelect capability="speech" value={model} onChange={setModel} optionNote={mode === "stream" ? (m) => (isRealtimeModel(m) ? " (realtime)" : "") : undefined} />
        {model && <PriceLine id={model} />}
        {mode === "stream" && realtime === false && (
          <p className="notice">
            <small>{model} has no realtime socket: the gateway refuses to stream it. Pick a model marked “realtime”, or generate a file.</small>
          </p>
        )}
        {model && <VoicePicker pgKey={pgKey} provider={provider} value={voice} onChange={setVoice} />}
        <label htmlFor="pg-speech-text">Text to speak</label>
        <textarea
          id="pg-speech-text"
          rows={4}
          value={text}
          required
          readOnly={streaming}
          aria-invalid={tooLong || undefined}
          aria-describedby="pg-speech-count"
          onChange={(e) => setText(e.target.value)}
        />
        <small id="pg-speech-count" aria-live="polite">
          {length.toLocaleString()} / {SPEECH_MAX_CHARS.toLocaleString()} characters{tooLong ? ": too long, shorten the text" : ""}
        </small>
        {mode === "file" ? (
          <FormatSelect value={format} onChange={setFormat} />
        ) : (
          <PaceSelect value={pace} onChange={setPace} disabled={streaming} />
        )}
        {mode === "file" && run.isError && <CallError error={run.error} />}
        <div role="group">
          <button type="submit" aria-busy={busy} disabled={busy || !model || !voice || text.trim() === "" || tooLong}>
            {mode === "stream" ? "Speak (stream)" : "Generate speech"}
          </button>
          {mode === "stream" && (streaming || stream.audioLeft) && (
            <button type="button" className="secondary outline" onClick={stream.stop}>
              Stop
            </button>
          )}
        </div>
      </form>
      {mode === "file" && run.isPending && <Loading label="Speaking…" />}
      {mode === "file" && clip && <ClipPlayer clip={clip} title="Generated speech" />}
      {mode === "stream" && stream.state && <StreamView state={stream.state} played={stream.played} gaps={stream.gaps} />}
    </section>
  );
}

/** The pace the words are written at (stream mode). */
function PaceSelect({ value, onChange, disabled }: { value: number; onChange: (ms: number) => void; disabled: boolean }) {
  const id = useId();
  return (
    <div>
      <label htmlFor={id}>Writing pace</label>
      <select id={id} value={value} disabled={disabled} onChange={(e) => onChange(Number(e.target.value))}>
        {PACES.map((p) => (
          <option key={p.ms} value={p.ms}>
            {p.label}
          </option>
        ))}
      </select>
    </div>
  );
}

/** A term and its value; the value is labelled by its term (tests find it with `getByLabel(term)`). */
function Stat({ label, children }: { label: string; children: ReactNode }) {
  const id = useId();
  return (
    <>
      <dt id={id}>{label}</dt>
      <dd aria-labelledby={id}>{children}</dd>
    </>
  );
}

function seconds(s: number): string {
  return `${s.toFixed(1)} s`;
}

/** A failed stream in words, as {@link CallError} words a refused call; a balance run out says "top up". */
function StreamError({ failure }: { failure: StreamFailure }) {
  const topUp = failure.code === "insufficient_balance" || failure.code === "quota_exceeded" || /top up/i.test(failure.message);
  return (
    <div role="alert" className="notice error">
      <p>
        {failure.message}
        {topUp && (
          <>
            {" "}
            <Link to="/">Top up your balance</Link> and try again.
          </>
        )}
      </p>
      <small>
        {failure.kind === "refused" ? "The socket did not open." : `The socket closed with code ${failure.closeCode ?? "—"}`}
        {failure.code ? ` (${failure.code}).` : failure.kind === "refused" ? "" : "."}
      </small>
    </div>
  );
}

const PHASE_TEXT: Record<StreamState["phase"], string> = {
  connecting: "Connecting…",
  streaming: "Streaming…",
  settling: "Streaming ended; reading the cost…",
  done: "Done",
  stopped: "Stopped: the socket is closed",
  failed: "Failed",
};

/** A stream: its state, counters, cost and balance after, and the words as their alignment arrives. */
function StreamView({ state: s, played, gaps }: { state: StreamState; played: number; gaps: number }) {
  const rec = s.record;
  const chars = rec?.units.characters;
  // The word playing: the last one whose start the played audio passed.
  const playedMs = played * 1000;
  const live = LIVE_PHASES.includes(s.phase);
  const allPlayed = !live && played >= s.audioSeconds - 0.01;
  let current = -1;
  if (played > 0 && !allPlayed) for (let i = 0; i < s.words.length && s.words[i].startMs <= playedMs; i++) current = i;
  let status = PHASE_TEXT[s.phase];
  if (s.phase === "done" && rec) status += `: ${chars === undefined ? "— characters" : plural(chars, "character")}, ${rec.cost_usd === null ? "cost not known yet" : formatUsd(rec.cost_usd)}`;
  return (
    <article aria-labelledby="pg-stream-title">
      <h3 id="pg-stream-title">Realtime speech</h3>
      <p role="status" aria-busy={live}>
        {status}
      </p>
      {s.failure && <StreamError failure={s.failure} />}
      {s.settleError !== null && <ErrorNotice error={s.settleError} />}
      <dl className="limits">
        <Stat label="Model">{s.model}</Stat>
        <Stat label="Words sent">
          {s.wordsSent} of {s.wordsTotal}
        </Stat>
        <Stat label="Audio chunks">{s.chunks}</Stat>
        <Stat label="Audio received">{seconds(s.audioSeconds)}</Stat>
        <Stat label="Played">{seconds(Math.min(played, s.audioSeconds))}</Stat>
        <Stat label="First audio">{s.firstAudio ? `after ${s.firstAudio.afterWords} of ${plural(s.wordsTotal, "word")}, ${s.firstAudio.afterMs} ms` : "—"}</Stat>
        <Stat label="Gaps in the speech">{gaps}</Stat>
        {rec && (
          <>
            <Stat label="Characters billed">{chars?.toLocaleString() ?? "—"}</Stat>
            <Stat label="Cost">
              <Usd amount={rec.cost_usd} />
              {rec.mode === "test" && " (test key: no money moved)"}
            </Stat>
            <Stat label="Balance after">
              <Usd amount={s.balanceUsd} />
            </Stat>
            <Stat label="Socket open">{rec.duration_ms === null || rec.duration_ms === undefined ? "—" : seconds(rec.duration_ms / 1000)}</Stat>
            <Stat label="Close code">{rec.close_code ?? s.closeCode ?? "—"}</Stat>
            <Stat label="Request id">
              <Link to={`/usage/${rec.id}`} style={BREAK_ANYWHERE}>
                <code>{rec.id}</code>
              </Link>
            </Stat>
          </>
        )}
      </dl>
      <section aria-labelledby="pg-stream-words-title">
        <h4 id="pg-stream-words-title">Spoken words</h4>
        {s.words.length === 0 ? (
          <p className="empty">{live ? "The words show here as their audio arrives." : "No words were spoken."}</p>
        ) : (
          <p className="spoken-words">
            {s.words.map((w, i) => (
              <span key={i}>
                {i === current ? <mark aria-current="true">{w.text}</mark> : <span className={i > current && !allPlayed ? "ahead" : undefined}>{w.text}</span>}{" "}
              </span>
            ))}
          </p>
        )}
      </section>
    </article>
  );
}

export default function SpeechPlayground() {
  return <PlaygroundShell>{(key) => <SpeechTool pgKey={key} />}</PlaygroundShell>;
}
