/**
 * Types of the SDK's calls, each derived from the generated document (`schema.ts`) by `operationId`:
 * nothing here restates a shape the document has.
 *
 * ```ts
 * type Job = Answer<"getJob">;            // the 2xx JSON answer of GET /v1/jobs/{id}
 * type Body = JsonBody<"createSpeech">;   // the JSON body of POST /v1/audio/speech
 * type Q = ListQuery<"listJobs">;         // the query of GET /v1/jobs, `limit` as a number too
 * ```
 */
import type { components, operations } from "./schema.ts";

/** An `operationId` of the document. */
export type OperationId = keyof operations;

type Responses<K extends OperationId> = operations[K]["responses"];

/** The JSON answer of operation `K` for a 2xx status (200, 201 or 202). */
export type Answer<K extends OperationId> = {
  [S in keyof Responses<K>]: S extends 200 | 201 | 202 ? (Responses<K>[S] extends { content: { "application/json": infer J } } ? J : never) : never;
}[keyof Responses<K>];

/** The JSON request body of operation `K`. */
export type JsonBody<K extends OperationId> = NonNullable<operations[K]["requestBody"]> extends { content: { "application/json": infer B } } ? B : never;

/** The query parameters of operation `K` (an empty object when it has none). */
export type Query<K extends OperationId> = operations[K]["parameters"] extends { query?: infer Q } ? NonNullable<Q> : Record<string, never>;

/**
 * The query of a list operation `K`, with `limit` (the page size, 1 to 100) taken as a number as well
 * as the decimal text the document types it as.
 */
export type ListQuery<K extends OperationId> = Omit<Query<K>, "limit"> & { limit?: number | string };

/** A schema of the document by name (`Schema<"MediaJob">`, `Schema<"Error">`). */
export type Schema<N extends keyof components["schemas"]> = components["schemas"][N];

/** A list query as the document types it: `limit` as decimal text, `undefined` entries left out. */
export function listQuery<Q extends { limit?: string }>(query: Omit<Q, "limit"> & { limit?: number | string }): Q {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(query)) if (v !== undefined) out[k] = k === "limit" ? String(v) : v;
  return out as Q;
}
