/**
 * Route schemas of stored outputs: gallery, share pages, files (D8, D19).
 */
import { arr, AUTH_ERR, binary, bool, errors, html, isoTime, LIST, nullable, num, obj, ok, oneOf, PAGE_QUERY, route, str, usd } from "./common.ts";

/** `GET /v1/gallery`. */
export const listGallerySchema = route({
  operationId: "listGallery",
  summary: "The caller's stored outputs",
  description: "Stored audio (`save_to_blob`), succeeded images and videos, newest first.",
  tags: ["outputs"],
  access: "keyOrSession",
  query: PAGE_QUERY,
  responses: {
    200: ok(
      "One page.",
      LIST(
        obj(
          {
            job_id: str("Job id."),
            kind: oneOf(["image", "video", "audio"], "Kind."),
            model: str("Model id."),
            url: str("The (first) output."),
            urls: arr(str("URL."), "Every output."),
            content_type: str("MIME type."),
            duration_sec: nullable(num("Duration of audio or video, seconds.")),
            cost_usd: nullable(usd("Charged amount")),
            created_at: isoTime("Creation time."),
            share_url: str("Public share page."),
            mode: oneOf(["live", "test"], "`test` when a test-mode key made it: priced, but no money moved."),
            prompt: nullable(str("The prompt the job was made from (stored speech: its text); null when it had none, and once the organization's prompts retention window passed (or it keeps no prompts).")),
          },
          ["job_id", "kind", "model", "url", "urls", "content_type", "duration_sec", "cost_usd", "created_at", "share_url", "mode", "prompt"],
        ),
        { has_more: bool("More items follow.") },
      ),
    ),
    ...errors({ 400: "`invalid_request` (limit outside 1-100)", ...AUTH_ERR }),
  },
});

/** `GET /share/:job_id`. */
export const getSharePageSchema = route({
  operationId: "getSharePage",
  summary: "Public share page of one output",
  tags: ["outputs"],
  access: "public",
  params: obj({ job_id: str("Job id of a succeeded job.", { maxLength: 64 }) }, ["job_id"]),
  responses: {
    200: html("An HTML page showing the output."),
    ...errors({ 404: "`job_not_found`", 410: "`output_expired` (the output's files were deleted at the end of its organization's retention window)" }),
  },
});

/** `GET /v1/files/*`. */
export const getFileSchema = route({
  operationId: "getFile",
  summary: "A stored output file",
  description:
    "Public, unguessable URLs of stored outputs (as found in `output.url`), kept for the organization's outputs retention window (30 days unless the operator or the organization set another); then the file is deleted and its URL answers 410 `output_expired`. Supports `Range` requests.",
  tags: ["outputs"],
  access: "public",
  headers: obj({ range: str("Optional byte range, for example `bytes=0-1023`.") }),
  responses: {
    200: { description: "The file.", content: { "*/*": { schema: binary("The file.") } } },
    206: { description: "The requested range.", content: { "*/*": { schema: binary("Part of the file.") } } },
    ...errors({ 404: "`not_found`", 410: "`output_expired` (deleted at the end of the retention window)", 416: "`range_not_satisfiable`" }),
  },
});

/**
 * The wildcard route `/v1/files/*` as documented: the path `/v1/files/{key}` with its `key` parameter
 * (Fastify names the wildcard `*`, which OpenAPI cannot show). Used as the route's `swaggerTransform`.
 */
export function fileRouteDoc({ schema }: { schema: unknown }): { schema: Record<string, unknown>; url: string } {
  return { schema: { ...(schema as Record<string, unknown>), params: obj({ key: str("Storage key (may contain `/`).") }, ["key"]) }, url: "/v1/files/{key}" };
}
