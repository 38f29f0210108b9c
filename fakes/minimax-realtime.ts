/**
 * The T2A WebSocket of the MiniMax fake (`wss://api.minimax.io/ws/v1/t2a_v2`, D42): minimax.ts gives the
 * upgrade handler of {@link createT2aSocketFake} to its loopback server (loopback.ts `onUpgrade`), so one
 * fake answers MiniMax's HTTP API and its socket on the same port. Strict: what MiniMax refuses, this refuses, in MiniMax's shapes.
 *
 * ## Where each fact comes from
 * - [ref] MiniMax's T2A WebSocket reference, platform.minimax.io/docs/api-reference/speech-t2a-websocket,
 *   with its AsyncAPI (`/docs/api-reference/speech/t2a/api/asyncapi.json`): the path; `Authorization:
 *   Bearer`; the events and their fields (`connected_success`, `task_start` -> `task_started`,
 *   `task_continue` -> `task_continued` with hex `data.audio`, `is_final` and `extra_info`, `task_finish`
 *   -> `task_finished`, `task_failed`); "only after receiving `task_started` can you send `task_continue`
 *   or `task_finish`"; several `task_continue` may be sent one after the other; text at most 10,000
 *   characters; `task_finish` finishes the queued texts, then the server closes; after `task_failed` the
 *   connection must be closed; no event within 120 s after the last result closes the connection; `data`
 *   may be null; `model` required, one of `speech-2.8-hd|turbo`, `speech-2.6-*`, `speech-02-*`,
 *   `speech-01-*`; `voice_setting` required with `voice_id`, `speed` [0.5, 2], `vol` (0, 10], `pitch` an
 *   integer [-12, 12], `emotion` of a list; `audio_setting.format` `mp3`, `pcm`, `flac`, `wav`,
 *   `pcmu_raw` (G.711 mu-law, 8 kHz), `pcmu_wav`, `opus` (default mp3), `sample_rate` 8000..44100 (default
 *   32000), `bitrate` 32000..256000 (default 128000), `channel` 1 or 2; `base_resp` codes 1000 unknown,
 *   1001 timeout, 1002 rate limit, 1004 auth, 1039 TPM, 1042 illegal characters, 2013 invalid input,
 *   2201 timeout disconnect, 2202 illegal event, 2203 empty text skipped, 2204 character limit skipped,
 *   2205 request limit.
 * - [lk] LiveKit's MiniMax plugin (livekit/agents `livekit-plugins-minimax/livekit/plugins/minimax/tts.py`):
 *   a client sends `task_continue` per sentence without waiting, appends every `task_continued` audio,
 *   ends a text at `is_final`, treats any non-zero `base_resp` as a failure.
 * - [http] this fake's HTTP side (minimax.ts) and upstreams.md: the model list
 *   ({@link T2aSocketFakeDeps.models}: `FAKE_SPEECH_MODELS`, which also has the `speech-2.5-*-preview` ids
 *   the HTTP reference lists), the voice-setting checks, 2013 `invalid params, model <id> is not supported`
 *   naming the model (D35), 2042 `voice id not exist`, 1004 `login fail: ...`, 1002 `rate limit exceeded(RPM)`.
 * - *unverified* (the fake's choices, where the references say nothing): the fake accepts the upgrade
 *   whatever the key and answers a bad key with `task_failed` 1004 as its first message (the reference's
 *   `task_failed` example carries 1004); an unknown voice fails `task_start` with 2042; event-order
 *   violations and unknown events answer 2202, a message that is not a JSON object 2013; an empty text
 *   2203 and a text of 10,000 characters or more 2204, as `task_failed`; the inactivity close is a
 *   `task_failed` 2201 followed by a close; after every `task_failed` the fake closes (code 1000); only the
 *   final `task_continued` carries `extra_info`; the audio of a text comes in four messages cut at odd byte
 *   offsets (MP3 frames and 16-bit samples split across messages); `pcmu_raw` is made at 8 kHz whatever
 *   `sample_rate` says; `flac`, `wav`, `pcmu_wav` and `opus` are accepted by MiniMax but refused here as
 *   the fake's own limit (2013).
 *
 * ## Exchange
 * ```
 * upgrade (Bearer key)           -> connected_success            (or task_failed 1004 and close)
 * task_start {model, voice_setting, audio_setting}
 *                                -> task_started after `taskStartMs` (a task_continue before it: 2202)
 * task_continue {text}           -> task_continued x4, the 4th `is_final: true` with `extra_info`
 *                                   (texts queue and are spoken in order)
 * task_finish                    -> task_finished after the queue, then close 1000
 * ```
 * Audio: the HTTP fake's tone (about 0.06 s per character, at least 0.3 s) in the asked format, hex.
 *
 * ## Markers
 * In a `task_continue` text (`[fake:NAME]`) or for every socket (`markers` / `setMarkers` of minimax.ts):
 * | marker | effect |
 * |---|---|
 * | `ws-429` | (every socket only) the upgrade is answered HTTP 429 `{base_resp: {1002, "rate limit exceeded(RPM)"}}` with `Retry-After: 1` |
 * | `ws-401` | (every socket only) the upgrade is answered HTTP 401 `{base_resp: {1004, ...}}` (*unverified* shape) |
 * | `ws-500` | (every socket only) the upgrade is answered HTTP 500 `{base_resp: {1000, "unknown error"}}` |
 * | `ws-redirect` | (every socket only) the upgrade is answered 307 to the same path on the fake's other loopback host name |
 * | `echo-key` | (every socket only) the first message is `task_failed` 1004 whose message echoes the key |
 * | `1002`, `1026`, `2013`, `ws-fail-before` | `task_failed` (1002, 1026 `input new_sensitive`, 2013, 1002) before any audio of the text |
 * | `ws-fail-after` | the text's first audio message, then `task_failed` 1000 `unknown error` |
 * | `ws-drop-before` | the connection is destroyed (no close frame) before any audio of the text |
 * | `ws-drop` | the text's first audio message, then the connection is destroyed |
 * | `hang` | the text is never answered |
 * | `slow` | 1 s before each audio message of the text |
 * | `bad-hex` | the text's first audio is not hex |
 * | `mp3-tags` | MP3 audio comes as an MP3 file would: an ID3v2 tag and an Info frame first, an ID3v1 tag last |
 * | `final-null` | the text's audio messages all have `is_final: false`, then `{data: null, is_final: true}` |
 *
 * ## Records
 * {@link T2aSocketFake.sockets}: per connection the upgrade's path and headers (the `authorization` header
 * keeps its scheme only), every client message as parsed (the text when not JSON), every server message
 * (audio replaced by its length) and the close code. The upgrade is also recorded as a `GET` in the fake's
 * `requests`.
 */
import { randomBytes, randomInt } from "node:crypto";
import type http from "node:http";
import type { Socket } from "node:net";
import { WebSocket, WebSocketServer } from "ws";
import type { RawData } from "ws";
import { isJsonObject, markersOf, recordAuthorizationScheme } from "./loopback.ts";
import type { LoopbackFakeRequest, LoopbackUpgradeHandler } from "./loopback.ts";
import { findMp3Frame, mp3FrameAt } from "../src/upstreams/mp3-frames.ts";

/** The socket's path. */
export const T2A_SOCKET_PATH = "/ws/v1/t2a_v2";

/** `audio_setting.format` values MiniMax's socket takes [ref]. */
export const T2A_SOCKET_FORMATS: readonly string[] = ["mp3", "wav", "flac", "pcm", "pcmu_raw", "pcmu_wav", "opus"];

/** Text length MiniMax refuses (characters) [ref]. */
const MAX_TEXT_CHARS = 10_000;
/** The `[fake:...]` code markers answered as `task_failed` before any audio, and their messages. */
const CODE_MARKERS: Readonly<Record<string, [number, string]>> = {
  "1002": [1002, "rate limit exceeded(RPM)"],
  "1026": [1026, "input new_sensitive"],
  "2013": [2013, "invalid params, marker"],
  "ws-fail-before": [1002, "rate limit exceeded(RPM)"],
};

/** The audio the fake renders for a socket: MP3, 16-bit PCM, or mu-law (`pcmu_raw`, 8 kHz). */
export interface T2aSocketAudio {
  format: "mp3" | "pcm" | "ulaw";
  sample_rate: number;
  bitrate: number;
}

/** What the socket needs of the fake around it (minimax.ts passes its own state and checks). */
export interface T2aSocketFakeDeps {
  /** The only key accepted; undefined: any non-empty bearer key. */
  apiKey: string | undefined;
  /** The markers applied to every socket (the fake's `markers` option / `setMarkers`). */
  markers(): readonly string[];
  /** Speech model ids ([http] `FAKE_SPEECH_MODELS`). */
  models: readonly string[];
  /** True for a model answered as retired (the fake's `retired`). */
  isRetired(model: string): boolean;
  /** True for a system, cloned or designed voice the fake has. */
  voiceExists(voiceId: string): boolean;
  /** The HTTP fake's `voice_setting` check: the reason a setting is refused, else null. */
  voiceSettingProblem(vs: Record<string, unknown>): string | null;
  /** Sample rates of speech. */
  rates: readonly number[];
  /** MP3 bit rates. */
  bitrates: readonly number[];
  /** A tone of `seconds` in `audio` (the HTTP fake's). */
  render(seconds: number, audio: T2aSocketAudio): Uint8Array;
  /** Records the upgrade in the fake's `requests`. */
  record(req: LoopbackFakeRequest & { raw: string }): void;
  /** `ws://<the other loopback host name>:<port>` (the `ws-redirect` target). */
  otherHost(): string;
  /** Delay before `task_started`, ms. */
  taskStartMs: number;
  /** Delay before a text's first audio message, ms. */
  firstChunkMs: number;
  /** Delay between a text's audio messages, ms. */
  chunkGapMs: number;
  /** No client event for this long after the last result closes the socket, ms ([ref]: 120 s). */
  idleTimeoutMs: number;
}

/** One recorded connection (see the module comment). */
export interface T2aFakeSocket {
  path: string;
  headers: Record<string, string>;
  received: unknown[];
  sent: Record<string, unknown>[];
  closeCode: number | null;
}

/** The socket side of a running fake. */
export interface T2aSocketFake {
  /** Answers the server's upgrade requests (loopback.ts `onUpgrade`). */
  onUpgrade: LoopbackUpgradeHandler;
  /** Every connection upgraded, in order. */
  readonly sockets: T2aFakeSocket[];
  /** Forgets the recorded connections (the array stays the same object). */
  reset(): void;
  /** Drops every open connection at once (the fake's `close()`). */
  closeAll(): void;
}

const ok = { status_code: 0, status_msg: "success" };

/** Answers a refused upgrade with a JSON body and closes the socket. */
function refuse(socket: Socket, status: number, reason: string, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  const lines = [
    `HTTP/1.1 ${status} ${reason}`,
    "content-type: application/json",
    `content-length: ${Buffer.byteLength(text)}`,
    "connection: close",
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ];
  socket.end(`${lines.join("\r\n")}\r\n\r\n${text}`);
}

/**
 * MiniMax's T2A socket: an upgrade handler answering {@link T2A_SOCKET_PATH} (any other path: 404), the
 * records, and a way to drop every connection (before the server's own close: upgraded sockets are the
 * handler's).
 */
export function createT2aSocketFake(deps: T2aSocketFakeDeps): T2aSocketFake {
  const sockets: T2aFakeSocket[] = [];
  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, maxPayload: 1024 * 1024 });

  const onUpgrade = (req: http.IncomingMessage, socket: Socket, head: Buffer): void => {
    socket.on("error", () => {});
    const url = new URL(req.url ?? "/", "http://fake");
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined) headers[name] = recordAuthorizationScheme(name, Array.isArray(value) ? value.join(", ") : value);
    }
    deps.record({ method: (req.method ?? "GET").toUpperCase(), path: url.pathname + url.search, headers, body: null, raw: "" });
    if (url.pathname !== T2A_SOCKET_PATH) return refuse(socket, 404, "Not Found", { base_resp: { status_code: 404, status_msg: "not found" } });
    const markers = markersOf("", deps.markers());
    if (markers.has("ws-429")) {
      return refuse(socket, 429, "Too Many Requests", { base_resp: { status_code: 1002, status_msg: "rate limit exceeded(RPM)" } }, { "retry-after": "1" });
    }
    if (markers.has("ws-401")) {
      return refuse(socket, 401, "Unauthorized", { base_resp: { status_code: 1004, status_msg: "login fail: Please carefully check the API secret key is correct" } });
    }
    if (markers.has("ws-500")) return refuse(socket, 500, "Internal Server Error", { base_resp: { status_code: 1000, status_msg: "unknown error" } });
    if (markers.has("ws-redirect")) {
      return refuse(socket, 307, "Temporary Redirect", { base_resp: { status_code: 0, status_msg: "moved" } }, { location: `${deps.otherHost()}${T2A_SOCKET_PATH}` });
    }
    const auth = String(req.headers.authorization ?? "");
    const key = /^Bearer\s+(\S.*)$/i.exec(auth)?.[1] ?? "";
    wss.handleUpgrade(req, socket, head, (ws) => {
      const rec: T2aFakeSocket = { path: url.pathname + url.search, headers, received: [], sent: [], closeCode: null };
      sockets.push(rec);
      runSession(ws, rec, key, markers, deps);
    });
  };

  return {
    onUpgrade,
    sockets,
    reset: () => {
      sockets.length = 0;
    },
    closeAll: () => {
      for (const ws of wss.clients) ws.terminate();
    },
  };
}

/** One connection's protocol (see the module comment). */
function runSession(ws: WebSocket, rec: T2aFakeSocket, key: string, socketMarkers: ReadonlySet<string>, deps: T2aSocketFakeDeps): void {
  const sessionId = String(randomInt(100_000_000_000_000, 2 ** 48));
  type State = "new" | "starting" | "started" | "finishing" | "ended";
  let state: State = "new";
  let audio: T2aSocketAudio = { format: "mp3", sample_rate: 32000, bitrate: 128000 };
  const queue: string[] = [];
  let speaking = false;
  let idle: NodeJS.Timeout | null = null;

  const open = (): boolean => ws.readyState === WebSocket.OPEN;
  const send = (msg: Record<string, unknown>): void => {
    if (!open()) return;
    const full: Record<string, unknown> = { session_id: sessionId, ...msg, trace_id: randomBytes(16).toString("hex"), base_resp: msg.base_resp ?? ok };
    ws.send(JSON.stringify(full));
    const data = full.data;
    rec.sent.push(isJsonObject(data) && typeof data.audio === "string" ? { ...full, data: { ...data, audio: `<${data.audio.length} hex digits>` } } : full);
  };
  const clearIdle = (): void => {
    if (idle !== null) clearTimeout(idle);
    idle = null;
  };
  const fail = (code: number, message: string): void => {
    send({ event: "task_failed", base_resp: { status_code: code, status_msg: message } });
    state = "ended";
    clearIdle();
    if (open()) ws.close(1000);
  };
  const armIdle = (): void => {
    clearIdle();
    idle = setTimeout(() => fail(2201, `timeout disconnect: no event within ${deps.idleTimeoutMs / 1000} s`), deps.idleTimeoutMs);
    idle.unref();
  };
  ws.on("close", (code: number) => {
    rec.closeCode = code;
    state = "ended";
    clearIdle();
  });
  ws.on("error", () => {});

  if (socketMarkers.has("echo-key")) return fail(1004, `login fail: Please carefully check the API secret key: ${key}`);
  if (key === "" || (deps.apiKey !== undefined && key !== deps.apiKey)) {
    return fail(1004, "login fail: Please carefully check the API secret key is correct");
  }
  send({ event: "connected_success" });
  armIdle();

  const startTask = (msg: Record<string, unknown>): void => {
    const model = msg.model;
    if (typeof model !== "string" || model === "") return fail(2013, "invalid params, model is required");
    if (!deps.models.includes(model) || deps.isRetired(model)) return fail(2013, `invalid params, model ${model} is not supported`);
    if (!isJsonObject(msg.voice_setting)) return fail(2013, "invalid params, voice_setting is required");
    const vs = msg.voice_setting;
    if (typeof vs.voice_id !== "string" || vs.voice_id === "") return fail(2013, "invalid params, voice_id is required");
    const bad = deps.voiceSettingProblem(vs);
    if (bad !== null) return fail(2013, `invalid params, ${bad}`);
    const setting = socketAudioOf(msg.audio_setting, deps.rates, deps.bitrates);
    if (typeof setting === "string") return fail(2013, `invalid params, ${setting}`);
    if (!deps.voiceExists(vs.voice_id)) return fail(2042, "voice id not exist");
    audio = setting;
    state = "starting";
    setTimeout(() => {
      if (state !== "starting") return;
      state = "started";
      send({ event: "task_started" });
      armIdle();
    }, deps.taskStartMs);
  };

  const pump = async (): Promise<void> => {
    if (speaking) return;
    speaking = true;
    clearIdle();
    while (queue.length > 0 && (state === "started" || state === "finishing") && open()) {
      await speak(queue.shift()!);
    }
    speaking = false;
    if (state === "finishing" && open()) {
      send({ event: "task_finished" });
      state = "ended";
      ws.close(1000);
      return;
    }
    if (state === "started") armIdle();
  };

  const speak = async (text: string): Promise<void> => {
    const markers = markersOf(text, deps.markers());
    if (markers.has("hang")) return new Promise<void>(() => {});
    const slow = markers.has("slow");
    await sleep(slow ? 1000 : deps.firstChunkMs);
    if (!open()) return;
    for (const [name, [code, message]] of Object.entries(CODE_MARKERS)) {
      if (markers.has(name)) return fail(code, message);
    }
    if (markers.has("ws-drop-before")) return void ws.terminate();
    const chars = [...text].length;
    const seconds = Math.max(0.3, 0.06 * chars);
    let bytes = deps.render(seconds, audio);
    if (markers.has("mp3-tags") && audio.format === "mp3") bytes = asMp3File(bytes);
    const finalNull = markers.has("final-null");
    const extra = {
      audio_length: Math.round(seconds * 1000),
      audio_sample_rate: audio.format === "ulaw" ? 8000 : audio.sample_rate,
      audio_size: bytes.byteLength,
      bitrate: audio.bitrate,
      audio_format: audio.format === "ulaw" ? "pcmu_raw" : audio.format,
      audio_channel: 1,
      invisible_character_ratio: 0,
      usage_characters: chars,
      word_count: text.split(/\s+/).filter((w) => w !== "").length,
    };
    const pieces = 4;
    let start = 0;
    for (let i = 1; i <= pieces; i++) {
      // Odd offsets on purpose: a message may end inside a 16-bit sample or an MP3 frame.
      const end = i === pieces ? bytes.length : Math.min(bytes.length, Math.floor((bytes.length * i) / pieces) | 1);
      let hex = Buffer.from(bytes.subarray(start, end)).toString("hex");
      if (i === 1 && markers.has("bad-hex")) hex = `zz${hex.slice(2)}`;
      start = end;
      const last = i === pieces && !finalNull;
      send({ event: "task_continued", data: { audio: hex }, is_final: last, ...(last ? { extra_info: extra } : {}) });
      if (i === 1 && markers.has("ws-fail-after")) return fail(1000, "unknown error");
      if (i === 1 && markers.has("ws-drop")) return void ws.terminate();
      if (i < pieces) await sleep(slow ? 1000 : deps.chunkGapMs);
      if (!open()) return;
    }
    if (finalNull) send({ event: "task_continued", data: null, is_final: true, extra_info: extra });
  };

  ws.on("message", (data: RawData) => {
    if (state === "ended") return;
    const text = Array.isArray(data) ? Buffer.concat(data).toString("utf8") : Buffer.isBuffer(data) ? data.toString("utf8") : Buffer.from(data).toString("utf8");
    let msg: unknown;
    try {
      msg = JSON.parse(text) as unknown;
    } catch {
      msg = undefined;
    }
    rec.received.push(msg === undefined ? text : msg);
    if (!isJsonObject(msg)) return fail(2013, "invalid params, the message should be a JSON object");
    if (!speaking) clearIdle();
    switch (msg.event) {
      case "task_start":
        if (state !== "new") return fail(2202, "illegal event, the task has already started");
        return startTask(msg);
      case "task_continue": {
        if (state === "new") return fail(2202, "illegal event, task_start first");
        if (state === "starting") return fail(2202, "illegal event, task_continue before task_started");
        if (state === "finishing") return fail(2202, "illegal event, task_continue after task_finish");
        if (typeof msg.text !== "string") return fail(2013, "invalid params, text should be a string");
        if (msg.text.trim() === "") return fail(2203, "empty text, skipped");
        if ([...msg.text].length >= MAX_TEXT_CHARS) return fail(2204, `text should be less than ${MAX_TEXT_CHARS} characters, skipped`);
        queue.push(msg.text);
        void pump();
        return;
      }
      case "task_finish":
        if (state === "new" || state === "starting") return fail(2202, "illegal event, task_finish before task_started");
        if (state === "finishing") return;
        state = "finishing";
        void pump();
        return;
      default:
        return fail(2202, `illegal event ${JSON.stringify(String(msg.event ?? "")).slice(0, 60)}`);
    }
  });
}

/**
 * `audio_setting` as the socket takes it [ref] (absent fields: MiniMax's defaults), or the reason it is
 * refused; the fake makes `mp3`, `pcm` and `pcmu_raw` (8 kHz) only.
 */
function socketAudioOf(value: unknown, rates: readonly number[], bitrates: readonly number[]): T2aSocketAudio | string {
  if (value !== undefined && !isJsonObject(value)) return "audio_setting should be an object";
  const s = isJsonObject(value) ? value : {};
  const format = s.format ?? "mp3";
  const rate = s.sample_rate ?? 32000;
  const bitrate = s.bitrate ?? 128000;
  if (typeof format !== "string" || !T2A_SOCKET_FORMATS.includes(format)) return `audio_setting.format should be one of ${T2A_SOCKET_FORMATS.join(", ")}`;
  if (typeof rate !== "number" || !rates.includes(rate)) return `audio_setting.sample_rate should be one of ${rates.join(", ")}`;
  if (typeof bitrate !== "number" || !bitrates.includes(bitrate)) return `audio_setting.bitrate should be one of ${bitrates.join(", ")}`;
  if (s.channel !== undefined && s.channel !== 1 && s.channel !== 2) return "audio_setting.channel should be 1 or 2";
  if (format === "mp3") return { format: "mp3", sample_rate: rate, bitrate };
  if (format === "pcm") return { format: "pcm", sample_rate: rate, bitrate };
  if (format === "pcmu_raw") return { format: "ulaw", sample_rate: 8000, bitrate };
  return `audio_setting.format ${format} (the fake makes mp3, pcm and pcmu_raw only)`;
}

/** `mp3` as an MP3 file: an ID3v2.3 tag (padding only), an Info frame like the first frame, the frames, an ID3v1 tag. */
function asMp3File(mp3: Uint8Array): Uint8Array {
  const first = findMp3Frame(mp3, 0);
  const frame = first < 0 ? null : mp3FrameAt(mp3, first);
  if (frame === null) return mp3;
  const id3 = new Uint8Array(10 + 32);
  id3.set([0x49, 0x44, 0x33, 3, 0, 0, 0, 0, 0, 32]);
  const info = new Uint8Array(frame.length);
  info.set(mp3.subarray(first, first + 4));
  info.set(Buffer.from("Info", "latin1"), 4 + frame.sideInfoLength);
  const v1 = new Uint8Array(128);
  v1.set(Buffer.from("TAG", "latin1"));
  return Buffer.concat([id3, info, mp3.subarray(first), v1]);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
