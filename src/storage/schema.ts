/**
 * Table types of the gateway's database, one place for all of them (docs/architecture.md "storage/").
 * Amount columns are integer micro-USD; `*_at` columns are Unix epoch milliseconds (integers), which
 * compare and sort the same on SQLite and PostgreSQL.
 */
import type { Generated } from "kysely";

/**
 * An organization (D41): the billing entity. It owns the balance, ledger, tier, limits, keys, webhooks,
 * alerts and top-ups; users are its members (`memberships`). The table keeps its pre-D41 name, and every
 * `account_id` column of every other table is an organization's id (`org_<random>`; migration 016).
 */
export interface AccountsTable {
  /** `org_<random>`. */
  id: string;
  /** The organization's display name (a personal organization: its owner's email). */
  name: string | null;
  /** micro-USD; never negative; equals the sum of the account's ledger entries. */
  balance_micros: number;
  /** Cumulative deposits, micro-USD; drives the tier. */
  total_deposits_micros: number;
  /** Operator override of the tier (D9), or null. */
  tier_override: number | null;
  /** Per-account limit overrides (D22) as JSON text, or null. */
  limits_override: string | null;
  created_at: number;
  /** The low-balance alert threshold (D34), micro-USD, or null for none. */
  low_balance_micros: Generated<number | null>;
  /** 1 while the next fall below the threshold sends `balance.low`; 0 after it did, until the balance is back above. */
  low_balance_armed: Generated<number>;
  /** 1 while the organization has at least one budget (D44), else 0. */
  has_budgets: Generated<number>;
}

export interface ApiKeysTable {
  id: string;
  /** The organization the key belongs to and acts for (D41). */
  account_id: string;
  /** The user who made the key (D41), or null; the key survives that user's removal. */
  created_by: string | null;
  /** What the key may manage (D41): its creator's role when it was made, at most `admin`. */
  role: Generated<Role>;
  name: string | null;
  /** SHA-256 of the secret, hex. The secret itself is never stored. */
  key_hash: string;
  /** First 12 characters of the secret (D24). */
  prefix: string;
  created_at: number;
  last_used_at: number | null;
  /** `live` (moves money) or `test` (served by the simulator, moves no money; D32). */
  mode: Generated<KeyMode>;
  /** The key's spend limit (D34), micro-USD, or null for none. */
  spend_limit_micros: Generated<number | null>;
  /** The period of the limit and of `spent_usd` (D34); null reads as `month`. */
  spend_limit_period: Generated<SpendPeriod | null>;
  /** When the key stops working (D34), epoch ms, or null. */
  expires_at: Generated<number | null>;
  /** The model allow-list (D34): a JSON array of ids and `prefix*` patterns, or null for every model. */
  models_json: Generated<string | null>;
  /** The key's own requests per minute (D34), or null (only the account's). */
  rpm: Generated<number | null>;
  /** Open holds and captured charges of the key in the period starting at `spent_period_start`, micro-USD (kept for keys with a limit). */
  spent_micros: Generated<number>;
  /** Start of the period `spent_micros` counts, epoch ms (UTC; 0 for `total`). */
  spent_period_start: Generated<number>;
}

/** The period of a key's spend limit (D34), in UTC. */
export type SpendPeriod = "day" | "week" | "month" | "total";

/** The mode of an API key and of what it does (D32). */
export type KeyMode = "live" | "test";

/** A login (D41): one person, a member of organizations. */
export interface UsersTable {
  /** `usr_<random>`. */
  id: string;
  /** Trimmed and lower-cased; unique. */
  email: string;
  password_hash: string;
  /** The organization made with the user at registration, or null; a session acts for it by default. */
  personal_org_id: string | null;
  created_at: number;
}

/** A member's role in an organization (D41), strongest first. */
export type Role = "owner" | "admin" | "member" | "viewer";

/** A user's role in an organization (D41). */
export interface MembershipsTable {
  org_id: string;
  user_id: string;
  role: Role;
  created_at: number;
}

/** An invitation to an organization (D41): accepted once, by a session of the invited email, before `expires_at`. */
export interface InvitesTable {
  /** `inv_<random>`. */
  id: string;
  org_id: string;
  /** Trimmed and lower-cased. */
  email: string;
  role: Role;
  /** SHA-256 of the token, hex. The token itself is shown once. */
  token_hash: string;
  created_by: string | null;
  created_at: number;
  expires_at: number;
  accepted_at: number | null;
}

export interface SessionsTable {
  id: string;
  /** Sessions belong to users (D41); the organization is chosen per request (`X-Svc-Org`). */
  user_id: string;
  /** SHA-256 of the session token, hex. */
  token_hash: string;
  created_at: number;
  expires_at: number;
}

/** Ledger entry kinds (D7). */
export type LedgerKind =
  | "signup_credit"
  | "deposit"
  | "hold"
  | "hold_release"
  | "charge"
  | "refund"
  | "adjustment";

export interface LedgerEntriesTable {
  /** Internal monotonic sequence: the order of entries (newest first), never shown. */
  seq: Generated<number>;
  /** Public id `le_<random>` (D29), unique; what the API shows and `after` cursors name. */
  id: string;
  account_id: string;
  /**
   * The user behind a credit (signup, a top-up, D41), or null; entries of a paid call show the user of
   * its usage record (`request_id`).
   */
  user_id: Generated<string | null>;
  kind: LedgerKind;
  /** Signed micro-USD: credits positive, debits negative. */
  amount_micros: number;
  /** Balance right after this entry (D17), micro-USD. */
  balance_after_micros: number;
  hold_id: string | null;
  job_id: string | null;
  /** The request (`req_...`) of the paid call the entry belongs to (D29), or null. */
  request_id: Generated<string | null>;
  /** Free text: model id, deposit reference, ... */
  reference: string | null;
  created_at: number;
}

/** Hold states: a hold is captured or released exactly once (docs/architecture.md invariant 2). */
export type HoldStatus = "open" | "captured" | "released";

export interface HoldsTable {
  id: string;
  account_id: string;
  /** Amount held, micro-USD (positive). */
  amount_micros: number;
  status: HoldStatus;
  /** Amount charged at capture, micro-USD; null until captured. */
  captured_micros: number | null;
  job_id: string | null;
  /** The request (`req_...`) that placed the hold (D29); its capture and release entries carry it too. */
  request_id: Generated<string | null>;
  /** What the hold is for (model id). */
  reference: string | null;
  created_at: number;
  settled_at: number | null;
  /** The key whose spend counter counts this hold (D34), or null when its key had no limit. */
  key_id: Generated<string | null>;
  /** The period of that counter the hold counts in (`api_keys.spent_period_start`), or null. */
  key_period_start: Generated<number | null>;
  /** A realtime socket's hold (D42, D43): what it has charged so far, micro-USD, as last persisted; else null. */
  metered_micros: Generated<number | null>;
  /** A realtime socket's hold: when its running count was last persisted, epoch ms; null for every other hold. */
  heartbeat_at: Generated<number | null>;
  /** 1 when the hold was counted in budget counters (D44; rows of `hold_budgets`), else 0. */
  budgeted: Generated<number>;
}

/** Designed (`design`) or cloned (`clone`) voices, owned by one account. */
export interface VoicesTable {
  /** `svc_<random>`. */
  id: string;
  account_id: string;
  name: string | null;
  source: "design" | "clone";
  /** The upstream's id of the voice (what the adapter is given). */
  upstream_voice_id: string | null;
  /** The `UPSTREAMS` source the voice lives on (D27), or null: the simulator made it. */
  upstream_source: string | null;
  description: string | null;
  created_at: number;
}

/** Job states (spec "Media job", D3). */
export type JobStatus = "pending" | "processing" | "succeeded" | "failed" | "refunded" | "expired";

/** A media job: an asynchronous image/video generation, or a stored audio output (`save_to_blob`). */
export interface JobsTable {
  /** `job_<random>`. */
  id: string;
  account_id: string;
  api_key_id: string | null;
  kind: "image" | "video" | "audio";
  model: string;
  status: JobStatus;
  hold_id: string | null;
  /** Amount held at submit, micro-USD. */
  hold_micros: number;
  /** Amount charged, micro-USD; null until succeeded. */
  cost_micros: number | null;
  /** The validated request (JSON text). */
  request_json: string;
  /** SHA-256 of the request body, to tell idempotent replays from conflicts. */
  request_hash: string | null;
  idempotency_key: string | null;
  /** `{"key", "content_type", "keys": [...]}` of the stored output(s) (JSON text), or null. */
  output_json: string | null;
  /** Media duration in seconds (audio, video), or null. */
  duration_sec: number | null;
  error_code: string | null;
  error_message: string | null;
  created_at: number;
  updated_at: number;
  started_at: number | null;
  heartbeat_at: number | null;
  worker_id: string | null;
  /** The source (`UPSTREAMS` name) that accepted the job, or null (simulator, or not yet accepted). D28. */
  upstream_source: string | null;
  /** The `UpstreamHandle` (JSON text) to resume the job by polling; never submitted again once set. D28. */
  upstream_handle_json: string | null;
  /** Index of the source in its family's list that serves the job (0: the first). D27. */
  fallback_layer: Generated<number>;
  /**
   * What the delivered job cost upstream, micro-USD: what the source said it charged, else the provider's
   * list price (`upstream_cost_basis` tells which); null for jobs no real source served.
   */
  upstream_cost_micros: number | null;
  /** `reported` or `list_price` (see `upstream_cost_micros`), or null. */
  upstream_cost_basis: "reported" | "list_price" | null;
  /** A pending job is not claimed before this time (ms since epoch): its family's sources were full. D28. */
  not_before: number | null;
  /** How far a `processing` job is, 0..1, as the runner last learned it from the upstream; null when unknown. D30. */
  progress: number | null;
  /** The W3C `traceparent` of the submit's request (D40): the runner and the webhooks continue its trace; null untraced. */
  traceparent: Generated<string | null>;
  /** Where this job's webhook events go besides the account's endpoints (D31), or null. */
  webhook_url: Generated<string | null>;
  /** The mode of the key that submitted it (D32): a `test` job is served by the simulator and holds nothing. */
  mode: Generated<KeyMode>;
  /** Epoch ms after which the job is canceled (`Cancel-After`, D47), or null. */
  deadline_at: Generated<number | null>;
  /**
   * JSON array of the prediction events (`start`, `output`, `completed`) the job's `webhook_url` receives in
   * the prediction format (D47); null: the URL receives the native job events (D31).
   */
  webhook_events_json: Generated<string | null>;
  /** What a dialect keeps to render the job as its caller named it (JSON text, D47), or null. */
  dialect_json: Generated<string | null>;
}

/** A webhook endpoint of an account (D31). */
export interface WebhookEndpointsTable {
  /** `we_<random>`. */
  id: string;
  account_id: string;
  url: string;
  /** JSON array of the event types sent to it. */
  events_json: string;
  /** The `whsec_...` signing secret (stored so it can sign; never logged or shown again). */
  secret: string;
  /** 1 once the endpoint answered 410: nothing more is sent to it. */
  disabled: number;
  created_at: number;
}

/** The account's default signing secret, for a submit's `webhook_url` (D31). */
export interface WebhookSecretsTable {
  account_id: string;
  secret: string;
  created_at: number;
}

/** An event in the outbox (D31), written in the transaction that caused it. */
export interface WebhookEventsTable {
  /** `evt_<random>`: the `webhook-id` of every delivery and retry. */
  id: string;
  account_id: string;
  type: string;
  /** The job the event is about, or null (`balance.low`). */
  job_id: string | null;
  /** The event's `data` (JSON text); for job events rendered at the first delivery attempt, then kept. */
  data_json: string | null;
  created_at: number;
}

/** Delivery states (D31). */
export type WebhookDeliveryStatus = "pending" | "succeeded" | "failed";

/** One event to one destination (an endpoint, or the job's `webhook_url`), with its attempts (D31). */
export interface WebhookDeliveriesTable {
  /** Internal order of the delivery log (newest first), never shown. */
  seq: Generated<number>;
  /** `whd_<random>`. */
  id: string;
  event_id: string;
  event_type: string;
  account_id: string;
  /** The endpoint, or null for a submit's `webhook_url`. */
  endpoint_id: string | null;
  url: string;
  status: WebhookDeliveryStatus;
  /** JSON array of `{at, status_code, duration_ms, error}`. */
  attempts_json: string;
  /** Failed attempts since the delivery was created or replayed: the position in the retry schedule. */
  failures: number;
  /** When the next attempt is due (pending), else null. */
  next_attempt_at: number | null;
  /** A claimed delivery is not claimed again before this time (a sender died: it is retried after). */
  lease_until: number | null;
  lease_owner: string | null;
  created_at: number;
  updated_at: number;
}

/** Usage statuses (D29): a job's statuses, `processing` for a synchronous call in flight. */
export type UsageStatus = JobStatus;

/** What a paid call was (D29). */
export type UsageKind =
  | "speech"
  | "music"
  | "sfx"
  | "voice_design"
  | "voice_clone"
  | "transcription"
  | "audio_understanding"
  | "chat"
  | "image"
  | "video";

/**
 * One paid call (D29): written with its hold (or, for a test-mode key, where the hold would have been)
 * and updated in the transaction that captures or releases it, so usage and ledger agree. Unit columns
 * are null when the unit does not apply to the kind.
 */
export interface UsageRecordsTable {
  /** The request id `req_<random>` (`X-Svc-Request-Id`). */
  id: string;
  account_id: string;
  /** The member who made the call (D41): the key's creator or the session's user; null when unknown. */
  user_id: Generated<string | null>;
  key_id: string | null;
  mode: KeyMode;
  model: string;
  kind: UsageKind;
  status: UsageStatus;
  job_id: string | null;
  /** What was (or, in test mode, would have been) held, micro-USD. */
  hold_micros: number;
  /** What was charged, micro-USD: null while pending or processing, 0 when nothing was charged. */
  cost_micros: number | null;
  /** Speech: billed characters. */
  characters: number | null;
  /** Music, sound effects, video: the `seconds` unit in milliseconds (exact integer sums). */
  duration_ms: number | null;
  /** Images generated (requested `n`). */
  images: number | null;
  /** Chat: prompt tokens, cached ones included (as OpenAI's `prompt_tokens`). */
  input_tokens: number | null;
  output_tokens: number | null;
  cached_tokens: number | null;
  /** Transcription and understanding: billed (started) minutes. */
  minutes: number | null;
  /** 0 when the first source served the call, 1 or more for a fallback (D27). */
  fallback_layer: Generated<number>;
  /** From the hold to the settlement, ms; null until settled. */
  latency_ms: number | null;
  /** 1 for a realtime socket's record (D42, D43), else 0. */
  realtime: Generated<number>;
  /** A socket's record: how long the socket was open, ms; null until it closed (and for other records). */
  session_ms: Generated<number | null>;
  /** A speech socket's record: how many contexts it used; else null. */
  contexts: Generated<number | null>;
  /** A socket's record: the WebSocket close code it ended with; null while open or when the sweep settled it. */
  close_code: Generated<number | null>;
  created_at: number;
  updated_at: number;
}

/** A Stripe Checkout Session credited as a deposit (D33); the primary key makes the credit happen once. */
export interface TopupsTable {
  /** The Checkout Session id (`cs_...`), also the deposit's ledger `reference`. */
  session_id: string;
  account_id: string;
  /** The deposit, micro-USD (the session's `amount_total` in cents x 10,000). */
  amount_micros: number;
  /** The Stripe event (`evt_...`) that recorded it. */
  event_id: string;
  created_at: number;
}

/**
 * A synchronous paid call made with an `Idempotency-Key` (D37, billing/idempotent-calls.ts): claimed while it
 * runs, then its stored answer until it expires.
 */
export interface IdempotentCallsTable {
  /** Whose key it is: the API key's id, or `account:<id>` for a session's call. */
  scope: string;
  /** The `Idempotency-Key` header, 1 to 128 characters. */
  idem_key: string;
  account_id: string;
  /** Hex SHA-256 of the request (method, URL, body or form parts): another request under the key is a 409. */
  request_hash: string;
  /** `running` while the first request runs, `done` once its answer is stored. */
  state: "running" | "done";
  /** The request id (`req_...`) of the request that claimed the key: only it completes or releases the row. */
  owner: string;
  /** The stored answer's HTTP status (done rows). */
  status: number | null;
  /** The stored answer's headers, a JSON object of lower-case names to values (done rows). */
  headers_json: string | null;
  /** The blob holding the stored answer's body (done rows). */
  blob_key: string | null;
  created_at: number;
  /** Running: the end of the claimant's lease (renewed while it runs); done: when the answer is forgotten. */
  expires_at: number;
}

/** What a budget (D44) counts: an organization's, a member's or a key's calls. */
export type BudgetScopeType = "org" | "member" | "key";
/** The calendar window of a budget (D44); `total` is one window forever. */
export type BudgetPeriod = "day" | "week" | "month" | "total";
/** What a budget does when a hold would pass it (D44): refuse (`block`) or only announce thresholds (`alert`). */
export type BudgetAction = "block" | "alert";

/** Budgets of organizations (D44), each with the counter of its current window. */
export interface BudgetsTable {
  /** `bud_<random>`. */
  id: string;
  /** The organization the budget belongs to. */
  account_id: string;
  scope_type: BudgetScopeType;
  /** The organization's id, the member's user id or the key's id. */
  scope_id: string;
  /** micro-USD, > 0. */
  amount_micros: number;
  period: BudgetPeriod;
  /** IANA time zone whose calendar the windows follow. */
  timezone: string;
  action: BudgetAction;
  /** Percentages (JSON array of integers 1..100, ascending) announced once per window. */
  thresholds_json: string;
  /** Open holds plus captured charges counted in the window starting at `window_start`, micro-USD. */
  spent_micros: Generated<number>;
  /** Epoch ms of the window the counter is for (0 for `total`). */
  window_start: Generated<number>;
  /** The window whose thresholds were announced up to `alerted_percent`, or null. */
  alerted_window_start: Generated<number | null>;
  /** The highest threshold announced in `alerted_window_start`'s window (0: none). */
  alerted_percent: Generated<number>;
  /** The spend (micro-USD) at which the next threshold of `alerted_window_start`'s window is due; 0: to be worked out. */
  alert_next_micros: Generated<number>;
  created_at: number;
  updated_at: number;
}

/** The budget counters (budget, window) a hold was counted in (D44); its settlement gives back to them. */
export interface HoldBudgetsTable {
  hold_id: string;
  budget_id: string;
  window_start: number;
}
/**
 * One entry of the audit log (D45; storage/migrations/021_audit_log.ts): a change made through the API,
 * written in the transaction of the change. Append-only: no route changes or deletes one.
 */
export interface AuditLogTable {
  /** `aud_<random>` (time-ordered). */
  id: string;
  /** When the change was made, epoch ms. */
  at: number;
  /** The organization the change belongs to, or null (a failed sign-in of an unknown email, an operator event without one). */
  org_id: string | null;
  actor_type: AuditActorType;
  /** The user's, key's id, or `operator`. */
  actor_id: string;
  /** A user actor's email (a failed sign-in: the email tried), else null. */
  actor_email: string | null;
  /** What was done, `<object>.<verb>` (`key.created`, `member.removed`, ...). */
  action: string;
  target_type: string;
  target_id: string;
  /** The `X-Svc-Request-Id` of the request that made the change (`req_<random>`). */
  request_id: string;
  ip: string | null;
  user_agent: string | null;
  /** `{field: [before, after]}` as JSON text, or null; secrets are never stored. */
  changes_json: string | null;
}

/** Who made an audited change (D45). */
export type AuditActorType = "user" | "key" | "operator";

export interface Database {
  voices: VoicesTable;
  jobs: JobsTable;
  accounts: AccountsTable;
  api_keys: ApiKeysTable;
  users: UsersTable;
  memberships: MembershipsTable;
  invites: InvitesTable;
  sessions: SessionsTable;
  ledger_entries: LedgerEntriesTable;
  holds: HoldsTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_secrets: WebhookSecretsTable;
  webhook_events: WebhookEventsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  usage_records: UsageRecordsTable;
  topups: TopupsTable;
  idempotent_calls: IdempotentCallsTable;
  budgets: BudgetsTable;
  hold_budgets: HoldBudgetsTable;
  audit_log: AuditLogTable;
}
