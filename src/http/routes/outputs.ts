/**
 * Stored outputs: the permanent file URLs (public, unguessable, with Range support), the caller's
 * gallery and public share pages (D8, D19).
 */
import { isExpiredOutputKey, listGallery, sharedOutput } from "../../jobs/outputs.ts";
import { AppError } from "../../errors.ts";
import { sharePage } from "../share-page.ts";
import type { Services } from "../../services.ts";
import type { App } from "../types.ts";
import { principalOf } from "../auth.ts";
import { sendBlob } from "../range.ts";
import { IDEMPOTENT_ANSWER_PREFIX } from "../../billing/idempotent-calls.ts";
import { errors } from "../../errors.ts";
import { fileRouteDoc, getFileSchema, getSharePageSchema, listGallerySchema } from "../schemas/outputs.ts";

/** The policy stored SVG files are served with: no scripts, no external loads, a sandboxed origin. */
export const SVG_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; sandbox";

/** Public: `GET /v1/files/*` and `GET /share/{job_id}`. */
export function outputPublicRoutes(app: App, services: Services): void {
  app.get<{ Params: { "*": string } }>("/v1/files/*", { schema: getFileSchema, config: { swaggerTransform: fileRouteDoc } }, async (req, reply) => {
    const key = req.params["*"];
    // Stored answers of idempotent calls are their caller's alone (they may hold speech or chat output).
    if (key.startsWith(IDEMPOTENT_ANSWER_PREFIX)) throw errors.notFound("No such file.");
    const range = typeof req.headers.range === "string" ? req.headers.range : undefined;
    // SVG is a document that can carry scripts: served under a policy that runs none of them.
    const extra: Record<string, string> = key.endsWith(".svg") ? { "content-security-policy": SVG_CSP } : {};
    try {
      return await sendBlob(reply, services.blobs, key, range, extra);
    } catch (err) {
      // A job's file deleted by the retention sweep (D46) answers 410, not 404.
      if (err instanceof AppError && err.status === 404 && (await isExpiredOutputKey(services.db.kysely, key))) throw errors.outputExpired();
      throw err;
    }
  });
  app.get(
    "/share/:job_id",
    { schema: getSharePageSchema },
    async (req, reply) => {
      const item = await sharedOutput(services.db.kysely, services.config.publicBaseUrl, req.params.job_id);
      return reply
        .type("text/html; charset=utf-8")
        .header("content-security-policy", "default-src 'none'; media-src 'self' http: https:; img-src 'self' http: https:; style-src 'unsafe-inline'")
        .send(sharePage(item));
    },
  );
}

/** With a key or session: `GET /v1/gallery`. */
export function galleryRoutes(app: App, services: Services): void {
  app.get("/v1/gallery", { schema: listGallerySchema }, async (req) => {
    const query = req.query;
    const page = await listGallery(services.db.kysely, services.config.publicBaseUrl, principalOf(req).accountId, {
      limit: query.limit === undefined ? 20 : Number(query.limit),
      after: query.after ?? null,
    });
    return { object: "list", data: page.items, has_more: page.hasMore };
  });
}
