/**
 * Shared schemas, registered as `#/components/schemas/<name>` of the OpenAPI document and referenced from
 * the route schemas with {@link ref}.
 */
import { arr, int, isoTime, JOB_STATUSES, nullable, num, obj, oneOf, type Schema, str, usd } from "./common.ts";

/** Shared schemas, referenced from the operations as `#/components/schemas/<name>`. */
export const COMPONENTS: Record<string, Schema> = {
  Error: obj(
    {
      error: obj(
        {
          code: str("Stable error code, for example `invalid_request`, `auth_error`, `billing_error`, `rate_limited`, `provider_error`."),
          message: str("Human-readable explanation."),
          type: oneOf(
            ["invalid_request_error", "authentication_error", "permission_error", "billing_error", "rate_limit_error", "provider_error", "api_error"],
            "Error class; follows the HTTP status (D16).",
          ),
          param: nullable(str("The offending request field, or null.")),
        },
        ["code", "message", "type", "param"],
      ),
    },
    ["error"],
    { description: "Every error answer (D1). Unknown routes answer 404 `not_found`, a wrong method 405 `method_not_allowed`." },
  ),
  MediaJob: obj(
    {
      id: str("Job id, `job_<random>`."),
      object: oneOf(["media.job"], "Always `media.job`."),
      kind: oneOf(["image", "video", "audio"], "Job kind."),
      model: str("Model id."),
      status: oneOf(JOB_STATUSES, "`succeeded`, `failed`, `refunded` and `expired` are terminal."),
      hold_usd: usd("Amount held at submit time"),
      cost_usd: nullable(usd("Final charge; null until the job succeeded")),
      created_at: isoTime("Creation time."),
      updated_at: isoTime("Last change."),
      output: nullable(
        obj(
          {
            url: str("Stable URL of the (first) output on this service."),
            content_type: str("MIME type of the output, for example `image/png`, `image/svg+xml`, `video/mp4`."),
            urls: arr(str("Output URL."), "Every output (several images when `n` > 1)."),
            duration_sec: num("Delivered length of a video, seconds (D26); absent for images.", { minimum: 0 }),
          },
          ["url", "content_type", "urls"],
        ),
      ),
      error: nullable(obj({ code: str("Error code."), message: str("Explanation.") }, ["code", "message"])),
      idempotency_key: nullable(str("The idempotency key of the request.")),
      fallback_layer: int("Which of the model family's upstream sources serves the job: 0 the first, 1 the next after a failover (D27).", { minimum: 0 }),
    },
    ["id", "object", "kind", "model", "status", "hold_usd", "cost_usd", "created_at", "updated_at", "output", "error", "idempotency_key", "fallback_layer"],
    { description: "An image or video job (D3)." },
  ),
  AudioGeneration: obj(
    {
      object: oneOf(["audio.generation"], "Always `audio.generation`."),
      job_id: str("Job id; the output appears in the gallery and on its share page."),
      kind: oneOf(["audio"], "Always `audio`."),
      model: str("Resolved model id."),
      url: str("Permanent URL of the stored MP3."),
      duration_sec: num("Clip duration used for billing, seconds."),
      cost_usd: usd("Charged amount"),
      balance_usd: usd("Remaining balance"),
    },
    ["object", "job_id", "kind", "model", "url", "duration_sec", "cost_usd", "balance_usd"],
    { description: "The JSON answer of music and sound effects with `?save_to_blob=1`." },
  ),
  Voice: obj(
    {
      provider: oneOf(["alpha", "beta"], "Provider of the voice."),
      voice_id: str("Opaque voice id."),
      name: str("Human-readable name."),
      category: str("alpha: for example `premade`, `cloned`."),
      labels: obj({}, [], { description: "alpha: filter facets (gender, age, accent, use case).", additionalProperties: { type: "string" } }),
      preview_url: str("alpha: short audio sample."),
      description: {
        description: "alpha: free text; beta: tags such as energy, language, gender.",
        oneOf: [{ type: "string" }, { type: "array", items: { type: "string" } }],
      },
    },
    ["provider", "voice_id", "name"],
    { description: "A voice library record.", additionalProperties: true },
  ),
  TierRow: obj(
    {
      tier: int("Tier number, 0 to 4."),
      name: str("Display name, `Tier 0` to `Tier 4`."),
      min_deposit: num("Minimum cumulative deposit, USD."),
      rpm: int("Requests per minute, per user."),
      per_model_rpm: int("Requests per minute for one model."),
      tpm: int("Tokens per minute, per user."),
      max_single_request: int("Most tokens in one request (input plus estimated output)."),
      image_concurrent: int("Concurrent image jobs."),
      image_queue_depth_cap: int("Queued image jobs behind the concurrency gate."),
      video_concurrent: int("Concurrent video jobs (0: video blocked)."),
      video_queue_depth_cap: int("Queued video jobs."),
      audio_concurrent: int("Legacy aggregate: the largest audio sub-pool."),
      audio_concurrent_per_provider: obj(
        { host_1: int("Transcription."), host_2: int("Audio understanding."), alpha: int("alpha-* models."), beta: int("beta-* models."), host_3: int("Voice cloning.") },
        ["host_1", "host_2", "alpha", "beta", "host_3"],
        { description: "Audio concurrency per upstream pool." },
      ),
      combined_media_concurrent: int("Tier 4 only: image and video share this pool."),
      combined_queue_depth_cap: int("Tier 4 only: queue cap of the combined pool."),
    },
    [
      "tier",
      "name",
      "min_deposit",
      "rpm",
      "per_model_rpm",
      "tpm",
      "max_single_request",
      "image_concurrent",
      "image_queue_depth_cap",
      "video_concurrent",
      "video_queue_depth_cap",
      "audio_concurrent",
      "audio_concurrent_per_provider",
    ],
    { description: "One row of the tier matrix." },
  ),
  TextPriceRow: obj(
    {
      id: str("Model id."),
      name: str("Display name."),
      input_per_1m: num("USD per million input tokens."),
      output_per_1m: num("USD per million output tokens."),
      cached_input_per_1m: num("USD per million cached input tokens (10% of input)."),
    },
    ["id", "name", "input_per_1m", "output_per_1m", "cached_input_per_1m"],
  ),
};
