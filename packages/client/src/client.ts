/**
 * `Gateway`: the SDK's client, its calls grouped in resource namespaces (in the manner of openai-node),
 * every one typed from the generated document (`schema.ts`) and going through the policy of `core.ts`
 * (per-call `timeout` and `signal`, retries with backoff that honour `Retry-After`, errors by status).
 *
 * ```ts
 * const client = new Gateway({ baseUrl: "http://127.0.0.1:8080", apiKey: process.env.GATEWAY_API_KEY });
 * const me = await client.auth.me();
 * const job = await client.images.generateAndWait({ model: "imgA-v4", prompt: "a fox" });
 * for await (const j of client.jobs.list({ status: "failed" })) console.log(j.id, j.error?.code);
 * const team = client.withOrg("org_..."); // a session acting for another of its organizations (D41)
 * const speech = await client.realtime.speech({ voiceId: "JBFqnCBsd6RMkjVDRZzb" }); // a socket (realtime.ts)
 * ```
 */
import { APIClient, type ClientOptions, ORG_HEADER } from "./core.ts";
import { Auth, Keys } from "./resources/account.ts";
import { Admin } from "./resources/admin.ts";
import { Audio, Voices } from "./resources/audio.ts";
import { Billing, Requests, Usage } from "./resources/billing.ts";
import { Budgets } from "./resources/budgets.ts";
import { Files, Gallery, Models, Pricing, System } from "./resources/catalog.ts";
import { Genmedia, Images, Jobs, Videos } from "./resources/jobs.ts";
import { Invites, Orgs } from "./resources/orgs.ts";
import { Realtime } from "./realtime.ts";
import { Chat, Messages } from "./resources/text.ts";
import { Webhooks } from "./resources/webhooks.ts";

/** The gateway's API, one namespace per resource. */
export class Gateway extends APIClient {
  /** Speech, music, sound effects, transcription, audio understanding (D20). */
  readonly audio: Audio;
  /** The realtime sockets: speech (text in, audio out, D42) and transcription (audio in, text out, D43). */
  readonly realtime: Realtime;
  /** The voice library, previews, cloned and designed voices. */
  readonly voices: Voices;
  /** Media jobs: list (paginated), get, cancel, events, wait (D3, D30). */
  readonly jobs: Jobs;
  /** Image jobs. */
  readonly images: Images;
  /** Video jobs. */
  readonly videos: Videos;
  /** Jobs of any kind by model (`/v1/genmedia/jobs`). */
  readonly genmedia: Genmedia;
  /** The account: me, limits, register, login. */
  readonly auth: Auth;
  /** API keys and their controls (D34). */
  readonly keys: Keys;
  /** Organizations, their members and invites (D41). */
  readonly orgs: Orgs;
  /** Invites received: accept one (D41). */
  readonly invites: Invites;
  /** Ledger (paginated), low-balance alert, checkout. */
  readonly billing: Billing;
  /** Budgets on calendar windows (D44). */
  readonly budgets: Budgets;
  /** Usage totals, CSV and the FOCUS export (D29). */
  readonly usage: Usage;
  /** The usage log (paginated, D29). */
  readonly requests: Requests;
  /** Webhook endpoints and deliveries (paginated). */
  readonly webhooks: Webhooks;
  /** The model catalog. */
  readonly models: Models;
  /** Prices, tiers, capabilities. */
  readonly pricing: Pricing;
  /** The account's outputs (paginated). */
  readonly gallery: Gallery;
  /** Stored outputs. */
  readonly files: Files;
  /** OpenAI-shaped chat completions. */
  readonly chat: Chat;
  /** Anthropic-shaped messages. */
  readonly messages: Messages;
  /** The operator's routes (with the operator token as key). */
  readonly admin: Admin;
  /** Health, readiness, metrics, the OpenAPI document. */
  readonly system: System;

  /**
   * A client of the gateway at `options.baseUrl`, sending `options.apiKey` as `Authorization: Bearer` and
   * `options.org`, when given, as `X-Svc-Org` (D41).
   */
  constructor(options: ClientOptions) {
    super(options);
    this.audio = new Audio(this);
    this.realtime = new Realtime({
      baseUrl: this.baseUrl,
      apiKey: options.apiKey,
      headers: this.org === null ? { ...options.defaultHeaders } : { ...options.defaultHeaders, [ORG_HEADER]: this.org },
    });
    this.voices = new Voices(this);
    this.jobs = new Jobs(this);
    this.images = new Images(this);
    this.videos = new Videos(this);
    this.genmedia = new Genmedia(this);
    this.auth = new Auth(this);
    this.keys = new Keys(this);
    this.orgs = new Orgs(this);
    this.invites = new Invites(this);
    this.billing = new Billing(this);
    this.budgets = new Budgets(this);
    this.usage = new Usage(this);
    this.requests = new Requests(this);
    this.webhooks = new Webhooks(this);
    this.models = new Models(this);
    this.pricing = new Pricing(this);
    this.gallery = new Gallery(this);
    this.files = new Files(this);
    this.chat = new Chat(this);
    this.messages = new Messages(this);
    this.admin = new Admin(this);
    this.system = new System(this);
  }

  /**
   * A client like this one (same address, credential, retries, timeout, headers) acting for organization
   * `orgId` (`X-Svc-Org`, D41); null: for the credential's default one (a session's personal organization,
   * a key's own). This client is unchanged. With a session token, `orgId` must be one of the user's
   * organizations; with an API key, its own: otherwise calls throw `NotFoundError` (404 `org_not_found`).
   */
  withOrg(orgId: string | null): Gateway {
    return new Gateway({ ...this.options, org: orgId });
  }
}
