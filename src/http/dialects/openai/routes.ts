/**
 * The OpenAI dialect (D37), registered by app.ts in one line. Two surfaces, both authenticated with an API
 * key (`Authorization: Bearer`, as the `openai` SDK sends it) and both answering errors in the D1 body, which
 * is OpenAI's own error shape:
 *
 * - `/v1/videos...`: OpenAI's Videos API beside the native routes, for `new OpenAI({ baseURL: "<gateway>/v1" })`.
 * - `/openai/v1/...`: the whole dialect for `new OpenAI({ baseURL: "<gateway>/openai/v1" })`: the native chat,
 *   transcription and model routes (the same handlers, registered again under the prefix; the model list
 *   is the dialect's, models.ts), speech with OpenAI's model and voice names (speech.ts, D48), the Videos
 *   API, and the images in OpenAI's synchronous shape (images.ts). The operations registered there are
 *   documented under the tag `openai` with their operation ids prefixed `openai_` (one document, unique ids).
 *
 * In both, a `model` the dialect does not serve answers OpenAI's 404 `model_not_found` before anything is
 * held (models.ts `guardModels`, D48).
 */
import multipart from "@fastify/multipart";
import type { Services } from "../../../services.ts";
import { requireAuth } from "../../auth.ts";
import { audioTextRoutes } from "../../routes/audio-text.ts";
import { chatRoutes } from "../../routes/chat.ts";
import { modelRoutes } from "../../routes/models.ts";
import type { App } from "../../types.ts";
import { MAX_FILES } from "./form.ts";
import { openAIImageRoutes } from "./images.ts";
import { guardModels, openAIModels, requireServedModel } from "./models.ts";
import { openAISpeechRoutes } from "./speech.ts";
import { openAIListModelsSchema } from "./speech-schemas.ts";
import { MAX_IMAGE_UPLOAD_BYTES } from "./uploads.ts";
import { openAIVideoRoutes } from "./videos.ts";

/** The prefix of the whole dialect. */
export const OPENAI_PREFIX = "/openai";

/**
 * Multipart limits of the dialect's creates: up to {@link MAX_FILES} images of 10 MB (the body limit of the
 * gateway still bounds the whole form) and a few text fields (a `data:` URL may be long).
 */
async function registerMultipart(app: App): Promise<void> {
  await app.register(multipart, {
    throwFileSizeLimit: true,
    limits: { fileSize: MAX_IMAGE_UPLOAD_BYTES, files: MAX_FILES, fields: 24, fieldSize: 16 * 1024 * 1024, parts: MAX_FILES + 24 },
  });
}

/** Registers the dialect on `app` (see the module comment). */
export async function openAIRoutes(app: App, services: Services): Promise<void> {
  // `/v1/videos`: the Videos API beside the native routes.
  await app.register(async (videos) => {
    videos.addHook("onRequest", requireAuth(services, { allowSession: false }));
    guardModels(videos);
    await registerMultipart(videos);
    await openAIVideoRoutes(videos, services);
  });

  // `/openai/v1`: the whole dialect.
  await app.register(
    async (oa) => {
      // Before any route: every operation of this scope is documented under `openai` with its own id.
      oa.addHook("onRoute", (route) => {
        const schema = route.schema as { operationId?: string; tags?: string[] } | undefined;
        if (schema?.operationId === undefined) return;
        route.schema = { ...schema, operationId: `openai_${schema.operationId}`, tags: ["openai"] };
      });
      oa.addHook("onRequest", requireAuth(services, { allowSession: false }));
      guardModels(oa);
      chatRoutes(oa, services);
      openAISpeechRoutes(oa, services);
      modelRoutes(oa, services.payments, { models: openAIModels, schema: openAIListModelsSchema });
      await oa.register(async (scope) => audioTextRoutes(scope, services, { checkModel: requireServedModel }));
      await oa.register(async (scope) => {
        await registerMultipart(scope);
        await openAIVideoRoutes(scope, services);
        await openAIImageRoutes(scope, services);
      });
    },
    { prefix: OPENAI_PREFIX },
  );
}
