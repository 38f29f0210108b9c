/**
 * Account routes (spec "Authentication", D2, D8, D21): registration and login (public), the caller's
 * account and key management (API key or session token).
 */
import { me } from "../../accounts/accounts.ts";
import { createKey, deleteKey, listKeys, patchKey } from "../../accounts/keys.ts";
import { login, register } from "../../accounts/registration.ts";
import { tierRowJson } from "../../catalog/pricing.ts";
import { jobUsage } from "../../jobs/jobs.ts";
import type { Services } from "../../services.ts";
import type { App } from "../types.ts";
import { principalOf } from "../auth.ts";
import { auditContextOf, auditRequestOf, requestIdHeader } from "../audit-context.ts";
import { AppError } from "../../errors.ts";
import { createKeySchema, deleteKeySchema, updateKeySchema, getAccountLimitsSchema, getAccountSchema, listKeysSchema, loginSchema, registerSchema } from "../schemas/auth.ts";

/** `POST /v1/auth/register`, `POST /v1/auth/login`. */
export function authPublicRoutes(app: App, services: Services): void {
  const limits = services.config.authLimits;
  app.post("/v1/auth/register", { schema: registerSchema, onRequest: requestIdHeader }, async (req) => {
    await services.limiter.registration(req.ip, limits);
    return register(services.db.kysely, req.body, auditRequestOf(req));
  });
  app.post("/v1/auth/login", { schema: loginSchema, onRequest: requestIdHeader }, async (req) => {
    const body = req.body;
    const email = typeof body.email === "string" ? body.email : "";
    await services.limiter.loginAllowed(email, req.ip, limits);
    try {
      const session = await login(services.db.kysely, body, auditRequestOf(req));
      await services.limiter.loginSucceeded(email, limits);
      return session;
    } catch (err) {
      if (err instanceof AppError && err.status === 401) await services.limiter.loginFailed(email, req.ip, limits);
      throw err;
    }
  });
}

/** `GET /v1/auth/me`, `GET|POST /v1/auth/keys`, `PATCH|DELETE /v1/auth/keys/{key_id}` (D8, D21, D34). */
export function accountRoutes(app: App, services: Services): void {
  app.get("/v1/auth/me", { schema: getAccountSchema }, async (req) => me(services.db.kysely, principalOf(req)));
  app.get("/v1/auth/limits", { schema: getAccountLimitsSchema }, async (req) => {
    const p = principalOf(req);
    const usage = await services.limiter.usage(p.accountId);
    return {
      object: "account.limits",
      ...tierRowJson(p.limits),
      usage: {
        requests_this_minute: usage.rpm,
        tokens_this_minute: usage.tpm,
        window_resets_in_s: usage.resetS,
        audio_in_use: usage.audio,
        ...(await jobUsage(services.db.kysely, p.accountId)),
      },
    };
  });
  app.get("/v1/auth/keys", { schema: listKeysSchema }, async (req) => ({
    object: "list",
    data: await listKeys(services.db.kysely, principalOf(req).accountId),
  }));
  app.post("/v1/auth/keys", { schema: createKeySchema }, async (req, reply) => {
    const body = req.body && typeof req.body === "object" ? req.body : {};
    const out = await createKey(services.db.kysely, principalOf(req), body, auditContextOf(req));
    return reply.code(201).send(out);
  });
  app.patch("/v1/auth/keys/:key_id", { schema: updateKeySchema }, async (req) => {
    const { key_id } = req.params;
    return patchKey(services.db.kysely, services.auth, principalOf(req), key_id, req.body, auditContextOf(req));
  });
  app.delete(
    "/v1/auth/keys/:key_id",
    { schema: deleteKeySchema },
    async (req) => {
      const { key_id } = req.params;
      await deleteKey(services.db.kysely, services.auth, principalOf(req), key_id, auditContextOf(req));
      return { key_id, deleted: true };
    },
  );
}
