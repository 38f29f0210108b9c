/**
 * Route schemas of the realtime sockets (D42, D43): the upgrade requests' query strings (validated before
 * the socket opens, so a bad value is a plain HTTP answer) and the answers a request without `Upgrade:
 * websocket` gets. The messages on the socket are ElevenLabs' (docs/realtime-speech.md,
 * docs/realtime-transcription.md); OpenAPI 3.1 has no words for them.
 */
import { AUTH_ERR, AUDIO_FORMATS, errors, MODEL_RETIRED, obj, oneOf, queryInt, route, str, type Tag } from "./common.ts";
import { REALTIME_AUDIO_FORMATS } from "../../upstreams/realtime.ts";

/** `true`/`false` in a query string (ElevenLabs' booleans). */
const queryBool = (description: string) => oneOf(["true", "false"], description, { "x-error-message": "must be true or false." });

/** The query of a text-to-speech socket (D42); ElevenLabs' other parameters are accepted and ignored. */
const SPEECH_QUERY = obj({
  model_id: str("A speech model of the catalog with realtime support, or an ElevenLabs id; default the default speech model."),
  output_format: oneOf(AUDIO_FORMATS, "Audio format of every chunk (ElevenLabs' names).", { default: "mp3_44100_128" }),
  inactivity_timeout: queryInt("Seconds without a message before the socket closes (1 to 180, default 20).", "^(?:[1-9]|[1-9][0-9]|1[0-7][0-9]|180)$", "inactivity_timeout must be a whole number of seconds from 1 to 180."),
  sync_alignment: queryBool("Alignment with every audio message (always sent when the source has it)."),
  auto_mode: queryBool("Generate at sentence ends instead of the chunk schedule."),
  authorization: str("`Bearer <API key>`: for browsers, which cannot set headers on a WebSocket."),
});

/** The query of a transcription socket (D43). */
const TRANSCRIPTION_QUERY = obj({
  model_id: str("A transcription model of the catalog, the alias `transcribe`, or `scribe_v2_realtime` (the default)."),
  audio_format: oneOf(REALTIME_AUDIO_FORMATS, "Format of the audio sent: 16-bit little-endian PCM at a rate, or mu-law at 8 kHz.", { default: "pcm_16000" }),
  commit_strategy: oneOf(["manual", "vad"], "Who ends a segment: the client (`commit: true`) or the server after silence.", { default: "manual" }),
  language_code: str("ISO 639-1 or 639-3 code of the audio's language."),
  include_timestamps: queryBool("Committed transcripts also come with word timestamps (`committed_transcript_with_timestamps`)."),
  include_language_detection: queryBool("Committed transcripts also come with the detected `language_code`."),
  vad_silence_threshold_secs: str("Silence that ends a segment with `vad`, seconds (0.3 to 3, default 1.5).", { pattern: "^[0-9]+(?:\\.[0-9]+)?$" }),
  vad_threshold: str("Voice activity threshold (0.1 to 0.9, default 0.4).", { pattern: "^[0-9]+(?:\\.[0-9]+)?$" }),
  min_speech_duration_ms: queryInt("Shortest speech that counts, ms (50 to 2000, default 100).", "^[0-9]{1,4}$", "min_speech_duration_ms must be a whole number from 50 to 2000."),
  min_silence_duration_ms: queryInt("Shortest silence that counts, ms (50 to 2000, default 100).", "^[0-9]{1,4}$", "min_silence_duration_ms must be a whole number from 50 to 2000."),
  inactivity_timeout: queryInt("Seconds without a message before the socket closes (1 to 180, default 20).", "^(?:[1-9]|[1-9][0-9]|1[0-7][0-9]|180)$", "inactivity_timeout must be a whole number of seconds from 1 to 180."),
  authorization: str("`Bearer <API key>`: for browsers, which cannot set headers on a WebSocket."),
});

const VOICE_PARAMS = obj({ voice_id: str("The voice (an alpha or beta library voice, or one of yours).", { maxLength: 128 }) }, ["voice_id"]);

/** The socket opened: `101 Switching Protocols` (the messages are ElevenLabs', see the description). */
const SWITCHING = {
  101: { description: "Switching Protocols: the socket is open. Its `X-Svc-Request-Id` is the id of the socket's one usage record (`GET /v1/requests/{id}`)." },
};

/** The refusals before a socket opens (D42): plain HTTP answers. */
const REFUSALS = {
  400: "`invalid_request` (a query value), `not_a_tts_model`, `realtime_not_supported` (a model without a socket, e.g. alpha-v3), `voice_model_mismatch`",
  402: "`billing_error` (the balance is below one unit's price), `key_spend_limit`",
  403: "`voice_not_owned`, `model_not_allowed`",
  404: "`not_found`",
  410: MODEL_RETIRED,
  426: "`upgrade_required`: a request without `Upgrade: websocket` (it first meets the refusals of an opening that take nothing: the model, the voice, the balance)",
  ...AUTH_ERR,
};

/** The schema of a text-to-speech socket route (`multi`: `multi-stream-input`) under `tag`. */
export function speechSocketSchema(opts: { multi: boolean; tag: Tag; operationId: string }) {
  return route({
    operationId: opts.operationId,
    summary: opts.multi ? "Realtime speech, up to 5 contexts (WebSocket)" : "Realtime speech (WebSocket)",
    description:
      "A WebSocket (send `Upgrade: websocket`) speaking ElevenLabs' text-to-speech socket protocol: text in as it is written, audio out as it is generated, with alignment. Authenticate with `xi-api-key`, `Authorization: Bearer`, the query `authorization=Bearer <key>` or `xi_api_key` in the first message. One hold per socket, extended block by block; one usage record per socket (`realtime: true`). The messages are those of ElevenLabs' text-to-speech WebSocket API, whose documentation applies.",
    tags: [opts.tag],
    access: "key",
    params: VOICE_PARAMS,
    query: SPEECH_QUERY,
    responses: { ...SWITCHING, ...errors(REFUSALS) },
  });
}

/** The schema of a transcription socket route under `tag`. */
export function transcriptionSocketSchema(opts: { tag: Tag; operationId: string }) {
  return route({
    operationId: opts.operationId,
    summary: "Realtime transcription (WebSocket)",
    description:
      "A WebSocket (send `Upgrade: websocket`) speaking ElevenLabs' Scribe realtime protocol: audio in (`input_audio_chunk`), partial and committed transcripts out. Charged per started second of audio received. The messages are those of ElevenLabs' realtime speech-to-text API, whose documentation applies.",
    tags: [opts.tag],
    access: "key",
    query: TRANSCRIPTION_QUERY,
    responses: { ...SWITCHING, ...errors({ ...REFUSALS, 400: "`invalid_request` (a query value), `invalid_model`, `realtime_not_supported` (the transcription sources have no socket)" }) },
  });
}
