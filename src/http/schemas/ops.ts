/**
 * Route schemas of the operations endpoints.
 */
import { errors, obj, ok, oneOf, route } from "./common.ts";

/** `GET /healthz`. */
export const healthSchema = route({
  operationId: "health",
  summary: "Liveness",
  tags: ["operations"],
  access: "public",
  responses: { 200: ok("The process answers.", obj({ status: oneOf(["ok"], "Always `ok`.") }, ["status"])) },
});

/** `GET /readyz`. */
export const readySchema = route({
  operationId: "ready",
  summary: "Readiness",
  description: "Database and blob storage reachable (and Redis when required).",
  tags: ["operations"],
  access: "public",
  responses: {
    200: ok("Ready.", obj({ status: oneOf(["ready"], "`ready`."), checks: obj({}, [], { description: "Check -> `ok` or the failure.", additionalProperties: { type: "string" } }) }, ["status", "checks"])),
    503: ok("Not ready.", obj({ status: oneOf(["not_ready"], "`not_ready`."), checks: obj({}, [], { additionalProperties: { type: "string" } }) }, ["status", "checks"])),
  },
});

/** `GET /metrics`. */
export const metricsSchema = route({
  operationId: "metrics",
  summary: "Prometheus metrics",
  description:
    "Prometheus text for this process. Needs `Authorization: Bearer` with the operator's `METRICS_TOKEN`; without that setting the API port does not serve metrics (404), and with `METRICS_PORT` they are served only on that separate listener.",
  tags: ["operations"],
  access: "public",
  responses: {
    200: { description: "Prometheus text format.", content: { "text/plain": { schema: { type: "string" } } } },
    ...errors({ 401: "`auth_error` (missing or wrong metrics token)", 404: "`not_found` (metrics are not served on this port)" }),
  },
});

/** `GET /openapi.json`. */
export const openapiSchema = route({
  operationId: "openapi",
  summary: "This OpenAPI document",
  description:
    "The public API. Sent with the operator token (`Authorization: Bearer <GATEWAY_ADMIN_TOKEN>`), the document also lists the operator API (tag `operator`); any other caller, a wrong token included, gets the public document. Readable reference: `GET /docs`.",
  tags: ["operations"],
  access: "public",
  responses: { 200: ok("OpenAPI 3.1 document.", { type: "object" }) },
});
