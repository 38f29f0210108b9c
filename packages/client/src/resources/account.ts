/**
 * The account (D2, D32, D34): `client.auth` registers, signs in and reads the account and its limits;
 * `client.keys` manages its API keys and their controls.
 *
 * ```ts
 * const me = await client.auth.me();                       // balance_usd, tier, email...
 * const key = await client.keys.create({ name: "laptop", spend_limit_usd: 5 });
 * ```
 */
import { type APIClient, type RequestOptions, unwrap } from "../core.ts";
import type { Answer, JsonBody } from "../types.ts";

/** `client.auth`: the account itself. */
export class Auth {
  private readonly client: APIClient;

  constructor(client: APIClient) {
    this.client = client;
  }

  /** `GET /v1/auth/me`: the account: `user_id`, `email`, `balance_usd` (USD), `tier`, `total_deposits_usd`. */
  me(options: RequestOptions = {}): Promise<Answer<"getAccount">> {
    return unwrap(this.client.raw.GET("/v1/auth/me", this.client.requestInit(options)));
  }

  /** `GET /v1/auth/limits`: the account's rate and concurrency limits (D13) for its tier. */
  limits(options: RequestOptions = {}): Promise<Answer<"getAccountLimits">> {
    return unwrap(this.client.raw.GET("/v1/auth/limits", this.client.requestInit(options)));
  }

  /** `POST /v1/auth/register`: a new account with its first API key and a session token (shown once). Not retried. */
  register(body: JsonBody<"register">, options: RequestOptions = {}): Promise<Answer<"register">> {
    return unwrap(this.client.raw.POST("/v1/auth/register", { body, ...this.client.requestInit(options) }));
  }

  /** `POST /v1/auth/login`: a session token for `email` and `password`. Throws `AuthenticationError` (401) for a wrong pair. */
  login(body: JsonBody<"login">, options: RequestOptions = {}): Promise<Answer<"login">> {
    return unwrap(this.client.raw.POST("/v1/auth/login", { body, ...this.client.requestInit(options) }));
  }
}

/** `client.keys`: the account's API keys (D34 controls: spend limit per period, expiry, models, rpm). */
export class Keys {
  private readonly client: APIClient;

  constructor(client: APIClient) {
    this.client = client;
  }

  /** `GET /v1/auth/keys`: every key (prefix only, never the secret) with what it spent in its period. */
  list(options: RequestOptions = {}): Promise<Answer<"listKeys">> {
    return unwrap(this.client.raw.GET("/v1/auth/keys", this.client.requestInit(options)));
  }

  /**
   * `POST /v1/auth/keys`: a new key; the answer's `api_key` is the secret, shown only this once. `mode:
   * "test"` makes a test-mode key (D32, served by the simulator, no money moves). Not retried.
   */
  create(body: JsonBody<"createKey">, options: RequestOptions = {}): Promise<Answer<"createKey">> {
    return unwrap(this.client.raw.POST("/v1/auth/keys", { body, ...this.client.requestInit(options) }));
  }

  /** `PATCH /v1/auth/keys/{key_id}`: changes the fields given (name, controls; null clears a control). Not retried. */
  update(keyId: string, body: JsonBody<"updateKey">, options: RequestOptions = {}): Promise<Answer<"updateKey">> {
    return unwrap(this.client.raw.PATCH("/v1/auth/keys/{key_id}", { params: { path: { key_id: keyId } }, body, ...this.client.requestInit(options) }));
  }

  /** `DELETE /v1/auth/keys/{key_id}`: the key stops working at once. Throws `NotFoundError` (404 `key_not_found`). */
  delete(keyId: string, options: RequestOptions = {}): Promise<Answer<"deleteKey">> {
    return unwrap(this.client.raw.DELETE("/v1/auth/keys/{key_id}", { params: { path: { key_id: keyId } }, ...this.client.requestInit(options) }));
  }
}
