/**
 * Types the HTTP layer shares: the app type every route file receives. A leaf module of http/ (it imports
 * only packages), so route files, `openapi.ts` and `router-errors.ts` name the app without importing
 * `app.ts`, which imports them (no import cycle).
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyBaseLogger, FastifyInstance } from "fastify";

/**
 * The app type every route file receives: a Fastify instance with the TypeBox type provider, so a
 * handler's `req.body`, `req.query`, `req.params` and `req.headers` are the static types of the route
 * schema's TypeBox schemas (`schemas/common.ts` `route()`).
 */
export type App = FastifyInstance<
  Server,
  IncomingMessage,
  ServerResponse,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;
