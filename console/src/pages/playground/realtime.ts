/**
 * The playground's realtime speech (D42): a typed text sent word by word over the text-to-speech socket
 * `GET /v1/audio/speech/{voice_id}/stream-input` (ElevenLabs' protocol), and the audio played as it
 * arrives.
 *
 * - **The socket.** A browser cannot set headers on a WebSocket, so the playground key goes in the query
 *   (`authorization=Bearer <key>`, as D42 allows). Messages: `{"text": " "}` with a short chunk schedule
 *   first (so the first audio comes after some 50 characters, while later words are still being sent),
 *   then each word with its trailing space at a steady pace (as a language model writes), then
 *   `{"text": ""}`: the gateway speaks what is buffered and closes with 1000.
 * - **The audio.** `pcm_24000`: 16-bit little-endian mono samples, each message's audio decoded into an
 *   `AudioBuffer` and scheduled on one `AudioContext` right after the previous one ({@link PcmPlayer}), so
 *   the chunks play back to back; a chunk that comes after the queue ran dry starts at once (a gap,
 *   counted).
 * - **The words.** Each audio message's `alignment` (the characters as sent, their start times from the
 *   first audio) grows the list of spoken words; the word playing is the one whose start the played
 *   audio passed.
 * - **The money.** One usage record per socket (`realtime: true`), named by the `request_id` of the socket's
 *   final (or error) message, as no header of the upgrade reaches a browser: after the close that record of
 *   the playground key (`GET /v1/requests?key_id=`; without a `request_id`, the newest realtime one that was
 *   not there before the socket opened), once settled, gives the characters billed and the cost;
 *   `GET /v1/auth/me` the new balance.
 * - **Refusals.** After the upgrade, `{"error", "message"}` then 1008 (policy) or 1011 (upstream); the
 *   message is shown as is. Before it, the gateway answers HTTP (400 `realtime_not_supported`, 402, 429...)
 *   but a browser sees only a failed socket (close 1006, never open): the playground then says what it can
 *   know (a model without realtime support, a balance at zero) and what else refuses a socket.
 */
import { useQueryClient } from "@tanstack/react-query";
import { useCallback, useEffect, useRef, useState } from "react";
import { api, type paths, unwrap } from "../../api.ts";
import type { PlaygroundKey } from "./key.ts";

/** The audio format asked for: 16-bit little-endian mono PCM at 24 kHz. */
export const STREAM_FORMAT = "pcm_24000";
const SAMPLE_RATE = 24_000;

/**
 * `generation_config.chunk_length_schedule`: the first chunk is generated once 50 characters are buffered
 * (the smallest the gateway takes), so speech starts early; later chunks are longer.
 */
const CHUNK_SCHEDULE = [50, 90, 120, 160];

/** How far ahead of the audio clock the first chunk (or one after the queue ran dry) starts, seconds. */
const START_LEAD_S = 0.1;

/** The paces the words can be written at: milliseconds between two words. */
export const PACES = [
  { ms: 50, label: "Fast: 20 words a second" },
  { ms: 150, label: "Like a language model: about 7 words a second" },
  { ms: 400, label: "Slow: about 2 words a second" },
] as const;
export const DEFAULT_PACE_MS = 150;

/** A usage record as `GET /v1/requests` returns it, with the realtime fields of D42. */
export type RealtimeRecord = paths["/v1/requests"]["get"]["responses"][200]["content"]["application/json"]["data"][number] & {
  realtime?: boolean;
  duration_ms?: number | null;
  contexts?: number | null;
  close_code?: number | null;
};

/** The words the user typed, each with its trailing space, as they are sent. */
export function wordsOf(text: string): string[] {
  return text
    .normalize("NFC")
    .split(/\s+/)
    .filter((w) => w.length > 0)
    .map((w) => `${w} `);
}

/** The URL of the socket: same origin (ws or wss), the model, the format and the key in the query. */
export function speechSocketUrl(key: PlaygroundKey, voiceId: string, model: string): string {
  const url = new URL(`/v1/audio/speech/${encodeURIComponent(voiceId)}/stream-input`, window.location.origin);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  url.searchParams.set("model_id", model);
  url.searchParams.set("output_format", STREAM_FORMAT);
  url.searchParams.set("authorization", `Bearer ${key.secret}`);
  return url.toString();
}

/** The bytes of a base64 string. */
function fromBase64(b64: string): Uint8Array {
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/**
 * Plays 16-bit little-endian mono PCM as it arrives: each piece becomes an `AudioBuffer` scheduled where
 * the previous one ends, on one `AudioContext` (made in the click that starts the stream, so the
 * browser's autoplay policy lets it play).
 */
export class PcmPlayer {
  readonly #context: AudioContext;
  readonly #rate: number;
  /** Audio-clock time where the next buffer starts. */
  #next = 0;
  /** An odd byte left from the previous piece (half a sample). */
  #carry: number | null = null;
  /** Where and how long each buffer plays (audio-clock seconds). */
  readonly #segments: { start: number; duration: number }[] = [];
  readonly #sources = new Set<AudioBufferSourceNode>();
  #received = 0;
  #gaps = 0;

  constructor(rate = SAMPLE_RATE) {
    this.#rate = rate;
    this.#context = new AudioContext();
    void this.#context.resume().catch(() => undefined);
  }

  /** Queues `bytes` after what is queued; returns the seconds of audio they held. */
  enqueue(bytes: Uint8Array): number {
    if (bytes.length === 0 || this.#context.state === "closed") return 0;
    let data = bytes;
    if (this.#carry !== null) {
      data = new Uint8Array(bytes.length + 1);
      data[0] = this.#carry;
      data.set(bytes, 1);
      this.#carry = null;
    }
    const samples = data.length >> 1;
    if (data.length % 2 === 1) this.#carry = data[data.length - 1];
    if (samples === 0) return 0;
    const view = new DataView(data.buffer, data.byteOffset, samples * 2);
    const floats = new Float32Array(samples);
    for (let i = 0; i < samples; i++) floats[i] = view.getInt16(i * 2, true) / 32768;
    const buffer = this.#context.createBuffer(1, samples, this.#rate);
    buffer.copyToChannel(floats, 0);
    const source = this.#context.createBufferSource();
    source.buffer = buffer;
    source.connect(this.#context.destination);
    const now = this.#context.currentTime;
    // Back to back while the queue holds audio; after it ran dry (or for the first piece), a short lead.
    let start = this.#next;
    if (start < now + 0.005) {
      if (this.#segments.length > 0) this.#gaps++;
      start = now + START_LEAD_S;
    }
    source.start(start);
    this.#sources.add(source);
    source.onended = () => this.#sources.delete(source);
    this.#segments.push({ start, duration: buffer.duration });
    this.#next = start + buffer.duration;
    this.#received += buffer.duration;
    return buffer.duration;
  }

  /** Seconds of audio received. */
  get receivedSeconds(): number {
    return this.#received;
  }

  /** Seconds of audio played so far (the audio clock past each buffer's start). */
  get playedSeconds(): number {
    const now = this.#context.currentTime;
    let played = 0;
    for (const s of this.#segments) {
      if (now <= s.start) break;
      played += Math.min(now - s.start, s.duration);
    }
    return played;
  }

  /** Times the queue ran dry before a piece came (a gap in the speech). */
  get gaps(): number {
    return this.#gaps;
  }

  /** Stops the audio at once and frees the audio device. */
  close(): void {
    for (const s of this.#sources) {
      try {
        s.stop();
      } catch {
        // Not started yet or already stopped.
      }
    }
    this.#sources.clear();
    if (this.#context.state !== "closed") void this.#context.close().catch(() => undefined);
  }
}

/** Where a stream is. */
export type StreamPhase = "connecting" | "streaming" | "settling" | "done" | "stopped" | "failed";

/** Why a stream failed, in words. */
export interface StreamFailure {
  /** `refused`: the socket never opened; `error`: the gateway's error message; `closed`: a close without one. */
  kind: "refused" | "error" | "closed";
  /** The gateway's error code (`insufficient_balance`, `provider_error`...) or a close's meaning. */
  code: string | null;
  message: string;
  closeCode: number | null;
}

/** A spoken word: its text and when it starts, ms from the first audio (the alignment's clock). */
export interface SpokenWord {
  text: string;
  startMs: number;
}

/** What the page shows of a stream. */
export interface StreamState {
  phase: StreamPhase;
  model: string;
  wordsTotal: number;
  wordsSent: number;
  /** Audio messages with audio. */
  chunks: number;
  audioSeconds: number;
  /** When the first audio came: after how many words sent, and ms after the socket opened. */
  firstAudio: { afterWords: number; afterMs: number } | null;
  words: SpokenWord[];
  closeCode: number | null;
  failure: StreamFailure | null;
  /** The socket's usage record, once read after the close. */
  record: RealtimeRecord | null;
  balanceUsd: number | null;
  /** Why the cost could not be read, when it could not. */
  settleError: unknown;
}

/** A server message of `stream-input`. */
interface ServerMessage {
  audio?: string | null;
  isFinal?: boolean | null;
  alignment?: { chars?: string[]; charStartTimesMs?: number[]; charDurationsMs?: number[] } | null;
  error?: string;
  message?: string;
  /** The socket's request id, in its final and error messages (its usage record). */
  request_id?: string;
}

/** Close codes in words (when no error message said more). */
function closeMeaning(code: number): string {
  switch (code) {
    case 1001:
      return "The gateway is restarting; the stream ended. Try again in a moment.";
    case 1008:
      return "The gateway ended the stream for a policy reason (the key, the balance or a limit).";
    case 1011:
      return "The speech provider failed; the gateway ended the stream. Nothing is charged for the audio that did not come.";
    case 1006:
      return "The connection to the gateway was lost.";
    default:
      return `The stream closed with code ${code}.`;
  }
}

/** The realtime usage records of `key`, newest first (one page). */
async function realtimeRecords(key: PlaygroundKey): Promise<RealtimeRecord[]> {
  const page = await unwrap(api.GET("/v1/requests", { params: { query: { key_id: key.keyId, mode: key.mode, limit: "20" } } }));
  return (page.data as RealtimeRecord[]).filter((r) => r.realtime === true);
}

/**
 * The usage record of the socket that just closed: the newest realtime record of `key` other than
 * `previousId` (the newest one before the socket opened), once settled. Asked again a few times while it
 * is still settling; null when none shows.
 */
async function recordAfterClose(key: PlaygroundKey, previousId: string | null, requestId: string | null): Promise<RealtimeRecord | null> {
  let last: RealtimeRecord | null = null;
  for (let attempt = 0; attempt < 8; attempt++) {
    const records = await realtimeRecords(key);
    // The socket named its record (`request_id` of its final or error message): that one; else the newest new one.
    const newest = requestId !== null ? records.find((r) => r.id === requestId) : records[0];
    last = newest && newest.id !== previousId ? newest : null;
    if (last && last.status !== "processing" && last.cost_usd !== null) return last;
    await new Promise((r) => setTimeout(r, 150 * (attempt + 1)));
  }
  return last;
}

/** What starts a stream. */
export interface StreamRequest {
  key: PlaygroundKey;
  model: string;
  voiceId: string;
  text: string;
  paceMs: number;
  /** Whether the catalog says the model has a socket (`realtime` of `GET /v1/models`), for the refusal's words. */
  modelRealtime: boolean | undefined;
}

/**
 * One stream: the socket, the words sent at their pace, the player, and what the page shows (`onChange`
 * gets every new state). `stop()` (or the page going away) closes the socket and silences the audio.
 */
export class SpeechStream {
  readonly #req: StreamRequest;
  readonly #onChange: (s: StreamState) => void;
  readonly #player: PcmPlayer;
  readonly #words: string[];
  #ws: WebSocket | null = null;
  #state: StreamState;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #openedAt = 0;
  #opened = false;
  #stopped = false;
  #disposed = false;
  #error: { code: string; message: string } | null = null;
  /** The socket's request id, once a final or error message named it. */
  #requestId: string | null = null;
  /** The word being built from alignment characters. */
  #partial: SpokenWord | null = null;

  /** Call from the click that starts the stream (the `AudioContext` is made here). */
  constructor(req: StreamRequest, onChange: (s: StreamState) => void) {
    this.#req = req;
    this.#onChange = onChange;
    this.#player = new PcmPlayer();
    this.#words = wordsOf(req.text);
    this.#state = {
      phase: "connecting",
      model: req.model,
      wordsTotal: this.#words.length,
      wordsSent: 0,
      chunks: 0,
      audioSeconds: 0,
      firstAudio: null,
      words: [],
      closeCode: null,
      failure: null,
      record: null,
      balanceUsd: null,
      settleError: null,
    };
    void this.#start();
  }

  get state(): StreamState {
    return this.#state;
  }

  /** Seconds of audio played so far. */
  get playedSeconds(): number {
    return this.#player.playedSeconds;
  }

  /** Times the speech paused because the next audio was late. */
  get gaps(): number {
    return this.#player.gaps;
  }

  #set(patch: Partial<StreamState>): void {
    if (this.#disposed) return;
    this.#state = { ...this.#state, ...patch };
    this.#onChange(this.#state);
  }

  async #start(): Promise<void> {
    // The newest realtime record before this socket, so the one after the close is told apart.
    let previousId: string | null = null;
    try {
      previousId = (await realtimeRecords(this.#req.key))[0]?.id ?? null;
    } catch {
      // Without it, the newest realtime record after the close is taken.
    }
    if (this.#stopped || this.#disposed) return;
    const ws = new WebSocket(speechSocketUrl(this.#req.key, this.#req.voiceId, this.#req.model));
    this.#ws = ws;
    ws.onopen = () => {
      this.#opened = true;
      this.#openedAt = performance.now();
      this.#set({ phase: "streaming" });
      ws.send(JSON.stringify({ text: " ", generation_config: { chunk_length_schedule: CHUNK_SCHEDULE } }));
      this.#sendNext();
    };
    ws.onmessage = (e: MessageEvent) => {
      if (typeof e.data !== "string") return;
      let msg: ServerMessage;
      try {
        msg = JSON.parse(e.data) as ServerMessage;
      } catch {
        return;
      }
      this.#message(msg);
    };
    ws.onclose = (e: CloseEvent) => void this.#closed(e.code, previousId);
  }

  /** Sends the next word, then waits the pace; after the last word, `{"text": ""}` ends the input. */
  #sendNext(): void {
    const ws = this.#ws;
    if (ws === null || ws.readyState !== WebSocket.OPEN || this.#stopped) return;
    const i = this.#state.wordsSent;
    if (i >= this.#words.length) {
      ws.send(JSON.stringify({ text: "" }));
      return;
    }
    ws.send(JSON.stringify({ text: this.#words[i] }));
    this.#set({ wordsSent: i + 1 });
    this.#timer = setTimeout(() => this.#sendNext(), this.#req.paceMs);
  }

  #message(msg: ServerMessage): void {
    if (typeof msg.request_id === "string") this.#requestId = msg.request_id;
    if (typeof msg.error === "string") {
      this.#error = { code: msg.error, message: msg.message ?? msg.error };
      return;
    }
    const patch: Partial<StreamState> = {};
    if (typeof msg.audio === "string" && msg.audio.length > 0) {
      const seconds = this.#player.enqueue(fromBase64(msg.audio));
      patch.chunks = this.#state.chunks + 1;
      patch.audioSeconds = this.#state.audioSeconds + seconds;
      if (this.#state.firstAudio === null) patch.firstAudio = { afterWords: this.#state.wordsSent, afterMs: Math.round(performance.now() - this.#openedAt) };
    }
    const a = msg.alignment;
    if (a?.chars && a.charStartTimesMs && a.chars.length > 0) {
      // `#partial`, when not null, is the last word (a chunk may end inside a word).
      const words = [...this.#state.words];
      a.chars.forEach((ch, i) => {
        if (/\s/.test(ch)) {
          this.#partial = null;
          return;
        }
        if (this.#partial === null) {
          this.#partial = { text: ch, startMs: a.charStartTimesMs![i] ?? 0 };
          words.push(this.#partial);
        } else {
          this.#partial = { ...this.#partial, text: this.#partial.text + ch };
          words[words.length - 1] = this.#partial;
        }
      });
      patch.words = words;
    }
    if (Object.keys(patch).length > 0) this.#set(patch);
  }

  async #closed(code: number, previousId: string | null): Promise<void> {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#ws = null;
    let failure: StreamFailure | null = null;
    if (!this.#opened) {
      if (this.#stopped) return this.#set({ phase: "stopped", closeCode: code });
      failure = { kind: "refused", code: null, message: await this.#refusalWords(), closeCode: code };
      // Nothing was opened, so nothing was held or charged.
      return this.#set({ phase: "failed", closeCode: code, failure });
    }
    if (this.#error !== null && !(code === 1000 && this.#stopped)) failure = { kind: "error", code: this.#error.code, message: this.#error.message, closeCode: code };
    else if (code !== 1000 && code !== 1005 && !this.#stopped) failure = { kind: "closed", code: null, message: closeMeaning(code), closeCode: code };
    this.#set({ phase: "settling", closeCode: code, failure });
    let record: RealtimeRecord | null = null;
    let balanceUsd: number | null = null;
    let settleError: unknown = null;
    try {
      record = await recordAfterClose(this.#req.key, previousId, this.#requestId);
      balanceUsd = (await unwrap(api.GET("/v1/auth/me"))).balance_usd;
      if (record === null) settleError = new Error("The usage record of the stream did not show; see the Usage page.");
    } catch (err) {
      settleError = err;
    }
    this.#set({ phase: failure ? "failed" : this.#stopped ? "stopped" : "done", record, balanceUsd, settleError });
  }

  /** Why a socket may have been refused before it opened (the browser is not told). */
  async #refusalWords(): Promise<string> {
    const { model, modelRealtime } = this.#req;
    if (modelRealtime === false)
      return `The gateway refused the socket: ${model} does not support realtime speech. Pick a model marked “realtime”, or generate a file with this one.`;
    let balance: number | null = null;
    try {
      balance = (await unwrap(api.GET("/v1/auth/me"))).balance_usd;
    } catch {
      // The balance is only a hint here.
    }
    if (balance !== null && balance <= 0 && this.#req.key.mode === "live") return "The gateway refused the socket: the balance is too low to start speaking. Top up your balance and try again.";
    return "The gateway refused the socket before it opened (the browser is not told why). It refuses a revoked key, a balance too low for one character, a voice of another provider's library than the model's, or too many sockets at once for your tier.";
  }

  /**
   * Silences the audio; while the socket is open (or opening), stops sending and closes it (the stream is
   * then "stopped", and what was spoken until then is charged). After the close, only silences.
   */
  stop(): void {
    this.#player.close();
    if (this.#stopped) return;
    const ws = this.#ws;
    if (ws !== null && (ws.readyState === WebSocket.CONNECTING || ws.readyState === WebSocket.OPEN)) {
      this.#stopped = true;
      if (this.#timer !== null) clearTimeout(this.#timer);
      ws.close(1000, "stopped");
    } else if (ws === null && this.#state.phase === "connecting") {
      // Still looking up the previous record: the socket never opens, nothing to settle.
      this.#stopped = true;
      this.#set({ phase: "stopped" });
    }
  }

  /** The page went away: stop, and report nothing more. */
  dispose(): void {
    this.stop();
    this.#disposed = true;
  }
}

/**
 * The playground's stream as React state: `start()` (call it from the click that starts it), `stop()`,
 * the state, the played seconds updated while the audio plays, and whether audio is left to play. The
 * page going away stops it.
 */
export function useSpeechStream() {
  const queryClient = useQueryClient();
  const current = useRef<SpeechStream | null>(null);
  const [state, setState] = useState<StreamState | null>(null);
  const [played, setPlayed] = useState(0);
  const [gaps, setGaps] = useState(0);
  /** Stop was pressed: the audio is silenced (the socket closed, if it was open). */
  const [silenced, setSilenced] = useState(false);

  useEffect(() => () => current.current?.dispose(), []);

  const start = useCallback(
    (req: StreamRequest) => {
      current.current?.dispose();
      setPlayed(0);
      setGaps(0);
      setSilenced(false);
      const stream = new SpeechStream(req, (s) => {
        setState(s);
        if (s.phase === "done" || s.phase === "failed" || s.phase === "stopped") {
          // The balance moved: the overview and usage pages read it again.
          void queryClient.invalidateQueries({ queryKey: ["me"] });
          void queryClient.invalidateQueries({ queryKey: ["requests"] });
        }
      });
      current.current = stream;
      setState(stream.state);
    },
    [queryClient],
  );
  const stop = useCallback(() => {
    current.current?.stop();
    setSilenced(true);
  }, []);

  // The played seconds, a few times a second while there is audio left to play.
  const received = state?.audioSeconds ?? 0;
  const phase = state?.phase;
  useEffect(() => {
    const stream = current.current;
    if (stream === null || phase === undefined || phase === "stopped" || silenced) return;
    const tick = setInterval(() => {
      const p = stream.playedSeconds;
      setPlayed(p);
      setGaps(stream.gaps);
      if (phase !== "connecting" && phase !== "streaming" && phase !== "settling" && p >= received - 0.001) clearInterval(tick);
    }, 100);
    return () => clearInterval(tick);
  }, [phase, received, silenced]);

  /** Audio is still queued to play (Stop silences it). */
  const audioLeft = state !== null && !silenced && state.phase !== "stopped" && state.audioSeconds - played > 0.05;
  return { state, played, gaps, audioLeft, start, stop };
}
