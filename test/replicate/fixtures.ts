/**
 * Fixtures of the Replicate dialect's client tests (D47): a gateway behind the TLS front (so that every URL
 * it hands out is `https:` and the `replicate` client makes `FileOutput`s of outputs), funded accounts, the
 * `replicate` client pointed at the dialect (optionally with headers added by a `fetch` wrapper: the
 * client has no option for `Cancel-After`, `Idempotency-Key` or `X-Svc-Simulate`), the money checks
 * (balance == ledger sum, a call's usage record and its ledger entries through `GET /v1/requests`), and the
 * client's `ApiError` of a call that must fail, with its problem body.
 */
import assert from "node:assert/strict";
import Replicate, { type Prediction } from "replicate";
import { usdToMicros } from "../../src/money.ts";
import type { Backend } from "../helpers/backends.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../helpers/gateway.ts";
import { startTlsFront, type TlsFront, trustTestCertificate } from "../helpers/tls-front.ts";
import { checkedBalance as checkedLedgerBalance } from "../openai/fixtures.ts";

export { tinyPng } from "../openai/fixtures.ts";

/** An account of the tests (what `TestGateway.register` answers). */
export type Account = Awaited<ReturnType<TestGateway["register"]>>;

/** A gateway for the dialect's tests: `publicUrl` is where clients reach it (the TLS front, or the gateway itself). */
export interface ReplicateGateway {
  gw: TestGateway;
  /** The front (null without TLS). */
  front: TlsFront | null;
  /** `https://127.0.0.1:<front>` with TLS, else the gateway's own `http://` URL; the gateway's `PUBLIC_BASE_URL`. */
  publicUrl: string;
  close(): Promise<void>;
}

/**
 * Starts a gateway on `backend` with `env`; with `tls` (the default) behind a TLS front whose URL is the
 * gateway's `PUBLIC_BASE_URL`, the test process's global `fetch` trusting the front's certificate until
 * `close()`.
 */
export async function startReplicateGateway(backend: Backend, env: Record<string, string> = {}, opts: { tls?: boolean } = {}): Promise<ReplicateGateway> {
  if (opts.tls === false) {
    const gw = await startGateway(backend, env);
    return { gw, front: null, publicUrl: gw.url, close: () => gw.close() };
  }
  const front = await startTlsFront();
  const untrust = trustTestCertificate();
  const gw = await startGateway(backend, { PUBLIC_BASE_URL: front.url, ...env });
  front.setTarget(gw.url);
  return {
    gw,
    front,
    publicUrl: front.url,
    async close() {
      await gw.close();
      await front.close();
      untrust();
    },
  };
}

/**
 * A new account with `usd` deposited (tier 1 from 10 USD) and its per-minute limits lifted (a suite makes
 * more calls than a tier allows); `limits` overrides further fields (`video_concurrent`, ...).
 */
export async function fundedAccount(gw: TestGateway, usd = 20, limits: Record<string, number> = {}): Promise<Account> {
  const user = await gw.register();
  if (usd > 0) await gw.deposit(user.user_id, usd);
  const res = await gw.request("PUT", `/v1/admin/users/${user.user_id}/limits`, {
    token: ADMIN_TOKEN,
    body: { rpm: 100_000, per_model_rpm: 100_000, ...limits },
  });
  assert.equal(res.status, 200, JSON.stringify(res.json));
  return user;
}

/**
 * The `replicate` client, unchanged, as a developer sets it up (`auth`, `baseUrl` = `<gateway>/replicate/v1`).
 * `createHeaders` are added to each prediction create it sends (`POST .../predictions`) by a `fetch` wrapper
 * passed as its `fetch` option (the client's documented hook). Why a wrapper rather than the client's
 * public `request`: the client has no per-call headers on `predictions.create` or `run`, and the wrapper
 * keeps the client's own create path (its body, `Prefer: wait` from `wait`, file uploads, `run`'s polling
 * and `FileOutput`s) instead of re-writing the call by hand; every other request passes unchanged.
 */
export function replicateClient(publicUrl: string, key: string, createHeaders: Record<string, string> = {}): Replicate {
  const extra = Object.entries(createHeaders);
  const options: ConstructorParameters<typeof Replicate>[0] = { auth: key, baseUrl: `${publicUrl}/replicate/v1` };
  if (extra.length > 0) {
    options.fetch = (input, init) => {
      const isCreate = init?.method === "POST" && new URL(input instanceof Request ? input.url : String(input)).pathname.endsWith("/predictions");
      if (!isCreate) return fetch(input, init);
      const h = new Headers(init?.headers);
      for (const [k, v] of extra) h.set(k, v);
      return fetch(input, { ...init, headers: h });
    };
  }
  return new Replicate(options);
}

/** The account's balance (micro-USD), asserting first that it equals the sum of its ledger entries. */
export function checkedBalance(gw: TestGateway, account: Account): Promise<number> {
  return checkedLedgerBalance(gw.services.db.kysely, account.org_id);
}

/** Micro-USD of a USD amount as the API answers it (a JSON number). */
export function micros(usd: number | string): number {
  const m = usdToMicros(usd);
  assert.ok(m !== null, `a USD amount: ${String(usd)}`);
  return m;
}

/** A usage record (`GET /v1/requests`), the fields the tests read. */
export interface UsageRecord {
  id: string;
  model: string;
  kind: string;
  status: string;
  mode: "live" | "test";
  cost_usd: number | null;
  hold_usd: number;
  job_id: string | null;
  units: Record<string, number>;
}

/** A ledger entry of a usage record (`GET /v1/requests/{id}`). */
export interface LedgerEntry {
  kind: string;
  amount_usd: number;
  job_id: string | null;
}

/**
 * The usage records of job `jobId` (a prediction id), read through `GET /v1/requests` with `key` (the
 * records of a test-mode key with `mode=test`), each with its ledger entries (`GET /v1/requests/{id}`).
 */
export async function usageOf(gw: TestGateway, key: string, jobId: string, mode: "live" | "test" = "live"): Promise<(UsageRecord & { ledger: LedgerEntry[] })[]> {
  const found: UsageRecord[] = [];
  let after: string | null = null;
  for (;;) {
    const page = await gw.request("GET", `/v1/requests?limit=100&mode=${mode}${after === null ? "" : `&after=${encodeURIComponent(after)}`}`, { token: key });
    assert.equal(page.status, 200, JSON.stringify(page.json));
    const data = page.json.data as UsageRecord[];
    found.push(...data.filter((r) => r.job_id === jobId));
    if (!page.json.has_more || data.length === 0) break;
    after = data[data.length - 1].id;
  }
  return Promise.all(
    found.map(async (r) => {
      const one = await gw.request("GET", `/v1/requests/${encodeURIComponent(r.id)}`, { token: key });
      assert.equal(one.status, 200, JSON.stringify(one.json));
      return { ...r, ledger: one.json.ledger as LedgerEntry[] };
    }),
  );
}

/**
 * The one usage record of a prediction that succeeded: its `kind`, `status` `succeeded`, `cost_usd` of
 * `costMicros`, and its ledger entries netting exactly `-costMicros`.
 */
export async function assertCharged(gw: TestGateway, key: string, jobId: string, kind: string, costMicros: number): Promise<UsageRecord> {
  const records = await usageOf(gw, key, jobId);
  assert.equal(records.length, 1, `one usage record of ${jobId}: ${JSON.stringify(records)}`);
  const [r] = records;
  assert.equal(r.kind, kind);
  assert.equal(r.status, "succeeded");
  assert.equal(r.mode, "live");
  assert.equal(micros(r.cost_usd ?? Number.NaN), costMicros, "charged the price");
  const net = r.ledger.reduce((s, e) => s + micros(e.amount_usd), 0);
  assert.equal(net, -costMicros, `the ledger nets -cost: ${JSON.stringify(r.ledger)}`);
  return r;
}

/**
 * The one usage record of a prediction that ended without a charge (canceled, aborted): `status` `failed`,
 * cost 0, and its ledger entries (a hold and its release, when it held) netting exactly 0.
 */
export async function assertNotCharged(gw: TestGateway, key: string, jobId: string, kind: string): Promise<UsageRecord & { ledger: LedgerEntry[] }> {
  const records = await usageOf(gw, key, jobId);
  assert.equal(records.length, 1, `one usage record of ${jobId}: ${JSON.stringify(records)}`);
  const [r] = records;
  assert.equal(r.kind, kind);
  assert.equal(r.status, "failed");
  assert.equal(micros(r.cost_usd ?? 0), 0, "nothing charged");
  assert.equal(r.ledger.reduce((s, e) => s + micros(e.amount_usd), 0), 0, `the ledger nets 0: ${JSON.stringify(r.ledger)}`);
  return r;
}

/** What a failed client call carries: the `ApiError`'s response status and content type, and its body parsed. */
export interface Failure {
  error: Error & { response: Response; request: Request };
  status: number;
  contentType: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- problem bodies are read field by field
  body: any;
}

/**
 * The error a client call fails with: the client's `ApiError` (not exported as a class: checked by name
 * and its `response`), whose message ends with the answer's text (`...: <body>.`); fails the test when
 * the call succeeds or fails otherwise.
 */
export async function failure(call: Promise<unknown>): Promise<Failure> {
  try {
    await call;
  } catch (err) {
    const e = err as Failure["error"];
    assert.ok(err instanceof Error && e.name === "ApiError" && e.response instanceof Response, `an ApiError: ${String(err)}`);
    const text = e.message.slice(e.message.indexOf("{"), e.message.lastIndexOf("}") + 1);
    let body: unknown = null;
    try {
      body = JSON.parse(text);
    } catch {
      assert.fail(`the answer is JSON: ${e.message}`);
    }
    return { error: e, status: e.response.status, contentType: e.response.headers.get("content-type") ?? "", body };
  }
  assert.fail("the call succeeded");
}

/** Asserts a problem+json answer of `status` (and `code` when given). */
export function assertProblem(f: Failure, status: number, code?: string): void {
  assert.equal(f.status, status, JSON.stringify(f.body));
  assert.match(f.contentType, /^application\/problem\+json/);
  assert.equal(f.body.status, status);
  assert.equal(typeof f.body.title, "string");
  assert.equal(typeof f.body.detail, "string");
  if (code !== undefined) assert.equal(f.body.code, code, JSON.stringify(f.body));
}

/** Statuses a prediction no longer leaves (`aborted` included, which the client 1.4.0's `wait` does not know). */
const FINAL = new Set(["succeeded", "failed", "canceled", "aborted"]);

/**
 * Polls `predictions.get` until the prediction is final (`aborted` included, unlike the client's `wait`,
 * which would poll an aborted prediction forever), or fails after `timeoutMs`.
 */
export async function settled(client: Replicate, id: string, timeoutMs = 30_000): Promise<Prediction> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const p = await client.predictions.get(id);
    if (FINAL.has(p.status)) return p;
    if (Date.now() > end) assert.fail(`prediction ${id} still ${p.status} after ${timeoutMs} ms`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

/** Waits (polling the job row, which spends no request of the account) until `pred` holds of its status. */
export async function jobStatusIs(gw: TestGateway, jobId: string, pred: (status: string) => boolean, timeoutMs = 20_000): Promise<string> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const row = await gw.services.db.kysely.selectFrom("jobs").select("status").where("id", "=", jobId).executeTakeFirst();
    if (row !== undefined && pred(row.status)) return row.status;
    if (Date.now() > end) assert.fail(`job ${jobId} is ${row?.status ?? "absent"} after ${timeoutMs} ms`);
    await new Promise((res) => setTimeout(res, 20));
  }
}

/** The first bytes of a file: PNG, MP4 (`ftyp` at 4) or MP3 (an ID3 tag or an MPEG frame sync). */
export function magicOf(bytes: Uint8Array): "png" | "mp4" | "mp3" | "unknown" {
  const b = Buffer.from(bytes);
  if (b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return "png";
  if (b.subarray(4, 8).toString("latin1") === "ftyp") return "mp4";
  if (b.subarray(0, 3).toString("latin1") === "ID3" || (b[0] === 0xff && (b[1] & 0xe0) === 0xe0)) return "mp3";
  return "unknown";
}

/** The number of holds the account ever placed (one per paid call; a refused call places none). */
export async function holdCount(gw: TestGateway, account: Account): Promise<number> {
  return (await gw.services.db.kysely.selectFrom("holds").select("id").where("account_id", "=", account.org_id).execute()).length;
}

/** imgB-2-pro's default image, micro-USD (`GET /v1/pricing`; the run suite checks the prices). */
export const IMAGE = 41_000;
/** vidD-3-fast's price per second, micro-USD. */
export const VID_PER_S = 135_000;
/** alpha-multilingual-v2's price per character, micro-USD (0.405 USD per 1000). */
export const SPEECH_PER_CHAR = 405;
