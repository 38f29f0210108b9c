/**
 * Retention (D46) on a real gateway over loopback, on both databases: the organization's windows
 * (`PATCH /v1/orgs/{org_id}` and its refusals), zero retention (a speech call, a stored music call, an image
 * job with a webhook, Replicate predictions and a chat call with a unique prompt leave it in no column of any
 * table, nor in the SQLite file and its WAL, while the upstream still got it), the sweep at a time the test
 * picks (`sweepRetention(deps, now)`): texts cleared after the prompts window, files deleted after the
 * outputs window with their URLs and share page answering 410 `output_expired` and the ledger untouched
 * (balance equals the ledger sum), usage records deleted after theirs, audit entries after theirs, an
 * organization's shorter windows applied to it alone; and the runner's side of zero retention (a job whose
 * texts another process holds is not claimed; a stopping runner ends the pending jobs whose texts it held).
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import { type Kysely, sql } from "kysely";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { sweepRetention } from "../../src/jobs/retention.ts";
import { JobRunner } from "../../src/jobs/runner.ts";
import { WithheldTexts } from "../../src/jobs/texts.ts";
import type { BlobStore } from "../../src/storage/blob-store.ts";
import type { Database } from "../../src/storage/schema.ts";
import { createSimulatedVisualUpstream } from "../../src/upstreams/simulator/visual.ts";
import { DEMO_ALPHA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";
import type { VisualAdapter } from "../../src/upstreams/types.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { startGateway, type TestGateway, type TestResponse } from "../helpers/gateway.ts";
import { type Receiver, startReceiver } from "../webhooks/receiver.ts";

const DAY = 24 * 3600 * 1000;
type User = Awaited<ReturnType<TestGateway["register"]>>;
type Role = "owner" | "admin" | "member" | "viewer";

/** A prompt no other test writes. */
const marker = (what: string) => `mk${Math.random().toString(36).slice(2, 10)}${what}`;

/** The simulator's images and videos, recording every request the runner hands it (what reached the upstream). */
function recordingVisual() {
  const sim = createSimulatedVisualUpstream({ latencyScale: 0, images: "placeholder" });
  const prompts: string[] = [];
  const parameters: Record<string, unknown>[] = [];
  const visual: VisualAdapter = {
    generateImages(req, signal, onProgress) {
      prompts.push(req.prompt);
      parameters.push(req.parameters);
      return sim.generateImages(req, signal, onProgress);
    },
    generateVideo(req, signal, onProgress) {
      prompts.push(req.prompt);
      parameters.push(req.parameters);
      return sim.generateVideo(req, signal, onProgress);
    },
  };
  return { visual, prompts, parameters, close: () => sim.close() };
}

/** Every `table.column` of the database whose value contains `needle` (text, JSON or bytes), every row read. */
async function columnsContaining(db: Kysely<Database>, dialect: "sqlite" | "postgres", needle: string): Promise<string[]> {
  const tables =
    dialect === "sqlite"
      ? (await sql<{ name: string }>`select name from sqlite_master where type = 'table'`.execute(db)).rows.map((r) => r.name)
      : (await sql<{ name: string }>`select table_name as name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE'`.execute(db)).rows.map(
          (r) => r.name,
        );
  assert.ok(tables.includes("jobs") && tables.includes("usage_records"), `tables: ${tables.join(", ")}`);
  const found: string[] = [];
  for (const t of tables) {
    const rows = (await sql<Record<string, unknown>>`select * from ${sql.table(t)}`.execute(db)).rows;
    for (const row of rows) {
      for (const [col, v] of Object.entries(row)) {
        const text = typeof v === "string" ? v : v instanceof Uint8Array ? Buffer.from(v).toString("latin1") : v !== null && typeof v === "object" ? JSON.stringify(v) : "";
        if (text.includes(needle)) found.push(`${t}.${col}`);
      }
    }
  }
  return [...new Set(found)];
}

/** The SQLite file and its WAL, byte for byte, contain `needle` (null on PostgreSQL). */
function sqliteFilesContain(gw: TestGateway, needle: string): boolean | null {
  if (gw.services.db.dialect !== "sqlite") return null;
  const file = gw.services.config.databaseUrl.replace(/^sqlite:/, "");
  const bytes = Buffer.from(needle, "utf8");
  return [file, `${file}-wal`].some((f) => existsSync(f) && readFileSync(f).includes(bytes));
}

function assertError(r: TestResponse, status: number, code: string, param?: string): void {
  assert.equal(r.status, status, JSON.stringify(r.json));
  assert.equal(r.json.error.code, code, JSON.stringify(r.json));
  if (param !== undefined) assert.equal(r.json.error.param, param, JSON.stringify(r.json));
}

for (const backend of BACKENDS) {
  describe(`retention (D46) on ${backend.name}`, { skip: backend.skip }, () => {
    let gw: TestGateway;
    let rec: ReturnType<typeof recordingVisual>;
    let hooks: Receiver;
    before(async () => {
      rec = recordingVisual();
      hooks = await startReceiver();
      gw = await startGateway(backend.name, { WEBHOOK_ALLOW_PRIVATE: "1" }, { overrides: { visual: rec.visual } });
    });
    after(async () => {
      await gw?.close();
      await rec?.close();
      await hooks?.close();
    });
    const db = () => gw.services.db.kysely;
    const deps = () => ({ db: db(), blobs: gw.services.blobs, windows: gw.services.config.retention });
    const filesPrefix = () => `${gw.services.config.publicBaseUrl}/v1/files/`;

    /** A fresh user with 20 USD on its personal organization. */
    async function funded(): Promise<User> {
      const u = await gw.register();
      await gw.deposit(u.user_id, 20);
      return u;
    }
    async function setRetention(u: User, retention: Record<string, unknown>): Promise<TestResponse> {
      return gw.request("PATCH", `/v1/orgs/${u.org_id}`, { token: u.session_token, body: { retention } });
    }
    /** An image job of `u` with `prompt` (and a text among its parameters), waited to its end. */
    async function imageJob(u: User, prompt: string, webhookUrl?: string): Promise<{ id: string; key: string }> {
      const body = { model: "imgA-v4", prompt, parameters: { negative_prompt: `no ${prompt}`, seed: 7 }, ...(webhookUrl ? { webhook_url: webhookUrl } : {}) };
      const r = await gw.request("POST", "/v1/images/generations", { token: u.api_key, body });
      assert.ok(r.status === 202 || r.status === 200, JSON.stringify(r.json));
      const done = await gw.waitForJob(u.api_key, r.json.id);
      assert.equal(done.json.status, "succeeded", JSON.stringify(done.json));
      const url: string = done.json.output.url;
      assert.ok(url.startsWith(filesPrefix()), url);
      return { id: r.json.id, key: url.slice(filesPrefix().length) };
    }
    /** A beta music call of `u` kept with `save_to_blob` (prompt and lyrics from `text`). */
    async function storedMusic(u: User, text: string): Promise<string> {
      const r = await gw.request("POST", "/v1/audio/music?save_to_blob=1", {
        token: u.api_key,
        body: { model: "beta-music-pro", prompt: `ambient ${text}`, lyrics: `[verse] ${text}` },
      });
      assert.equal(r.status, 200, JSON.stringify(r.json));
      assert.match(r.json.job_id, /^job_/);
      return r.json.job_id as string;
    }
    async function jobRow(id: string) {
      return db().selectFrom("jobs").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
    }
    async function ledgerOf(orgId: string) {
      return db().selectFrom("ledger_entries").select(["id", "kind", "amount_micros", "balance_after_micros"]).where("account_id", "=", orgId).orderBy("seq").execute();
    }

    test("PATCH /v1/orgs/{org_id} retention: owners only, from 0 to the operator's window, null for the operator's; GET shows it", async () => {
      const owner = await gw.register();
      const made = await gw.request("POST", "/v1/orgs", { token: owner.session_token, body: { name: "Keepers" } });
      assert.equal(made.status, 201, JSON.stringify(made.json));
      const org = made.json.id as string;
      assert.deepEqual(made.json.retention, { prompts_days: 30, outputs_days: 30, usage_days: 400, audit_days: 730 });
      const users = {} as Record<Role, User>;
      for (const role of ["admin", "member", "viewer"] as const) {
        const u = await gw.register();
        const inv = await gw.request("POST", `/v1/orgs/${org}/invites`, { token: owner.session_token, body: { email: u.email, role } });
        assert.equal(inv.status, 201, JSON.stringify(inv.json));
        assert.equal((await gw.request("POST", `/v1/invites/${inv.json.token}/accept`, { token: u.session_token })).status, 200);
        users[role] = u;
      }
      const patch = (token: string, body: unknown) => gw.request("PATCH", `/v1/orgs/${org}`, { token, body });
      for (const role of ["admin", "member", "viewer"] as const) {
        assertError(await patch(users[role].session_token, { retention: { prompts_days: 1 } }), 403, "forbidden_role");
      }
      // The owner's own API key acts as admin at most: retention needs the owner's session.
      const key = await gw.request("POST", "/v1/auth/keys", { token: owner.session_token, headers: { "x-svc-org": org }, body: { name: "k" } });
      assert.equal(key.status, 201, JSON.stringify(key.json));
      assertError(await patch(key.json.api_key, { retention: { outputs_days: 1 } }), 403, "forbidden_role");
      // A stranger does not learn the organization exists.
      assertError(await patch((await gw.register()).session_token, { retention: { prompts_days: 1 } }), 404, "org_not_found");

      const t = owner.session_token;
      assertError(await patch(t, { retention: { prompts_days: 31 } }), 400, "invalid_request", "retention.prompts_days");
      assertError(await patch(t, { retention: { outputs_days: 31 } }), 400, "invalid_request", "retention.outputs_days");
      assertError(await patch(t, { retention: { prompts_days: -1 } }), 400, "invalid_request");
      assertError(await patch(t, { retention: { prompts_days: 1.5 } }), 400, "invalid_request");
      assertError(await patch(t, { retention: { prompts_days: "7" } }), 400, "invalid_request");
      assertError(await patch(t, { retention: { usage_days: 10 } }), 400, "invalid_request");
      assertError(await patch(t, {}), 400, "invalid_request");
      // A refused part changes nothing: neither the name nor the windows.
      assertError(await patch(t, { name: "Renamed", retention: { prompts_days: 99 } }), 400, "invalid_request", "retention.prompts_days");
      assertError(await patch(users.admin.session_token, { name: "By admin", retention: { prompts_days: 2 } }), 403, "forbidden_role");
      const unchanged = await gw.request("GET", `/v1/orgs/${org}`, { token: users.viewer.session_token });
      assert.equal(unchanged.json.name, "Keepers");
      assert.equal(unchanged.json.retention.prompts_days, 30);
      const entries = () => db().selectFrom("audit_log").selectAll().where("org_id", "=", org).where("action", "=", "org.updated").orderBy("id").execute();
      assert.equal((await entries()).length, 0, "refused changes are not audited");

      // Admins still rename; owners set the windows (0 included) and give them back with null.
      assert.equal((await patch(users.admin.session_token, { name: "Keepers Ltd" })).json.name, "Keepers Ltd");
      const set = await patch(t, { retention: { prompts_days: 0, outputs_days: 7 } });
      assert.equal(set.status, 200, JSON.stringify(set.json));
      assert.deepEqual(set.json.retention, { prompts_days: 0, outputs_days: 7, usage_days: 400, audit_days: 730 });
      // Audited with the change, in its transaction, as one entry: who, which request, before and after.
      const entry = (await entries()).find((e) => e.request_id === set.headers.get("x-svc-request-id"));
      assert.ok(entry, "one entry for the change");
      assert.deepEqual([entry.actor_type, entry.actor_id, entry.target_type, entry.target_id], ["user", owner.user_id, "org", org]);
      assert.deepEqual(JSON.parse(entry.changes_json ?? "{}"), { "retention.prompts_days": [null, 0], "retention.outputs_days": [null, 7] });
      const seen = await gw.request("GET", `/v1/orgs/${org}`, { token: users.member.session_token });
      assert.deepEqual(seen.json.retention, { prompts_days: 0, outputs_days: 7, usage_days: 400, audit_days: 730 });
      const listed = await gw.request("GET", "/v1/orgs", { token: owner.session_token });
      assert.equal(listed.json.data.find((o: { id: string }) => o.id === org).retention.outputs_days, 7);
      const both = await patch(t, { name: "Keepers", retention: { prompts_days: null } });
      assert.equal(both.status, 200, JSON.stringify(both.json));
      assert.equal(both.json.name, "Keepers");
      assert.deepEqual(both.json.retention, { prompts_days: 30, outputs_days: 7, usage_days: 400, audit_days: 730 });
      const last = (await entries()).filter((e) => e.request_id === both.headers.get("x-svc-request-id"));
      assert.equal(last.length, 1, "a name and a window changed together: one entry");
      assert.deepEqual(JSON.parse(last[0].changes_json ?? "{}"), { name: ["Keepers Ltd", "Keepers"], "retention.prompts_days": [0, null] });
    });

    test("zero retention: speech, stored music, an image job with a webhook, Replicate predictions and chat leave the prompt in no table (nor the SQLite file); the upstream got it", async () => {
      const u = await funded();
      const set = await setRetention(u, { prompts_days: 0 });
      assert.equal(set.status, 200, JSON.stringify(set.json));
      const mark = marker("zero");
      const key = u.api_key;

      const speech = await gw.request("POST", "/v1/audio/speech", {
        token: key,
        headers: { "idempotency-key": `speech-${Math.random()}` },
        body: { model: "alpha-turbo-v2-5", input: `Say ${mark} now.`, voice_id: DEMO_ALPHA_VOICE_ID },
      });
      assert.equal(speech.status, 200, JSON.stringify(speech.json));
      const music = await storedMusic(u, mark);

      const image = await imageJob(u, `a lighthouse ${mark}`, `${hooks.url}/zero`);
      assert.ok(rec.prompts.includes(`a lighthouse ${mark}`), "the upstream got the prompt from memory");
      assert.ok(rec.parameters.some((p) => p.negative_prompt === `no a lighthouse ${mark}` && p.seed === 7), "and the parameters");
      const view = await gw.request("GET", `/v1/jobs/${image.id}`, { token: key });
      assert.equal(view.json.prompt, null);
      assert.ok(view.json.output.url, "the output is kept (only the texts are not)");

      const wait = { prefer: "wait=30" };
      const predImage = await gw.request("POST", "/replicate/v1/predictions", { token: key, headers: wait, body: { model: "gateway/imgA-v4", input: { prompt: `a fox ${mark}`, n: 1 } } });
      assert.equal(predImage.status, 201, JSON.stringify(predImage.json));
      await gw.waitForJob(key, predImage.json.id);
      const predImageRead = await gw.request("GET", `/replicate/v1/predictions/${predImage.json.id}`, { token: key });
      assert.equal(predImageRead.json.status, "succeeded", JSON.stringify(predImageRead.json));
      assert.deepEqual(predImageRead.json.input, { n: 1 }, "the echo of the input keeps no text");
      assert.ok(rec.prompts.includes(`a fox ${mark}`));
      const predSpeech = await gw.request("POST", "/replicate/v1/predictions", {
        token: key,
        headers: { ...wait, "idempotency-key": `pred-${Math.random()}` },
        body: { model: "gateway/alpha-turbo-v2-5", input: { input: `Hello ${mark}.`, voice_id: DEMO_ALPHA_VOICE_ID } },
      });
      assert.equal(predSpeech.status, 201, JSON.stringify(predSpeech.json));
      assert.equal(predSpeech.json.status, "succeeded");

      const chat = await gw.request("POST", "/v1/chat/completions", {
        token: key,
        headers: { "idempotency-key": `chat-${Math.random()}` },
        body: { model: "txtA-small", messages: [{ role: "user", content: `Tell me about ${mark}.` }] },
      });
      assert.equal(chat.status, 200, JSON.stringify(chat.json));

      // The image job's event was rendered and delivered (its data kept in the outbox) without the prompt.
      await hooks.waitFor(() => hooks.on("/zero").length > 0, "the job.succeeded delivery");
      const event = JSON.parse(hooks.on("/zero")[0].body) as { type: string; data: { id: string; prompt: string | null } };
      assert.equal(event.data.id, image.id);
      assert.equal(event.data.prompt, null);

      for (const id of [image.id, music, predImage.json.id, predSpeech.json.id]) {
        const row = await jobRow(id);
        assert.ok(row.texts_cleared_at !== null, `${id}: written without its texts`);
      }
      assert.deepEqual(await columnsContaining(db(), backend.name, mark), []);
      assert.equal(sqliteFilesContain(gw, mark) ?? false, false, "the SQLite file and its WAL never held it");
      // The calls were paid as usual.
      assert.equal(await getBalance(db(), u.org_id), await ledgerSum(db(), u.org_id));
    });

    test("an organization's shorter windows apply to it alone", async () => {
      const short = await funded();
      const normal = await funded();
      const set = await setRetention(short, { prompts_days: 1, outputs_days: 2 });
      assert.equal(set.status, 200, JSON.stringify(set.json));
      const ms = marker("short");
      const mn = marker("normal");
      const a = await imageJob(short, `a hill ${ms}`);
      const b = await imageJob(normal, `a hill ${mn}`);

      await sweepRetention(deps(), Date.now() + 1.5 * DAY);
      assert.ok(!(await jobRow(a.id)).request_json.includes(ms), "the short window's texts are gone");
      assert.ok((await jobRow(b.id)).request_json.includes(mn), "the operator's window keeps the other's");
      assert.ok(await gw.services.blobs.head(a.key), "2 days of outputs: still there");

      await sweepRetention(deps(), Date.now() + 2.5 * DAY);
      assert.equal(await gw.services.blobs.head(a.key), null);
      assertError(await gw.request("GET", `/v1/files/${a.key}`), 410, "output_expired");
      const expired = await gw.request("GET", `/v1/jobs/${a.id}`, { token: short.api_key });
      assert.equal(expired.json.output, null);
      assert.ok(await gw.services.blobs.head(b.key), "the other organization's file stays");
      assert.equal((await gw.request("GET", `/v1/files/${b.key}`)).status, 200);
      assert.ok((await jobRow(b.id)).request_json.includes(mn));
    });

    test("a file the blob store fails to delete holds back its own job only, until a later pass", async () => {
      const u = await funded();
      assert.equal((await setRetention(u, { outputs_days: 1 })).status, 200);
      const a = await imageJob(u, marker("stuck"));
      const b = await imageJob(u, marker("freed"));
      const real = gw.services.blobs;
      const failing: BlobStore = {
        put: (k, body, meta) => real.put(k, body, meta),
        head: (k) => real.head(k),
        get: (k, range) => real.get(k, range),
        delete: (k) => real.delete(k),
        deleteMany: async (keys) => {
          if (keys.includes(a.key)) throw new Error("access denied");
          await real.deleteMany(keys);
        },
        ping: () => real.ping(),
      };
      const r = await sweepRetention({ ...deps(), blobs: failing }, Date.now() + 1.5 * DAY);
      assert.ok(r.outputsExpired >= 1, JSON.stringify(r));
      assertError(await gw.request("GET", `/v1/files/${b.key}`), 410, "output_expired");
      assert.equal((await gw.request("GET", `/v1/files/${a.key}`)).status, 200, "not deleted, still served");
      assert.ok((await gw.request("GET", `/v1/jobs/${a.id}`, { token: u.api_key })).json.output !== null);
      await sweepRetention(deps(), Date.now() + 1.5 * DAY);
      assertError(await gw.request("GET", `/v1/files/${a.key}`), 410, "output_expired");
    });

    test("past the operator's windows: texts cleared (job, dialect echo, webhook event), files deleted with 410 on their URLs and share page, the ledger untouched", async () => {
      const u = await funded();
      const mark = marker("window");
      const image = await imageJob(u, `a valley ${mark}`, `${hooks.url}/window`);
      const music = await storedMusic(u, mark);
      const pred = await gw.request("POST", "/replicate/v1/predictions", { token: u.api_key, headers: { prefer: "wait=30" }, body: { model: "gateway/imgA-v4", input: { prompt: `a stream ${mark}`, n: 1 } } });
      assert.equal(pred.status, 201, JSON.stringify(pred.json));
      await gw.waitForJob(u.api_key, pred.json.id);
      await hooks.waitFor(() => hooks.on("/window").length > 0, "the job.succeeded delivery");
      await waitForRenderedEvent(image.id);
      const musicKey = JSON.parse((await jobRow(music)).output_json ?? "{}").key as string;
      const before = await columnsContaining(db(), backend.name, mark);
      for (const where of ["jobs.request_json", "jobs.dialect_json", "webhook_events.data_json"]) assert.ok(before.includes(where), `${where} holds it before: ${before.join(", ")}`);
      // The raw-file search sees what is written (so its empty answer in the zero-retention test means something).
      assert.equal(sqliteFilesContain(gw, mark) ?? true, true);
      const ledgerBefore = await ledgerOf(u.org_id);
      const balanceBefore = await getBalance(db(), u.org_id);
      const requestsBefore = await gw.request("GET", "/v1/requests?limit=100", { token: u.api_key });

      // Inside the windows nothing changes.
      await sweepRetention(deps(), Date.now() + 29 * DAY);
      assert.ok((await jobRow(image.id)).request_json.includes(mark));
      assert.ok(await gw.services.blobs.head(image.key));

      const r = await sweepRetention(deps(), Date.now() + 31 * DAY);
      assert.ok(r.promptsCleared >= 3 && r.outputsExpired >= 3, JSON.stringify(r));
      assert.deepEqual(await columnsContaining(db(), backend.name, mark), []);
      const row = await jobRow(image.id);
      const stored = JSON.parse(row.request_json);
      assert.equal(stored.model, "imgA-v4", "what the job API answers with stays");
      assert.equal(stored.prompt, "");
      assert.deepEqual(stored.parameters, { seed: 7 }, "the parameters' numbers stay, their strings go");
      assert.ok(row.texts_cleared_at !== null && row.output_expired_at !== null);
      const job = await gw.request("GET", `/v1/jobs/${image.id}`, { token: u.api_key });
      assert.equal(job.json.status, "succeeded");
      assert.equal(job.json.prompt, null);
      assert.equal(job.json.output, null);
      const prediction = await gw.request("GET", `/replicate/v1/predictions/${pred.json.id}`, { token: u.api_key });
      assert.deepEqual(prediction.json.input, { n: 1 });
      assert.equal(prediction.json.data_removed, true);

      // Files: gone from the store; their URLs and share pages answer 410.
      for (const k of [image.key, musicKey]) {
        assert.equal(await gw.services.blobs.head(k), null, k);
        assertError(await gw.request("GET", `/v1/files/${k}`), 410, "output_expired");
      }
      assertError(await gw.request("GET", `/share/${image.id}`), 410, "output_expired");
      assertError(await gw.request("GET", "/v1/files/images/job_unknown-0.png"), 404, "not_found");
      const gallery = await gw.request("GET", "/v1/gallery", { token: u.api_key });
      assert.equal(gallery.json.data.length, 0, "expired outputs leave the gallery");

      // Money: not one ledger entry changed; the balance is still the ledger's sum; usage records stay (400 days).
      assert.deepEqual(await ledgerOf(u.org_id), ledgerBefore);
      assert.equal(await getBalance(db(), u.org_id), balanceBefore);
      assert.equal(await getBalance(db(), u.org_id), await ledgerSum(db(), u.org_id));
      const requestsAfter = await gw.request("GET", "/v1/requests?limit=100", { token: u.api_key });
      assert.deepEqual(requestsAfter.json.data.map((x: { id: string }) => x.id), requestsBefore.json.data.map((x: { id: string }) => x.id));
      // A second pass finds nothing left to do for them (several processes may sweep at once).
      const again = await sweepRetention(deps(), Date.now() + 31 * DAY);
      assert.equal(again.outputsExpired, 0);
    });

    test("usage records past their window are deleted, ledger entries and holds never", async () => {
      const u = await funded();
      await gw.request("POST", "/v1/audio/speech", { token: u.api_key, body: { model: "alpha-turbo-v2-5", input: "Hello there.", voice_id: DEMO_ALPHA_VOICE_ID } });
      await imageJob(u, marker("usage"));
      const count = async (table: "usage_records" | "ledger_entries" | "holds") =>
        Number((await db().selectFrom(table).select((eb) => eb.fn.countAll<number>().as("n")).where("account_id", "=", u.org_id).executeTakeFirstOrThrow()).n);
      assert.equal(await count("usage_records"), 2);
      const ledger = await ledgerOf(u.org_id);
      const holds = await count("holds");

      await sweepRetention(deps(), Date.now() + 399 * DAY);
      assert.equal(await count("usage_records"), 2);
      // Small pages: the deletion loops until a page comes back short.
      const r = await sweepRetention(deps(), Date.now() + 401 * DAY, 1);
      assert.ok(r.usageDeleted >= 2, JSON.stringify(r));
      assert.equal(await count("usage_records"), 0);
      assert.equal((await gw.request("GET", "/v1/requests", { token: u.api_key })).json.data.length, 0);
      assert.deepEqual(await ledgerOf(u.org_id), ledger);
      assert.equal(await count("holds"), holds);
      assert.equal(await getBalance(db(), u.org_id), await ledgerSum(db(), u.org_id));
    });

    test("audit-log entries past their window are deleted, newer ones kept", async () => {
      const now = Date.now();
      const org = `org_${Math.random().toString(36).slice(2)}`;
      const entry = (id: string, at: number) => ({
        id,
        at,
        org_id: org,
        actor_type: "operator" as const,
        actor_id: "operator",
        actor_email: null,
        action: "org.retention_updated",
        target_type: "organization",
        target_id: org,
        request_id: `req_${id}`,
        ip: null,
        user_agent: null,
        changes_json: null,
      });
      await db().insertInto("audit_log").values([entry(`aud_old${org}`, now - 731 * DAY), entry(`aud_new${org}`, now - 729 * DAY)]).execute();
      const r = await sweepRetention(deps(), now, 1);
      assert.ok(r.auditDeleted !== null && r.auditDeleted >= 1, JSON.stringify(r));
      const left = await db().selectFrom("audit_log").select("id").where("org_id", "=", org).execute();
      assert.deepEqual(left.map((x) => x.id), [`aud_new${org}`]);
    });

    /** Waits until the job's event data was kept by its first delivery. */
    async function waitForRenderedEvent(jobId: string): Promise<void> {
      for (let i = 0; i < 400; i++) {
        const e = await db().selectFrom("webhook_events").select("data_json").where("job_id", "=", jobId).where("data_json", "is not", null).executeTakeFirst();
        if (e) return;
        await new Promise((r) => setTimeout(r, 25));
      }
      assert.fail("the job's event was never rendered");
    }
  });

  describe(`zero retention and the runners (D46) on ${backend.name}`, { skip: backend.skip }, () => {
    let gw: TestGateway;
    let rec: ReturnType<typeof recordingVisual>;
    before(async () => {
      rec = recordingVisual();
      // No runner at first: the test decides which runner may claim the jobs.
      gw = await startGateway(backend.name, {}, { overrides: { visual: rec.visual }, runner: false });
    });
    after(async () => {
      await gw?.close();
      await rec?.close();
    });
    const db = () => gw.services.db.kysely;
    const runnerWith = (withheld: WithheldTexts) =>
      new JobRunner(
        {
          db: db(),
          blobs: gw.services.blobs,
          visual: rec.visual,
          fetchOutput: () => Promise.reject(new Error("no downloads here")),
          sweep: gw.services.sweep,
          log: { info() {}, warn() {}, error() {} },
          changes: gw.services.jobChanges,
          withheld,
        },
        { pollMs: 50, sweepMs: 600_000 },
      );

    test("a pending job whose texts this process holds is claimed by no other runner; a stopping runner ends the ones it held, nothing charged", async () => {
      const u = await gw.register();
      await gw.deposit(u.user_id, 20);
      assert.equal((await gw.request("PATCH", `/v1/orgs/${u.org_id}`, { token: u.session_token, body: { retention: { prompts_days: 0 } } })).status, 200);
      const submit = async (prompt: string) => {
        const r = await gw.request("POST", "/v1/images/generations", { token: u.api_key, body: { model: "imgA-v4", prompt } });
        assert.equal(r.status, 202, JSON.stringify(r.json));
        return r.json.id as string;
      };
      const first = marker("held");
      const id = await submit(first);
      const row = await db().selectFrom("jobs").select(["status", "texts_holder", "request_json"]).where("id", "=", id).executeTakeFirstOrThrow();
      assert.equal(row.status, "pending");
      assert.equal(row.texts_holder, gw.services.withheldTexts.holderId);
      assert.ok(!row.request_json.includes(first));

      // Another process's runner (its own store of texts) leaves it alone.
      const other = runnerWith(new WithheldTexts());
      other.start();
      await new Promise((r) => setTimeout(r, 400));
      await other.stop();
      assert.equal((await db().selectFrom("jobs").select("status").where("id", "=", id).executeTakeFirstOrThrow()).status, "pending");
      assert.ok(!rec.prompts.includes(first));

      // This process's runner stops with a job it holds still pending: it ends now, its hold released.
      const second = marker("stopped");
      const id2 = await submit(second);
      await runnerWith(gw.services.withheldTexts).stop();
      const ended = await gw.waitForJob(u.api_key, id2);
      assert.equal(ended.json.status, "failed");
      assert.equal(ended.json.error.code, "prompt_unavailable");
      assert.equal(await getBalance(db(), u.org_id), await ledgerSum(db(), u.org_id));
      // (The stop ended the first job too: both were held by this process and pending.)
      assert.equal((await gw.waitForJob(u.api_key, id)).json.error?.code, "prompt_unavailable");

      // With its runner, this process runs the next one from memory.
      const third = marker("run");
      gw.services.startRunner({ pollMs: 50, sweepMs: 500 });
      const id3 = await submit(third);
      const done = await gw.waitForJob(u.api_key, id3);
      assert.equal(done.json.status, "succeeded", JSON.stringify(done.json));
      assert.ok(rec.prompts.includes(third));
      for (let i = 0; i < 100 && gw.services.withheldTexts.get(id3) !== undefined; i++) await new Promise((r) => setTimeout(r, 10));
      assert.equal(gw.services.withheldTexts.get(id3), undefined, "forgotten once the job ended");
      assert.deepEqual(await columnsContaining(db(), backend.name, third), []);
      assert.equal(await getBalance(db(), u.org_id), await ledgerSum(db(), u.org_id));
    });
  });
}
