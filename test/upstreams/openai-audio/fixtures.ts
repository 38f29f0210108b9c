/**
 * Answers in OpenAI's shapes, for the decode tests. Each names the type it follows; values are
 * illustrative.
 */

/** `Transcription` with duration usage (openai-node `src/resources/audio/transcriptions.ts`, `Transcription.Duration`). */
export const TRANSCRIPTION_WHISPER = {
  text: "Imagine the wildest idea that you've ever had, and you're curious about how it might scale.",
  usage: { type: "duration", seconds: 9 },
};

/**
 * `Transcription` with token usage, as the gpt-4o transcribe models answer (same file, `Transcription.Tokens`,
 * `input_token_details`).
 */
export const TRANSCRIPTION_TOKENS = {
  text: "Hello there.",
  usage: { type: "tokens", input_tokens: 14, input_token_details: { text_tokens: 0, audio_tokens: 14 }, output_tokens: 4, total_tokens: 18 },
};

/** A transcription of silence: `text` empty, still a valid `Transcription`. */
export const TRANSCRIPTION_EMPTY = { text: "" };

/**
 * `ChatCompletion` of an audio question (openai-node `src/resources/chat/completions/completions.ts`:
 * `ChatCompletion`, `ChatCompletionMessage` with `refusal` and `annotations`; `CompletionUsage` with
 * `prompt_tokens_details.audio_tokens`).
 */
export const COMPLETION_STRING = {
  id: "chatcmpl-AbC123",
  object: "chat.completion",
  created: 1_745_000_000,
  model: "gpt-4o-audio-preview-2024-12-17",
  choices: [
    {
      index: 0,
      message: { role: "assistant", content: "A dog barks twice, then a door closes.", refusal: null, annotations: [] },
      logprobs: null,
      finish_reason: "stop",
    },
  ],
  usage: {
    prompt_tokens: 52,
    completion_tokens: 11,
    total_tokens: 63,
    prompt_tokens_details: { cached_tokens: 0, audio_tokens: 45 },
    completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  },
  service_tier: "default",
  system_fingerprint: "fp_0123456789",
};

/** The same completion with `content` as text parts, as some OpenAI-compatible servers answer. */
export const COMPLETION_PARTS = {
  ...COMPLETION_STRING,
  choices: [
    {
      index: 0,
      message: { role: "assistant", content: [{ type: "text", text: "A dog barks twice, " }, { type: "text", text: "then a door closes." }] },
      finish_reason: "stop",
    },
  ],
};

/** A refusal (`ChatCompletionMessage.refusal`, `content` null). */
export const COMPLETION_REFUSAL = {
  ...COMPLETION_STRING,
  choices: [{ index: 0, message: { role: "assistant", content: null, refusal: "I can't help with that." }, finish_reason: "stop" }],
};

/** An error object in a 200 (OpenAI's error shape, `{"error": {message, type, param, code}}`). */
export const ERROR_IN_200 = { error: { message: "The server had an error while processing your request.", type: "server_error", param: null, code: null } };
