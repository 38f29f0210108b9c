/**
 * A loopback fake of MiniMax's API, for contract tests and the `fake-upstreams` script: it answers in
 * MiniMax's real shapes (test/upstreams/minimax/fixtures.ts names the source of each), with real,
 * decodable audio and MP4s, and misbehaves on request.
 *
 * ## Protocol
 * Every API answer is HTTP 200 JSON with `base_resp: {status_code, status_msg}` (0 / `success`), as
 * MiniMax does, unless a marker asks for an HTTP failure.
 * | request | answer |
 * |---|---|
 * | `POST /v1/t2a_v2` | `{data: {audio: <hex>, status: 2, ced: ""}, extra_info: {audio_length (ms), audio_sample_rate, audio_size, bitrate, word_count, invisible_character_ratio, audio_format, usage_characters}, trace_id, base_resp}`; with `stream: true` an event stream (below) |
 * | `POST /v1/music_generation` | `{data: {audio: <hex>, status: 2}, extra_info: {audio_length, audio_sample_rate, audio_size, bitrate, audio_format}, trace_id, base_resp}` |
 * | `POST /v1/voice_design` `{prompt, preview_text, voice_id?}` | `{voice_id: "ttv-voice-...", trial_audio: <hex mp3>, trace_id, base_resp}` |
 * | `POST /v1/files/upload` multipart (`file`, `purpose`) | `{file: {file_id: <int64 above 2^53, a bare JSON number>, bytes, created_at, filename, purpose}, base_resp}` |
 * | `POST /v1/voice_clone` `{file_id, voice_id}` | `{input_sensitive: false, input_sensitive_type: 0, demo_audio: "", base_resp}`; the `file_id` is read from the raw body text, so a rounded id is not found |
 * | `POST /v1/get_voice` `{voice_type}` | `{system_voice: [{voice_id, voice_name, description[], created_time}], voice_cloning: [...], voice_generation: [...], base_resp}` per `voice_type` (`system`, `voice_cloning`, `voice_generation`, `all`) |
 * | `POST /v1/video_generation` `{model, prompt, duration, resolution, first_frame_image?}` | `{task_id, base_resp}` |
 * | `GET /v1/query/video_generation?task_id=` | `{task_id, status, file_id, video_width, video_height, base_resp}`: `Preparing` (first tenth of `videoRunMs`), `Queueing` (to three tenths), `Processing`, then `Success` with `file_id` |
 * | `GET /v1/files/retrieve?file_id=` | `{file: {file_id, bytes, created_at, filename: "output.mp4", purpose: "video_generation", download_url}, base_resp}` |
 * | `GET /download/{file_id}/output.mp4?Expires=...&Signature=...` (no key) | the MP4 (the simulator's `renderMp4`, the task's duration) |
 * The download URL names `localhost` where the fake listens on `127.0.0.1` (and the reverse): another
 * host than the base URL's, as MiniMax's CDN is, on the same loopback server.
 *
 * Validation as MiniMax does it, answered with `base_resp` 2013 (`invalid params, ...`), following
 * MiniMax's API references (platform.minimax.io/docs/api-reference/speech-t2a-http and
 * /music-generation) as its own clients use them (MiniMax-AI/cli `src/types/api.ts`,
 * `src/commands/speech/synthesize.ts`, `src/commands/music/generate.ts`; MiniMax-AI/MiniMax-MCP
 * `minimax_mcp/server.py`):
 * - `model` one of the endpoint's ({@link FAKE_SPEECH_MODELS}, {@link FAKE_MUSIC_MODELS},
 *   {@link FAKE_VIDEO_MODELS}) and not `retired`; otherwise `invalid params, model <id> is not
 *   supported` (the 2013 naming the model of D35; the exact wording is the fake's, *unverified*);
 * - speech: `text` a non-empty string under 10 000 characters; `voice_setting.voice_id`; `speed`
 *   0.5..2, `vol` (0, 10], `pitch` an integer -12..12, `emotion` of MiniMax's list; `stream` a boolean;
 * - music: `prompt` at most 2000 characters, `lyrics` at most 3500 and required unless
 *   `is_instrumental`, which only `music-2.6`, `music-2.6-free` and `music-2.5+` take (the CLI:
 *   "music-2.5: lyrics workaround"); booleans `is_instrumental`, `lyrics_optimizer`, `aigc_watermark`;
 * - `audio_setting`: `format` of the endpoint (speech `mp3`, `pcm`, `flac`, `wav`; music `mp3`, `pcm`,
 *   `wav`; the fake renders `mp3` and `pcm` only and refuses the others as its own limit), sample rates
 *   (speech 8000/16000/22050/24000/32000/44100, music 16000/24000/32000/44100), MP3 bit rates
 *   32000/64000/128000/256000, `channel` 1 or 2; `output_format` `hex` or `url` (the fake answers hex);
 * - design needs `prompt` and `preview_text`; clone needs a known `file_id` and a `voice_id` of 8 to 256
 *   characters, starting with a letter, of `[A-Za-z0-9_-]`, not ending in `-` or `_`, not taken;
 * - video `duration` 6 or 10 (1080P: 6), `resolution` 512P (with `first_frame_image` only), 768P, 1080P.
 * Speech with a voice id that is neither a system voice nor a cloned or designed one (or one passed to
 * `forgetVoice`) answers 2042 (`voice id not exist`). Another path: HTTP 404.
 *
 * Audio: a sine tone in the requested format, sample rate and bit rate (`encodeAudio`), about 0.06 s per
 * character of speech (at least 0.3 s), 2 s per non-empty lyrics line of music (at least 5 s; an
 * instrumental 6 s).
 *
 * ## Streaming (`stream: true` on `t2a_v2`)
 * `content-type: text/event-stream`; the clip is cut into five pieces at arbitrary (odd) byte offsets,
 * each sent as `data: {"data": {"audio": "<hex>", "status": 1, "ced": ""}, "trace_id", "base_resp"}`
 * (the first after `firstChunkMs`, then every `chunkGapMs`; each event written in two halves, so
 * events and hex strings arrive split across packets), then `data: {"data": {"audio": <the whole
 * clip, or "" when `stream_options.exclude_aggregated_audio` is true>, "status": 2}, "extra_info",
 * "trace_id", "base_resp"}`.
 *
 * ## Key
 * `Authorization: Bearer <key>` on every call but a download: a missing or wrong key (when `apiKey` is
 * set; else any non-empty key passes) answers HTTP 200 with `base_resp` 1004 (`login fail: ...`), as
 * MiniMax does.
 *
 * ## Misbehaviour markers
 * `[fake:NAME]` in the text (speech), prompt or lyrics (music), prompt or preview text (design) or prompt
 * (video); or for every request with the `markers` option or `setMarkers`. Unknown names are ignored.
 * | marker | effect |
 * |---|---|
 * | `1002` | `base_resp` 1002 `rate limit exceeded(RPM)` (retryable) |
 * | `1026` | `base_resp` 1026 `input new_sensitive` (content) |
 * | `2013` | `base_resp` 2013 `invalid params` |
 * | `500` | HTTP 500 with a JSON `base_resp` 1000 body |
 * | `429` | HTTP 429 with `Retry-After` |
 * | `malformed` | HTTP 200 with an HTML page |
 * | `bad-hex` | the audio field is not hex (whole answers: the whole field; streams: the first chunk) |
 * | `hang` | never answered (until `close()`) |
 * | `slow` | answered after 3 s more (a stream: every chunk 1 s apart; a video task: ten times `videoRunMs`) |
 * | `stream-break` | the stream stops after its first chunk with an event `{base_resp: {status_code: 1000, status_msg: "unknown error"}}` |
 * | `aggregate` | the final `status: 2` event repeats the whole clip even when it was excluded |
 * | `echo-key` | `base_resp` 1004 whose message echoes the caller's key (redaction tests) |
 * | `video-fail` | the video task ends `Fail` (`base_resp` 0: MiniMax's own failure; *unverified* shape) |
 * | `video-sensitive` | the video task ends `Fail` with `base_resp` 1027 `output new_sensitive` (*unverified* shape) |
 *
 * `requests` records every request in order: `method`, `path` (with query), `headers` (lower-case; the
 * `authorization` header keeps its scheme only: `Bearer [redacted]`), the parsed JSON `body` (for a
 * multipart upload `{purpose, file: {filename, type, size}}`) and `raw`, the JSON text as sent ("" for
 * multipart), where int64 ids keep every digit.
 *
 * ## Realtime speech socket (D42)
 * The same server answers the WebSocket upgrade of MiniMax's T2A socket on `/ws/v1/t2a_v2` (`connected_success`,
 * `task_start` -> `task_started`, `task_continue` -> `task_continued` with hex audio, `task_finish` ->
 * `task_finished`, `task_failed`): minimax-realtime.ts, which lists its checks, its sources and its own
 * markers (`ws-429`, `ws-fail-before`, `ws-fail-after`, `ws-drop`, ...). Its connections are in `sockets`; the
 * upgrade is also recorded in `requests` as a `GET`.
 */
import { randomBytes, randomInt } from "node:crypto";
import type http from "node:http";
import { isJsonObject as isObject, markersOf, recordAuthorizationScheme, sendJson, startLoopbackServer } from "./loopback.ts";
import type { LoopbackFakeRequest } from "./loopback.ts";
import { createT2aSocketFake } from "./minimax-realtime.ts";
import type { T2aFakeSocket } from "./minimax-realtime.ts";
import { encodeAudio } from "../src/upstreams/simulator/encode.ts";
import { renderMp4, videoSize } from "../src/upstreams/simulator/video.ts";
import type { AudioFormat } from "../src/upstreams/types.ts";

/** Options of {@link startMiniMaxFake}. */
export interface MiniMaxFakeOptions {
  /** Default 0 (any free port). */
  port?: number;
  /** Default `127.0.0.1`. */
  host?: string;
  /** The only key accepted; default: any non-empty bearer key. */
  apiKey?: string;
  /** Markers applied to every request (see the module comment). */
  markers?: readonly string[];
  /** Delay before every API answer, ms (default 0). */
  latencyMs?: number;
  /** Delay before the first event of a stream, ms (default 20). */
  firstChunkMs?: number;
  /** Delay between events of a stream, ms (default 10). */
  chunkGapMs?: number;
  /** How long a video task takes, ms (default 300). */
  videoRunMs?: number;
  /** The T2A socket's delay before `task_started`, ms (default 5). Its audio messages use `firstChunkMs` and `chunkGapMs`. */
  taskStartMs?: number;
  /** The T2A socket closes after this long without a client event following its last result, ms (default 120 000, MiniMax's). */
  socketIdleTimeoutMs?: number;
  /**
   * Model ids answered as MiniMax answers a model it does not serve: `base_resp` 2013 `invalid params,
   * model <id> is not supported` (`["music-2.6"]`: a retired music model). Replaced by `setRetired`.
   */
  retired?: readonly string[];
}

/** One recorded request (see the module comment). */
export interface MiniMaxFakeRequest extends LoopbackFakeRequest {
  /** The body's text when it was JSON (int64 ids with every digit); "" otherwise. */
  raw: string;
}

/** A running fake. */
export interface MiniMaxFake {
  /** Base URL, e.g. `http://127.0.0.1:40123`. */
  url: string;
  /** Every request, in order (T2A socket upgrades included, as `GET /ws/v1/t2a_v2`). */
  requests: MiniMaxFakeRequest[];
  /** Every T2A socket connection, in order (minimax-realtime.ts). */
  sockets: T2aFakeSocket[];
  /** The recorded `POST`s. */
  submits(): MiniMaxFakeRequest[];
  /** Replaces the markers applied to every request. */
  setMarkers(markers: readonly string[]): void;
  /** Replaces the retired model ids (the `retired` option). */
  setRetired(ids: readonly string[]): void;
  /** The ids of the system voices (`get_voice`), in order. */
  systemVoiceIds(): string[];
  /** The ids of the voices cloned or designed here and not forgotten. */
  clonedVoiceIds(): string[];
  /** Forgets a cloned or designed voice: speech with it then answers 2042. */
  forgetVoice(id: string): void;
  /** Forgets the recorded requests and sockets (the arrays stay the same objects) and restores the `markers` option. */
  reset(): void;
  /** Stops listening and drops every connection (held `hang` requests included). */
  close(): Promise<void>;
}

const MAX_BODY_BYTES = 32 * 1024 * 1024;
const SPEECH_RATES = [8000, 16000, 22050, 24000, 32000, 44100];
const MUSIC_RATES = [16000, 24000, 32000, 44100];
const MP3_BITRATES = [32000, 64000, 128000, 256000];

/**
 * The `model`s of `t2a_v2`: MiniMax's T2A HTTP reference (platform.minimax.io/docs/api-reference/
 * speech-t2a-http) and MiniMax-AI/cli `src/commands/speech/synthesize.ts` ("speech-2.8-hd / 2.6 / 02").
 */
export const FAKE_SPEECH_MODELS: readonly string[] = [
  "speech-2.8-hd", "speech-2.8-turbo", "speech-2.6-hd", "speech-2.6-turbo", "speech-2.5-hd-preview", "speech-2.5-turbo-preview",
  "speech-02-hd", "speech-02-turbo", "speech-01-hd", "speech-01-turbo",
];
/** The `model`s of `music_generation`: MiniMax-AI/cli `src/commands/music/generate.ts` `VALID_MODELS`. */
export const FAKE_MUSIC_MODELS: readonly string[] = ["music-2.6", "music-2.6-free", "music-2.5+", "music-2.5"];
/** The music models with `is_instrumental` (the same file: "music-2.6/music-2.5+: native is_instrumental flag"). */
const INSTRUMENTAL_MODELS: readonly string[] = ["music-2.6", "music-2.6-free", "music-2.5+"];
/** The `model`s of `video_generation`: MiniMax-AI/MiniMax-MCP `minimax_mcp/server.py` `generate_video`, `const.py`. */
export const FAKE_VIDEO_MODELS: readonly string[] = [
  "MiniMax-Hailuo-02", "MiniMax-Hailuo-2.3", "MiniMax-Hailuo-2.3-Fast", "T2V-01", "T2V-01-Director", "I2V-01", "I2V-01-Director", "I2V-01-live", "S2V-01",
];
/** `voice_setting.emotion` of `t2a_v2` (MiniMax's T2A reference). */
const EMOTIONS = ["happy", "sad", "angry", "fearful", "disgusted", "surprised", "calm", "fluent", "whisper"];
const SLOW_MS = 3000;

/** Stable system voices named as MiniMax names its own (its voice list). */
const NAMED_VOICES: readonly [string, string, string][] = [
  ["English_Graceful_Lady", "Graceful Lady", "A graceful, elegant female voice."],
  ["English_Insightful_Speaker", "Insightful Speaker", "A thoughtful male narrator."],
  ["English_radiant_girl", "Radiant Girl", "A bright young female voice."],
  ["English_Persuasive_Man", "Persuasive Man", "A confident male voice."],
  ["English_expressive_narrator", "Expressive Narrator", "An expressive storyteller."],
  ["Wise_Woman", "Wise Woman", "A calm, mature female voice."],
  ["Friendly_Person", "Friendly Person", "A warm, friendly voice."],
  ["Inspirational_girl", "Inspirational Girl", "An uplifting young female voice."],
  ["Deep_Voice_Man", "Deep Voice Man", "A deep male voice."],
  ["Calm_Woman", "Calm Woman", "A soothing female voice."],
  ["Casual_Guy", "Casual Guy", "A relaxed male voice."],
  ["Lively_Girl", "Lively Girl", "An energetic girl's voice."],
  ["Patient_Man", "Patient Man", "A patient, steady male voice."],
  ["Young_Knight", "Young Knight", "A brave young male voice."],
  ["Determined_Man", "Determined Man", "A resolute male voice."],
  ["Lovely_Girl", "Lovely Girl", "A sweet girl's voice."],
  ["Decent_Boy", "Decent Boy", "A polite boy's voice."],
  ["Imposing_Manner", "Imposing Manner", "A commanding voice."],
  ["Elegant_Man", "Elegant Man", "A refined male voice."],
  ["Abbess", "Abbess", "A serene elderly female voice."],
  ["Sweet_Girl_2", "Sweet Girl", "A gentle girl's voice."],
  ["Exuberant_Girl", "Exuberant Girl", "A cheerful girl's voice."],
];
const LANGUAGES = ["English", "Spanish", "French", "German", "Japanese", "Korean", "Portuguese", "Italian", "Russian", "Arabic"];
const TRAITS = ["Warm", "Bright", "Calm", "Gentle", "Bold", "Crisp", "Soft", "Steady", "Lively", "Mellow"];
const ROLES = ["Narrator", "Lady", "Gentleman", "Girl", "Boy", "Host", "Teacher", "Storyteller", "Announcer", "Friend", "Elder", "Companion", "Guide"];

interface SystemVoice {
  voice_id: string;
  voice_name: string;
  description: string[];
  created_time: string;
}

/** About 300 system voices: the named ones, then generated `<Language>_<Trait>_<Role>` ones (stable). */
function systemVoices(): SystemVoice[] {
  const out: SystemVoice[] = NAMED_VOICES.map(([voice_id, voice_name, text]) => ({ voice_id, voice_name, description: [text], created_time: "1970-01-01" }));
  for (const lang of LANGUAGES) {
    for (const trait of TRAITS) {
      for (const role of ROLES) {
        if (out.length >= 300) return out;
        // A spread, not every combination of the first language.
        if ((lang.length + trait.length + role.length) % 4 !== 0) continue;
        out.push({ voice_id: `${lang}_${trait}_${role}`, voice_name: `${trait} ${role}`, description: [`A ${trait.toLowerCase()} ${role.toLowerCase()} voice (${lang}).`], created_time: "1970-01-01" });
      }
    }
  }
  for (let i = 0; out.length < 300; i++) {
    out.push({ voice_id: `Generated_Voice_${String(i).padStart(3, "0")}`, voice_name: `Generated Voice ${i}`, description: ["A generated voice."], created_time: "1970-01-01" });
  }
  return out;
}

interface CustomVoice {
  kind: "cloned" | "designed";
  voice_id: string;
  description: string[];
  created_time: string;
}

interface VideoTask {
  id: string;
  prompt: string;
  duration: number;
  resolution: string;
  markers: ReadonlySet<string>;
  createdAt: number;
  runMs: number;
  fileId: string | null;
}

interface FakeFile {
  id: string;
  purpose: string;
  filename: string;
  bytes: number;
  createdAt: number;
  taskId: string | null;
}

const ok = { status_code: 0, status_msg: "success" };

/** Starts the fake on loopback. */
export async function startMiniMaxFake(opts: MiniMaxFakeOptions = {}): Promise<MiniMaxFake> {
  const latencyMs = opts.latencyMs ?? 0;
  const firstChunkMs = opts.firstChunkMs ?? 20;
  const chunkGapMs = opts.chunkGapMs ?? 10;
  const videoRunMs = opts.videoRunMs ?? 300;
  let always: readonly string[] = opts.markers ?? [];
  let retired = new Set<string>(opts.retired ?? []);
  const system = systemVoices();
  const systemIds = new Set(system.map((v) => v.voice_id));
  const custom = new Map<string, CustomVoice>();
  const files = new Map<string, FakeFile>();
  const tasks = new Map<string, VideoTask>();
  const mp4s = new Map<string, Uint8Array>();
  const requests: MiniMaxFakeRequest[] = [];
  let base = "";
  let cdn = "";

  const answer = (res: http.ServerResponse, body: Record<string, unknown>): void => sendJson(res, 200, { ...body, trace_id: traceId() });
  const failure = (res: http.ServerResponse, code: number, msg: string): void => answer(res, { base_resp: { status_code: code, status_msg: msg } });
  const invalid = (res: http.ServerResponse, what: string): void => failure(res, 2013, `invalid params, ${what}`);
  /**
   * The model of a call: null when `known` has it (and it is not retired), else the 2013 naming it, as
   * MiniMax refuses a model it does not serve (D35). Answers and returns the text when refused.
   */
  const refuseModel = (res: http.ServerResponse, model: unknown, known: readonly string[]): string | null => {
    if (typeof model !== "string" || model === "") return (invalid(res, "model is required"), "refused");
    if (!known.includes(model) || retired.has(model)) return (invalid(res, `model ${model} is not supported`), "refused");
    return null;
  };

  /** Applies the markers every POST honours; true when the request was answered (or is held). */
  const misbehave = async (res: http.ServerResponse, markers: ReadonlySet<string>, key: string): Promise<boolean> => {
    if (markers.has("hang")) return true;
    if (markers.has("slow")) await sleep(SLOW_MS);
    if (markers.has("echo-key")) {
      failure(res, 1004, `login fail: Please carefully check the API secret key: ${key}`);
      return true;
    }
    if (markers.has("500")) {
      sendJson(res, 500, { base_resp: { status_code: 1000, status_msg: "unknown error" } });
      return true;
    }
    if (markers.has("429")) {
      sendJson(res, 429, { base_resp: { status_code: 1002, status_msg: "rate limit exceeded(RPM)" } }, { "retry-after": "1" });
      return true;
    }
    if (markers.has("malformed")) {
      res.writeHead(200, { "content-type": "text/html" });
      res.end("<html><body>502 Bad Gateway (maintenance)</body></html>");
      return true;
    }
    if (markers.has("1002")) return (failure(res, 1002, "rate limit exceeded(RPM)"), true);
    if (markers.has("1026")) return (failure(res, 1026, "input new_sensitive"), true);
    if (markers.has("2013")) return (invalid(res, "marker"), true);
    return false;
  };

  const speech = async (res: http.ServerResponse, body: Record<string, unknown>, markers: ReadonlySet<string>): Promise<void> => {
    if (refuseModel(res, body.model, FAKE_SPEECH_MODELS) !== null) return;
    if (body.text !== undefined && typeof body.text !== "string") return invalid(res, "text should be a string");
    const text = typeof body.text === "string" ? body.text : "";
    if (text.trim() === "") return invalid(res, "text is required");
    if ([...text].length >= 10_000) return invalid(res, "text should be less than 10000 characters");
    const common = commonFields(body);
    if (common !== null) return invalid(res, common);
    if (body.voice_setting !== undefined && !isObject(body.voice_setting)) return invalid(res, "voice_setting should be an object");
    const vs = isObject(body.voice_setting) ? body.voice_setting : {};
    const voice = vs.voice_id;
    if (typeof voice !== "string" || voice === "") return invalid(res, "voice_id is required");
    const bad = voiceSettingProblem(vs);
    if (bad !== null) return invalid(res, bad);
    if (body.stream_options !== undefined && !isObject(body.stream_options)) return invalid(res, "stream_options should be an object");
    const setting = audioSettingOf(body.audio_setting, SPEECH_RATES, ["mp3", "pcm", "flac", "wav"]);
    if (typeof setting === "string") return invalid(res, setting);
    if (!systemIds.has(voice) && !custom.has(voice)) return failure(res, 2042, "voice id not exist");
    const seconds = Math.max(0.3, 0.06 * [...text].length);
    const audio = tone(seconds, setting);
    const extra = { ...extraInfo(seconds, setting, audio), word_count: text.split(/\s+/).filter((w) => w !== "").length, invisible_character_ratio: 0, usage_characters: [...text].length };
    if (body.stream !== true) {
      const hex = markers.has("bad-hex") ? `zz${Buffer.from(audio).toString("hex")}` : Buffer.from(audio).toString("hex");
      return answer(res, { data: { audio: hex, status: 2, ced: "" }, extra_info: extra, base_resp: ok });
    }
    const exclude = isObject(body.stream_options) && body.stream_options.exclude_aggregated_audio === true;
    await streamEvents(res, audio, extra, markers, exclude && !markers.has("aggregate"));
  };

  const streamEvents = async (res: http.ServerResponse, audio: Uint8Array, extra: Record<string, unknown>, markers: ReadonlySet<string>, exclude: boolean): Promise<void> => {
    res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", "trace-id": traceId() });
    // MiniMax's headers come at once; the first event only after the first chunk is synthesized.
    res.flushHeaders();
    const slow = markers.has("slow");
    const pieces = 5;
    let start = 0;
    await sleep(slow ? 1000 : firstChunkMs);
    for (let i = 1; i <= pieces; i++) {
      // Odd offsets on purpose: a chunk may end inside a 16-bit sample or an MP3 frame.
      const end = i === pieces ? audio.length : Math.min(audio.length, Math.floor((audio.length * i) / pieces) | 1);
      let hex = Buffer.from(audio.subarray(start, end)).toString("hex");
      if (i === 1 && markers.has("bad-hex")) hex = `zz${hex.slice(2)}`;
      start = end;
      const event = `data: ${JSON.stringify({ data: { audio: hex, status: 1, ced: "" }, trace_id: traceId(), base_resp: ok })}\n\n`;
      // Two writes, a moment apart: the event (and its hex) arrives split across packets.
      const cut = Math.floor(event.length / 2) | 1;
      if (!res.write(event.slice(0, cut))) await onceDrain(res);
      await sleep(1);
      if (!res.write(event.slice(cut))) await onceDrain(res);
      if (i === 1 && markers.has("stream-break")) {
        res.end(`data: ${JSON.stringify({ trace_id: traceId(), base_resp: { status_code: 1000, status_msg: "unknown error" } })}\n\n`);
        return;
      }
      await sleep(slow ? 1000 : chunkGapMs);
      if (res.destroyed) return;
    }
    const whole = exclude ? "" : Buffer.from(audio).toString("hex");
    res.end(`data: ${JSON.stringify({ data: { audio: whole, status: 2, ced: "" }, extra_info: extra, trace_id: traceId(), base_resp: ok })}\n\n`);
  };

  const music = (res: http.ServerResponse, body: Record<string, unknown>, markers: ReadonlySet<string>): void => {
    if (refuseModel(res, body.model, FAKE_MUSIC_MODELS) !== null) return;
    const model = body.model as string;
    const common = commonFields(body);
    if (common !== null) return invalid(res, common);
    for (const field of ["is_instrumental", "lyrics_optimizer", "aigc_watermark"]) {
      if (body[field] !== undefined && typeof body[field] !== "boolean") return invalid(res, `${field} should be a boolean`);
    }
    for (const [field, max] of [["prompt", 2000], ["lyrics", 3500]] as const) {
      const v = body[field];
      if (v !== undefined && typeof v !== "string") return invalid(res, `${field} should be a string`);
      if (typeof v === "string" && [...v].length > max) return invalid(res, `${field} should be at most ${max} characters`);
    }
    const instrumental = body.is_instrumental === true;
    if (instrumental && !INSTRUMENTAL_MODELS.includes(model)) return invalid(res, `is_instrumental is not supported by ${model}`);
    const lyrics = typeof body.lyrics === "string" ? body.lyrics : "";
    if (!instrumental && lyrics.trim() === "") return invalid(res, "lyrics is required");
    const setting = audioSettingOf(body.audio_setting, MUSIC_RATES, ["mp3", "pcm", "wav"]);
    if (typeof setting === "string") return invalid(res, setting);
    const lines = lyrics.split(/\r?\n/).filter((l) => l.trim() !== "").length;
    const seconds = instrumental ? 6 : Math.max(5, 2 * lines);
    const audio = tone(seconds, setting);
    const hex = Buffer.from(audio).toString("hex");
    answer(res, { data: { audio: markers.has("bad-hex") ? `${hex}zz` : hex, status: 2 }, extra_info: extraInfo(seconds, setting, audio), base_resp: ok });
  };

  const design = (res: http.ServerResponse, body: Record<string, unknown>): void => {
    if (typeof body.prompt !== "string" || body.prompt.trim() === "") return invalid(res, "prompt is required");
    if (typeof body.preview_text !== "string" || body.preview_text.trim() === "") return invalid(res, "preview_text is required");
    let id: string;
    if (body.voice_id !== undefined) {
      if (typeof body.voice_id !== "string" || !validVoiceId(body.voice_id)) return invalid(res, "voice_id");
      if (systemIds.has(body.voice_id) || custom.has(body.voice_id)) return invalid(res, "voice_id already exists");
      id = body.voice_id;
    } else {
      id = `ttv-voice-${new Date().toISOString().replace(/\D/g, "").slice(0, 16)}-${alnum(8)}`;
    }
    custom.set(id, { kind: "designed", voice_id: id, description: [body.prompt.slice(0, 200)], created_time: new Date().toISOString().slice(0, 10) });
    const trial = tone(Math.max(0.3, 0.06 * [...body.preview_text].length), { format: "mp3", sample_rate: 32000, bitrate: 128000 });
    answer(res, { voice_id: id, trial_audio: Buffer.from(trial).toString("hex"), base_resp: ok });
  };

  const upload = async (res: http.ServerResponse, req: http.IncomingMessage, raw: Buffer, record: MiniMaxFakeRequest): Promise<void> => {
    const type = String(req.headers["content-type"] ?? "");
    if (!type.startsWith("multipart/form-data")) return invalid(res, "multipart/form-data expected");
    let form: FormData;
    try {
      form = await new Request("http://fake/", { method: "POST", headers: { "content-type": type }, body: new Uint8Array(raw) }).formData();
    } catch {
      return invalid(res, "malformed multipart body");
    }
    const purpose = form.get("purpose");
    const file = form.get("file");
    record.body = {
      purpose: typeof purpose === "string" ? purpose : null,
      file: file instanceof File ? { filename: file.name, type: file.type, size: file.size } : null,
    };
    if (typeof purpose !== "string" || !["voice_clone", "prompt_audio", "t2a_async_input"].includes(purpose)) return invalid(res, "purpose");
    if (!(file instanceof File) || file.size === 0) return invalid(res, "file is required");
    const id = int64Id();
    const createdAt = Math.floor(Date.now() / 1000);
    files.set(id, { id, purpose, filename: file.name, bytes: file.size, createdAt, taskId: null });
    answer(res, { file: { file_id: rawNumber(id), bytes: file.size, created_at: createdAt, filename: file.name, purpose }, base_resp: ok });
  };

  const clone = (res: http.ServerResponse, body: Record<string, unknown>, raw: string): void => {
    // The id is read from the text: a client that rounded it through a double names another file.
    const fileId = /"file_id"\s*:\s*"?(\d+)"?/.exec(raw)?.[1];
    const file = fileId === undefined ? undefined : files.get(fileId);
    if (file === undefined || file.purpose !== "voice_clone") return invalid(res, "file_id not found");
    const voiceId = body.voice_id;
    if (typeof voiceId !== "string" || !validVoiceId(voiceId)) return invalid(res, "voice_id");
    if (systemIds.has(voiceId) || custom.has(voiceId)) return invalid(res, "voice_id already exists");
    custom.set(voiceId, { kind: "cloned", voice_id: voiceId, description: [], created_time: new Date().toISOString().slice(0, 10) });
    answer(res, { input_sensitive: false, input_sensitive_type: 0, demo_audio: "", base_resp: ok });
  };

  const getVoice = (res: http.ServerResponse, body: Record<string, unknown>): void => {
    const type = body.voice_type;
    if (typeof type !== "string" || !["system", "voice_cloning", "voice_generation", "all"].includes(type)) return invalid(res, "voice_type");
    const out: Record<string, unknown> = {};
    const of = (kind: CustomVoice["kind"]): Record<string, unknown>[] =>
      [...custom.values()].filter((v) => v.kind === kind).map(({ voice_id, description, created_time }) => ({ voice_id, description, created_time }));
    if (type === "system" || type === "all") out.system_voice = system;
    if (type === "voice_cloning" || type === "all") out.voice_cloning = of("cloned");
    if (type === "voice_generation" || type === "all") out.voice_generation = of("designed");
    answer(res, { ...out, base_resp: ok });
  };

  const submitVideo = (res: http.ServerResponse, body: Record<string, unknown>, markers: ReadonlySet<string>): void => {
    if (refuseModel(res, body.model, FAKE_VIDEO_MODELS) !== null) return;
    const prompt = typeof body.prompt === "string" ? body.prompt : "";
    const frame = typeof body.first_frame_image === "string" && body.first_frame_image !== "" ? body.first_frame_image : null;
    if (prompt.trim() === "" && frame === null) return invalid(res, "prompt is required");
    const resolution = body.resolution ?? "768P";
    const duration = body.duration ?? 6;
    if (resolution !== "512P" && resolution !== "768P" && resolution !== "1080P") return invalid(res, "resolution");
    if (resolution === "512P" && frame === null) return invalid(res, "512P needs first_frame_image");
    if (duration !== 6 && duration !== 10) return invalid(res, "duration");
    if (resolution === "1080P" && duration !== 6) return invalid(res, "1080P supports duration 6 only");
    const id = String(100_000_000_000_000 + randomInt(0, 2 ** 40));
    const runMs = markers.has("slow") ? videoRunMs * 10 : videoRunMs;
    tasks.set(id, { id, prompt, duration, resolution, markers, createdAt: Date.now(), runMs, fileId: null });
    answer(res, { task_id: id, base_resp: ok });
  };

  const queryVideo = (res: http.ServerResponse, url: URL): void => {
    const task = tasks.get(url.searchParams.get("task_id") ?? "");
    if (task === undefined) return invalid(res, "task_id not found");
    const t = Date.now() - task.createdAt;
    const state = (status: string, extra: Record<string, unknown> = {}, base: Record<string, unknown> = ok): void =>
      answer(res, { task_id: task.id, status, file_id: "", ...extra, base_resp: base });
    if (t < task.runMs * 0.1) return state("Preparing");
    if (t < task.runMs * 0.3) return state("Queueing");
    if (t < task.runMs) return state("Processing");
    if (task.markers.has("video-sensitive")) return state("Fail", {}, { status_code: 1027, status_msg: "output new_sensitive" });
    if (task.markers.has("video-fail")) return state("Fail");
    if (task.fileId === null) {
      task.fileId = String(200_000_000_000_000 + randomInt(0, 2 ** 40));
      files.set(task.fileId, { id: task.fileId, purpose: "video_generation", filename: "output.mp4", bytes: 0, createdAt: Math.floor(Date.now() / 1000), taskId: task.id });
    }
    // The size of the clip this fake serves (the simulator's renderMp4), not the resolution a real
    // 1080P/768P task would have: a client that checks the file against these fields sees them agree.
    const { width, height } = videoSize("16:9");
    state("Success", { file_id: task.fileId, video_width: width, video_height: height });
  };

  const mp4Of = async (task: VideoTask): Promise<Uint8Array> => {
    let body = mp4s.get(task.id);
    if (body === undefined) {
      body = (await renderMp4({ prompt: task.prompt === "" ? task.id : task.prompt, durationSec: task.duration, aspect: "16:9", seed: "minimax" })).body;
      mp4s.set(task.id, body);
    }
    return body;
  };

  const retrieve = async (res: http.ServerResponse, url: URL): Promise<void> => {
    const file = files.get(url.searchParams.get("file_id") ?? "");
    if (file === undefined) return invalid(res, "file_id not found");
    const task = file.taskId === null ? undefined : tasks.get(file.taskId);
    const bytes = task === undefined ? file.bytes : (await mp4Of(task)).byteLength;
    const expires = Math.floor(Date.now() / 1000) + 9 * 3600;
    const download = task === undefined ? "" : `${cdn}/download/${file.id}/output.mp4?Expires=${expires}&OSSAccessKeyId=FAKE&Signature=${alnum(24)}`;
    answer(res, { file: { file_id: rawNumber(file.id), bytes, created_at: file.createdAt, filename: file.filename, purpose: file.purpose, download_url: download }, base_resp: ok });
  };

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse, raw: Buffer): Promise<void> => {
    const url = new URL(req.url ?? "/", "http://fake");
    const method = (req.method ?? "GET").toUpperCase();
    const type = String(req.headers["content-type"] ?? "");
    const text = type.startsWith("application/json") ? raw.toString("utf8") : "";
    let body: unknown = null;
    if (text !== "") {
      try {
        body = JSON.parse(text) as unknown;
      } catch {
        body = undefined;
      }
    }
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined) headers[name] = recordAuthorizationScheme(name, Array.isArray(value) ? value.join(", ") : value);
    }
    const record: MiniMaxFakeRequest = { method, path: url.pathname + url.search, headers, body: body ?? null, raw: text };
    requests.push(record);

    const segments = url.pathname.split("/").filter((s) => s !== "");
    if (segments[0] === "download" && method === "GET") {
      const file = files.get(segments[1] ?? "");
      const task = file?.taskId === null || file === undefined ? undefined : tasks.get(file.taskId);
      if (task === undefined) return sendJson(res, 404, { error: "NoSuchKey" });
      const mp4 = await mp4Of(task);
      res.writeHead(200, { "content-type": "video/mp4", "content-length": String(mp4.byteLength) });
      res.end(mp4);
      return;
    }

    const obj = isObject(body) ? body : {};
    const markerText = ["text", "prompt", "lyrics", "preview_text"].map((k) => (typeof obj[k] === "string" ? obj[k] : "")).join("\n");
    const markers = markersOf(markerText, always);
    const auth = String(req.headers.authorization ?? "");
    const key = /^Bearer\s+(\S.*)$/i.exec(auth)?.[1] ?? "";
    if (method === "POST" && markers.has("echo-key")) return failure(res, 1004, `login fail: Please carefully check the API secret key: ${key}`);
    if (key === "" || (opts.apiKey !== undefined && key !== opts.apiKey)) {
      return failure(res, 1004, "login fail: Please carefully check the API secret key is correct");
    }
    if (latencyMs > 0) await sleep(latencyMs);

    const route = `${method} ${url.pathname}`;
    if (method === "GET") {
      if (route === "GET /v1/query/video_generation") return queryVideo(res, url);
      if (route === "GET /v1/files/retrieve") return retrieve(res, url);
      return sendJson(res, 404, { base_resp: { status_code: 404, status_msg: "not found" } });
    }
    if (method !== "POST") return sendJson(res, 405, { base_resp: { status_code: 405, status_msg: "method not allowed" } });
    if (await misbehave(res, markers, key)) return;
    if (url.pathname === "/v1/files/upload") return upload(res, req, raw, record);
    if (!isObject(body)) return invalid(res, "the body must be a JSON object");
    switch (url.pathname) {
      case "/v1/t2a_v2":
        return speech(res, body, markers);
      case "/v1/music_generation":
        return music(res, body, markers);
      case "/v1/voice_design":
        return design(res, body);
      case "/v1/voice_clone":
        return clone(res, body, text);
      case "/v1/get_voice":
        return getVoice(res, body);
      case "/v1/video_generation":
        return submitVideo(res, body, markers);
      default:
        return sendJson(res, 404, { base_resp: { status_code: 404, status_msg: "not found" } });
    }
  };

  // MiniMax's T2A WebSocket on the same server (minimax-realtime.ts); `cdn` is read when a redirect is made.
  const socket = createT2aSocketFake({
    apiKey: opts.apiKey,
    markers: () => always,
    models: FAKE_SPEECH_MODELS,
    isRetired: (model) => retired.has(model),
    voiceExists: (id) => systemIds.has(id) || custom.has(id),
    voiceSettingProblem,
    rates: SPEECH_RATES,
    bitrates: MP3_BITRATES,
    render: (seconds, audio) => tone(seconds, audio),
    record: (req) => requests.push(req),
    otherHost: () => cdn.replace(/^http/, "ws"),
    taskStartMs: opts.taskStartMs ?? 5,
    firstChunkMs,
    chunkGapMs,
    idleTimeoutMs: opts.socketIdleTimeoutMs ?? 120_000,
  });
  const server = await startLoopbackServer(
    {
      port: opts.port,
      host: opts.host,
      maxBodyBytes: MAX_BODY_BYTES,
      errorBody: (status, message) => ({ base_resp: { status_code: status === 413 ? 2013 : 1000, status_msg: message } }),
      onUpgrade: socket.onUpgrade,
    },
    handle,
  );
  base = server.url;
  const { hostname, port } = new URL(base);
  // Downloads name another host of the same loopback server, as MiniMax's CDN is another host.
  cdn = hostname === "127.0.0.1" ? `http://localhost:${port}` : hostname === "localhost" ? `http://127.0.0.1:${port}` : base;

  return {
    url: base,
    requests,
    sockets: socket.sockets,
    submits: () => requests.filter((r) => r.method === "POST"),
    setMarkers: (markers) => {
      always = [...markers];
    },
    setRetired: (ids) => {
      retired = new Set(ids);
    },
    systemVoiceIds: () => system.map((v) => v.voice_id),
    clonedVoiceIds: () => [...custom.keys()],
    forgetVoice: (id) => {
      custom.delete(id);
    },
    reset: () => {
      requests.length = 0;
      socket.reset();
      always = opts.markers ?? [];
    },
    close: () => {
      // Upgraded sockets are no longer the HTTP server's: dropped here, or its close would wait for them.
      socket.closeAll();
      return server.close();
    },
  };
}

/** MiniMax's audio settings as the fake renders them (`ulaw`: the T2A socket's `pcmu_raw`, 8 kHz). */
interface FakeAudioSetting {
  format: "mp3" | "pcm" | "ulaw";
  sample_rate: number;
  bitrate: number;
}

/**
 * MiniMax's `audio_setting` (`formats` of the endpoint; `rates`), or the reason it is refused. The fake
 * renders `mp3` and `pcm`; a `flac` or `wav` MiniMax takes is refused as the fake's limit.
 */
function audioSettingOf(value: unknown, rates: readonly number[], formats: readonly string[]): FakeAudioSetting | string {
  if (value !== undefined && !isObject(value)) return "audio_setting should be an object";
  const s = isObject(value) ? value : {};
  const format = s.format ?? "mp3";
  const rate = s.sample_rate ?? 32000;
  const bitrate = s.bitrate ?? 128000;
  if (typeof format !== "string" || !formats.includes(format)) return `audio_setting.format should be one of ${formats.join(", ")}`;
  if (typeof rate !== "number" || !rates.includes(rate)) return `audio_setting.sample_rate should be one of ${rates.join(", ")}`;
  if (typeof bitrate !== "number" || !MP3_BITRATES.includes(bitrate)) return `audio_setting.bitrate should be one of ${MP3_BITRATES.join(", ")}`;
  if (s.channel !== undefined && s.channel !== 1 && s.channel !== 2) return "audio_setting.channel should be 1 or 2";
  if (format !== "mp3" && format !== "pcm") return `audio_setting.format ${format} (the fake makes mp3 and pcm only)`;
  return { format, sample_rate: rate, bitrate };
}

/** The fields `t2a_v2` and `music_generation` share: `stream` a boolean, `output_format` `hex` or `url`. */
function commonFields(body: Record<string, unknown>): string | null {
  if (body.stream !== undefined && typeof body.stream !== "boolean") return "stream should be a boolean";
  const out = body.output_format;
  if (out !== undefined && out !== "hex" && out !== "url") return "output_format should be hex or url";
  if (out === "url") return "output_format url (the fake answers hex only)";
  return null;
}

/**
 * `voice_setting`'s numbers as MiniMax's T2A reference bounds them (MiniMax-AI/MiniMax-MCP
 * `minimax_mcp/server.py` `text_to_audio` says the same): `speed` 0.5..2, `vol` above 0 up to 10,
 * `pitch` an integer -12..12, `emotion` of {@link EMOTIONS}; the reason when one is off, else null.
 */
function voiceSettingProblem(vs: Record<string, unknown>): string | null {
  const { speed, vol, pitch, emotion } = vs;
  if (speed !== undefined && (typeof speed !== "number" || !(speed >= 0.5 && speed <= 2))) return "voice_setting.speed should be in [0.5, 2]";
  if (vol !== undefined && (typeof vol !== "number" || !(vol > 0 && vol <= 10))) return "voice_setting.vol should be in (0, 10]";
  if (pitch !== undefined && (typeof pitch !== "number" || !Number.isInteger(pitch) || pitch < -12 || pitch > 12)) return "voice_setting.pitch should be an integer in [-12, 12]";
  if (emotion !== undefined && (typeof emotion !== "string" || !EMOTIONS.includes(emotion))) return `voice_setting.emotion should be one of ${EMOTIONS.join(", ")}`;
  return null;
}

/** Recently made tones: the same request answers the same bytes without encoding again (benchmarks). */
const TONES = new Map<string, Uint8Array>();

/** A 440 Hz tone of `seconds` in `setting` (memoized: the last 256 tones). */
function tone(seconds: number, setting: FakeAudioSetting): Uint8Array {
  const key = `${seconds}|${setting.format}|${setting.sample_rate}|${setting.bitrate}`;
  let bytes = TONES.get(key);
  if (bytes === undefined) {
    bytes = renderTone(seconds, setting);
    if (TONES.size >= 256) TONES.delete(TONES.keys().next().value!);
    TONES.set(key, bytes);
  }
  return bytes;
}

/** A 440 Hz tone of `seconds` in `setting` (encodeAudio takes any `<codec>_<rate>[_<kbps>]` name). */
function renderTone(seconds: number, setting: FakeAudioSetting): Uint8Array {
  const rate = setting.sample_rate;
  const n = Math.round(seconds * rate);
  const samples = new Float32Array(n);
  for (let i = 0; i < n; i++) samples[i] = 0.3 * Math.sin((2 * Math.PI * 440 * i) / rate);
  const name = setting.format === "mp3" ? `mp3_${rate}_${setting.bitrate / 1000}` : setting.format === "ulaw" ? "ulaw_8000" : `pcm_${rate}`;
  return encodeAudio(samples, rate, name as AudioFormat);
}

function extraInfo(seconds: number, setting: FakeAudioSetting, audio: Uint8Array): Record<string, unknown> {
  return {
    audio_length: Math.round(seconds * 1000),
    audio_sample_rate: setting.sample_rate,
    audio_size: audio.byteLength,
    bitrate: setting.bitrate,
    audio_format: setting.format,
    audio_channel: 1,
  };
}

/** MiniMax's rule for a new voice id: 8 to 256 characters, a letter first, `[A-Za-z0-9_-]`, not ending in `-` or `_`. */
function validVoiceId(id: string): boolean {
  return /^[A-Za-z][A-Za-z0-9_-]{6,254}[A-Za-z0-9]$/.test(id);
}

/** An int64 id above 2^53 (a double cannot hold it exactly). */
function int64Id(): string {
  return (2n ** 53n + BigInt(randomInt(1, 2 ** 47))).toString();
}

/** A JSON number written with exactly these digits (Node 24's `JSON.rawJSON`). */
function rawNumber(digits: string): unknown {
  return (JSON as unknown as { rawJSON: (text: string) => unknown }).rawJSON(digits);
}

function traceId(): string {
  return randomBytes(16).toString("hex");
}

function alnum(n: number): string {
  const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  let out = "";
  for (let i = 0; i < n; i++) out += chars[randomInt(chars.length)];
  return out;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function onceDrain(res: http.ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    res.once("drain", resolve);
    res.once("close", resolve);
  });
}
