/**
 * Request contracts of the media job submits (D3, D19, D31): the TypeBox schemas of the JSON bodies of
 * `POST /v1/images/generations`, `POST /v1/videos/generations` and `POST /v1/genmedia/jobs` (validated and
 * documented by `src/http/schemas/jobs.ts`) and their `Static` types; {@link MediaJobRequest} is the body a
 * job submit takes (`src/jobs/validate.ts` reads it into a job spec).
 */
import type { Static, TString } from "typebox";
import { HTTPS_URL, IDEMPOTENCY, modelsWith, PARAMETERS } from "./common.ts";
import { arr, coded, int, obj, oneOf, str } from "./schema.ts";

export const IMAGE_MODELS = modelsWith("image");
export const VIDEO_MODELS = modelsWith("video");
export const GENMEDIA_MODELS = VIDEO_MODELS.filter((id) => id.startsWith("vidD-"));

/** A media prompt: required, not blank, at most 4000 characters (code points), else `invalid_prompt`. */
const PROMPT = (description: string): TString =>
  coded(str(description, { minLength: 1, maxLength: 4000, pattern: "\\S", examples: ["a lighthouse at dusk, oil painting"] }), "invalid_prompt", "prompt must be text of 1 to 4000 characters.");
/** A reference image URL (`invalid_image_url`). */
const IMAGE_URL = (description: string): TString => coded(HTTPS_URL(description), "invalid_image_url", "{param} must be an https:// URL.");
const IDEMPOTENCY_KEY = { ...IDEMPOTENCY, minLength: 1, "x-error-message": "idempotency_key must be a string of 1 to 128 characters." };
const PARAMETERS_OBJECT = { ...PARAMETERS, "x-error-message": "parameters must be an object." };
/** Where this job's webhook events also go (D31), signed with the account's default secret. */
const WEBHOOK_URL = coded(
  str("Also POST this job's terminal event here, signed with the account's default secret (`GET /v1/webhooks/secret`). `https://` on a public address.", {
    maxLength: 2048,
    examples: ["https://example.com/hooks/jobs"],
  }),
  "invalid_webhook_url",
  "webhook_url must be an https:// URL.",
);

/** The body of `POST /v1/images/generations`. */
export const IMAGE_BODY = obj(
  {
    model: coded(
      oneOf(IMAGE_MODELS, "Image model (`imgB-1.1-ultra` and `imgA-v3` are legacy). `imgA-v4-vector*` produce SVG.", { examples: ["imgA-v4"] }),
      "invalid_model",
      "'{value}' is not a supported image model.",
    ),
    prompt: PROMPT("What to draw, at most 4000 characters."),
    n: int("Number of images, billed per image; `imgB-2-pro` always makes 1.", { minimum: 1, maximum: 4, default: 1, "x-error-message": "n must be an integer from 1 to 4." }),
    size: str("`auto`, `WIDTHxHEIGHT` or an aspect such as `16:9`; mapped to 1:1, 16:9, 9:16, 4:3, 3:4 or 21:9. Larger sizes raise the `imgB-2-pro` price.", { examples: ["auto", "1024x1024", "16:9"] }),
    image_url: IMAGE_URL("Source image: required for `imgB-edit-pro`, optional for `imgB-2-pro` (image-to-image), ignored by others."),
    image_urls: coded(
      arr(IMAGE_URL("Reference image."), "`imgB-2-pro` only: up to 10 references (the first 6 at high fidelity); takes precedence over `image_url`.", { maxItems: 10 }),
      "too_many_references",
      "image_urls must be an array of at most 10 URLs.",
    ),
    quality: oneOf(["low", "medium", "high"], "Quality tier, for `imgC-q1` (default `medium`); the hold books the tier's price.", { "x-error-message": "quality must be 'low', 'medium' or 'high'." }),
    idempotency_key: IDEMPOTENCY_KEY,
    parameters: PARAMETERS_OBJECT,
    webhook_url: WEBHOOK_URL,
  },
  ["model", "prompt"],
);

/** The body of `POST /v1/videos/generations` and `POST /v1/genmedia/jobs`, for the model ids `models`. */
export const videoBody = (models: string[], modelMessage: string) =>
  obj(
    {
      model: coded(oneOf(models, "Video model.", { examples: [models[0]] }), "invalid_model", modelMessage),
      prompt: PROMPT("What happens in the video (drives the motion with `image_url`), at most 4000 characters."),
      duration: coded(
        int("Seconds, each billed at the model's rate. `vidC-02-*` take 6 or 10 (default 6).", { minimum: 1, maximum: 10, default: 5 }),
        "invalid_duration",
        "duration must be a whole number of seconds from 1 to 10.",
      ),
      image_url: IMAGE_URL("First frame: switches to image-to-video (required for `vidC-02-512p`)."),
      idempotency_key: IDEMPOTENCY_KEY,
      parameters: PARAMETERS_OBJECT,
      webhook_url: WEBHOOK_URL,
    },
    ["model", "prompt"],
  );

/** An image job request body as received (types already checked by the route schema). */
export type ImageJobRequest = Static<typeof IMAGE_BODY>;
/** A video job request body as received (types already checked by the route schema). */
export type VideoJobRequest = Static<ReturnType<typeof videoBody>>;
/** The body of a media job submit: an image or a video job request. */
export type MediaJobRequest = ImageJobRequest | VideoJobRequest;
