/**
 * MiniMax's answers as its own clients show them, each naming where it comes from. No official MiniMax
 * npm client exists, so instead of pointing a vendor client at the fake, the answer types of MiniMax's
 * own TypeScript CLI and the fields its Python MCP server reads are written down here as shapes, and
 * fixtures.test.ts checks that the fake's answers have them (and that the adapter decodes the CLI's
 * recorded answers).
 *
 * Sources (read at these commits):
 * - MiniMax-AI/cli `src/types/api.ts` (9f2eab0): `BaseResp`, `SpeechResponse`, `MusicResponse`,
 *   `VoiceListResponse` / `SystemVoiceInfo`, `VideoResponse`, `VideoTaskResponse`, `FileUploadResponse`,
 *   `FileRetrieveResponse`;
 * - MiniMax-AI/cli `test/fixtures/video-task-pending.json`, `video-task-success.json`,
 *   `error-rate-limit.json`: recorded answers;
 * - MiniMax-AI/MiniMax-MCP `minimax_mcp/client.py` (2910d66): every answer's `base_resp.status_code`,
 *   non-zero a failure, 1004 auth; `minimax_mcp/server.py`: `voice_design` reads `voice_id` and
 *   `trial_audio` (hex), `voice_clone` reads `demo_audio`, `files/upload` reads `file.file_id`,
 *   `query/video_generation` reads `status` and `file_id`, `files/retrieve` reads `file.download_url`.
 */

/**
 * A shape: a primitive kind, `[shape]` for a list of that shape, or an object of field shapes (a key
 * ending in `?` is optional). `hex` is a string of hex digits of even length; `id` an int64 id, as
 * digits (a string, or a number read exactly).
 */
export type Shape = "string" | "number" | "boolean" | "hex" | "id" | readonly [Shape] | { readonly [field: string]: Shape };

/** cli `BaseResp`. */
export const BASE_RESP: Shape = { status_code: "number", status_msg: "string" };

/**
 * cli `SpeechResponse` (`data.audio` "hex-encoded audio data", `extra_info.audio_length` etc.) with
 * `output_format: "hex"`; MCP `text_to_audio` reads `data.audio` and decodes it with `bytes.fromhex`.
 */
export const SPEECH_RESPONSE: Shape = {
  base_resp: BASE_RESP,
  data: { audio: "hex", status: "number" },
  "extra_info?": { "audio_length?": "number", "audio_sample_rate?": "number", "audio_size?": "number", "bitrate?": "number", "word_count?": "number", "invisible_character_ratio?": "number" },
};

/** cli `MusicResponse`. */
export const MUSIC_RESPONSE: Shape = {
  base_resp: BASE_RESP,
  data: { audio: "hex", status: "number" },
  "extra_info?": { "audio_length?": "number", "audio_sample_rate?": "number", "audio_size?": "number", "bitrate?": "number" },
};

/** One event of a streamed `t2a_v2` answer: cli `speech synthesize --stream` parses each `data:` as JSON and reads `data.audio` (hex). */
export const SPEECH_EVENT: Shape = { data: { audio: "string", status: "number" }, "base_resp?": BASE_RESP };

/** cli `VoiceListResponse` / `SystemVoiceInfo`. */
export const VOICE_LIST_RESPONSE: Shape = { base_resp: BASE_RESP, "system_voice?": [{ voice_id: "string", voice_name: "string", description: ["string"] }] };

/** MCP `voice_design`: `voice_id` and `trial_audio` (hex). */
export const VOICE_DESIGN_RESPONSE: Shape = { base_resp: BASE_RESP, voice_id: "string", trial_audio: "hex" };

/** MCP `voice_clone`: `demo_audio` (empty when no preview text was sent). */
export const VOICE_CLONE_RESPONSE: Shape = { base_resp: BASE_RESP, "demo_audio?": "string" };

/**
 * cli `FileUploadResponse`. The CLI types `file_id` as a string; MiniMax's API reference documents an
 * int64 number, which is what the fake writes (above 2^53): `id` takes both.
 */
export const FILE_UPLOAD_RESPONSE: Shape = { base_resp: BASE_RESP, file: { file_id: "id", bytes: "number", created_at: "number", filename: "string", purpose: "string" } };

/** cli `VideoResponse` lists `status` too; MCP `generate_video` reads only `task_id`. */
export const VIDEO_RESPONSE: Shape = { base_resp: BASE_RESP, task_id: "id" };

/** cli `VideoTaskResponse` (`file_id` present once the task succeeded). */
export const VIDEO_TASK_RESPONSE: Shape = { base_resp: BASE_RESP, task_id: "id", status: "string", "file_id?": "string", "video_width?": "number", "video_height?": "number" };

/** cli `FileRetrieveResponse`. */
export const FILE_RETRIEVE_RESPONSE: Shape = {
  base_resp: BASE_RESP,
  file: { file_id: "id", bytes: "number", created_at: "number", filename: "string", purpose: "string", "download_url?": "string" },
};

/** cli `test/fixtures/video-task-pending.json`, verbatim. */
export const VIDEO_TASK_PENDING = {
  base_resp: { status_code: 0, status_msg: "success" },
  task_id: "106916112212032",
  status: "Processing",
} as const;

/** cli `test/fixtures/video-task-success.json`, verbatim. */
export const VIDEO_TASK_SUCCESS = {
  base_resp: { status_code: 0, status_msg: "success" },
  task_id: "106916112212032",
  status: "Success",
  file_id: "176844028768320",
  video_width: 1024,
  video_height: 768,
} as const;

/** cli `test/fixtures/error-rate-limit.json`, verbatim: a quota failure (1028) answered as `base_resp`. */
export const ERROR_QUOTA = { base_resp: { status_code: 1028, status_msg: "Daily quota exhausted for image-01" } } as const;

/**
 * A `files/retrieve` answer in cli `FileRetrieveResponse`'s fields; the values are ours (the CLI has no
 * recorded one), the URL in the form of MiniMax's signed CDN links.
 */
export const FILE_RETRIEVE_ANSWER = {
  base_resp: { status_code: 0, status_msg: "success" },
  file: {
    file_id: 176844028768320,
    bytes: 4521984,
    created_at: 1736000000,
    filename: "output.mp4",
    purpose: "video_generation",
    download_url: "https://public-cdn-video-data-algeng.oss-cn-wulanchabu.aliyuncs.com/inference_output%2Fvideo%2F2025-01-04%2Foutput.mp4?Expires=1736032400&OSSAccessKeyId=LTAI&Signature=abc%3D",
  },
} as const;

/** The path of the first field of `value` that does not have `shape`, or null when it matches. */
export function shapeMismatch(value: unknown, shape: Shape, path = "$"): string | null {
  if (typeof shape === "string") {
    switch (shape) {
      case "string":
      case "number":
      case "boolean":
        return typeof value === shape ? null : `${path}: expected ${shape}, got ${typeof value}`;
      case "hex":
        return typeof value === "string" && value.length % 2 === 0 && /^[0-9a-f]*$/i.test(value) ? null : `${path}: expected hex`;
      case "id":
        return (typeof value === "string" && /^\d+$/.test(value)) || (typeof value === "number" && Number.isInteger(value)) ? null : `${path}: expected an int64 id`;
    }
  }
  if (Array.isArray(shape)) {
    if (!Array.isArray(value)) return `${path}: expected a list`;
    for (const [i, item] of value.entries()) {
      const bad = shapeMismatch(item, shape[0] as Shape, `${path}[${i}]`);
      if (bad !== null) return bad;
    }
    return null;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return `${path}: expected an object`;
  for (const [key, sub] of Object.entries(shape as Record<string, Shape>)) {
    const optional = key.endsWith("?");
    const name = optional ? key.slice(0, -1) : key;
    const field = (value as Record<string, unknown>)[name];
    if (field === undefined) {
      if (optional) continue;
      return `${path}.${name}: missing`;
    }
    const bad = shapeMismatch(field, sub, `${path}.${name}`);
    if (bad !== null) return bad;
  }
  return null;
}
