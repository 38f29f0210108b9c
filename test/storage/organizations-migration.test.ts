/**
 * Migration 016 (organizations, D41) on both databases, on a database written as the previous version
 * wrote it (migrations up to 015, rows in the pre-D41 shape: `accounts` with email and password hash,
 * `account_id` = the user's `usr_` id everywhere): every account becomes the personal organization of
 * one owner with a new `org_` id, the user keeps its id, email, password and sessions, and per account
 * the balance, deposits, tier, limits, alert, ledger (entry by entry), keys, holds, jobs, voices, usage
 * records, webhooks and top-ups are the same before and after. Old keys and sessions keep working.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { sql } from "kysely";
import { AuthCache } from "../../src/accounts/auth-cache.ts";
import { login } from "../../src/accounts/registration.ts";
import { hashPassword, hashSecret, newApiKeySecret, newSessionToken } from "../../src/accounts/secrets.ts";
import { captureHold, ledgerSum, placeHold } from "../../src/billing/ledger.ts";
import { ORG_TABLES } from "../../src/storage/migrations/016_organizations.ts";
import { type Db, migrate, openDatabase } from "../../src/storage/db.ts";
import { BACKENDS, createTempDatabase } from "../helpers/backends.ts";

const T0 = 1_760_000_000_000;
const PASSWORD = "correct horse battery";

interface OldAccount {
  id: string;
  email: string;
  apiKey: string;
  session: string;
  /** Ledger amounts in order (micro-USD); the balance is their sum. */
  ledger: { kind: string; amount: number; hold?: string; job?: string; request?: string; reference?: string }[];
}

/** Writes one account of the previous version with rows in every table that names it. */
async function writeOldAccount(db: Db, a: OldAccount, n: number): Promise<void> {
  const k = db.kysely;
  const balance = a.ledger.reduce((s, e) => s + e.amount, 0);
  const deposits = a.ledger.filter((e) => e.kind === "deposit").reduce((s, e) => s + e.amount, 0);
  await sql`insert into accounts (id, email, password_hash, balance_micros, total_deposits_micros, tier_override, limits_override, created_at, low_balance_micros, low_balance_armed)
    values (${a.id}, ${a.email}, ${await hashPassword(PASSWORD)}, ${balance}, ${deposits}, ${n === 0 ? 3 : null}, ${n === 0 ? '{"rpm":777}' : null}, ${T0 + n}, ${n === 0 ? 1_000_000 : null}, 1)`.execute(k);
  await sql`insert into api_keys (id, account_id, name, key_hash, prefix, created_at, last_used_at, mode, spend_limit_micros, spend_limit_period, spent_micros, spent_period_start)
    values (${`key_${a.id}`}, ${a.id}, 'default', ${hashSecret(a.apiKey)}, ${a.apiKey.slice(0, 12)}, ${T0}, null, 'live', 5000000, 'total', 12345, 0)`.execute(k);
  await sql`insert into sessions (id, account_id, token_hash, created_at, expires_at)
    values (${`ses_${a.id}`}, ${a.id}, ${hashSecret(a.session)}, ${T0}, ${Date.now() + 3_600_000})`.execute(k);
  await sql`insert into jobs (id, account_id, api_key_id, kind, model, status, hold_id, hold_micros, cost_micros, request_json, created_at, updated_at)
    values (${`job_${a.id}`}, ${a.id}, ${`key_${a.id}`}, 'image', 'imgA-1', 'succeeded', ${`hold_${a.id}_1`}, 40000, 40000, '{}', ${T0}, ${T0})`.execute(k);
  await sql`insert into holds (id, account_id, amount_micros, status, captured_micros, job_id, request_id, reference, created_at, settled_at, key_id, key_period_start)
    values (${`hold_${a.id}_1`}, ${a.id}, 40000, 'captured', 40000, ${`job_${a.id}`}, ${`req_${a.id}_1`}, 'imgA-1', ${T0}, ${T0}, null, null),
           (${`hold_${a.id}_2`}, ${a.id}, 7000, 'open', null, null, ${`req_${a.id}_2`}, 'alpha-speech', ${T0}, null, ${`key_${a.id}`}, 0)`.execute(k);
  let after = 0;
  for (const [i, e] of a.ledger.entries()) {
    after += e.amount;
    await sql`insert into ledger_entries (id, account_id, kind, amount_micros, balance_after_micros, hold_id, job_id, request_id, reference, created_at)
      values (${`le_${a.id}_${i}`}, ${a.id}, ${e.kind}, ${e.amount}, ${after}, ${e.hold ?? null}, ${e.job ?? null}, ${e.request ?? null}, ${e.reference ?? null}, ${T0 + i})`.execute(k);
  }
  await sql`insert into usage_records (id, account_id, key_id, mode, model, kind, status, job_id, hold_micros, cost_micros, images, created_at, updated_at)
    values (${`req_${a.id}_1`}, ${a.id}, ${`key_${a.id}`}, 'live', 'imgA-1', 'image', 'succeeded', ${`job_${a.id}`}, 40000, 40000, 1, ${T0}, ${T0}),
           (${`req_${a.id}_2`}, ${a.id}, ${`key_${a.id}`}, 'live', 'alpha-speech', 'speech', 'processing', null, 7000, null, null, ${T0}, ${T0})`.execute(k);
  await sql`insert into voices (id, account_id, name, source, upstream_voice_id, description, created_at)
    values (${`svc_${a.id}`}, ${a.id}, 'mine', 'design', 'up_1', null, ${T0})`.execute(k);
  await sql`insert into webhook_endpoints (id, account_id, url, events_json, secret, disabled, created_at)
    values (${`we_${a.id}`}, ${a.id}, 'https://example.com/h', '["job.succeeded"]', 'whsec_x', 0, ${T0})`.execute(k);
  await sql`insert into webhook_secrets (account_id, secret, created_at) values (${a.id}, 'whsec_default', ${T0})`.execute(k);
  await sql`insert into webhook_events (id, account_id, type, job_id, data_json, created_at)
    values (${`evt_${a.id}`}, ${a.id}, 'job.succeeded', ${`job_${a.id}`}, null, ${T0})`.execute(k);
  await sql`insert into webhook_deliveries (id, event_id, event_type, account_id, endpoint_id, url, status, attempts_json, failures, created_at, updated_at)
    values (${`whd_${a.id}`}, ${`evt_${a.id}`}, 'job.succeeded', ${a.id}, ${`we_${a.id}`}, 'https://example.com/h', 'succeeded', '[]', 0, ${T0}, ${T0})`.execute(k);
  await sql`insert into topups (session_id, account_id, amount_micros, event_id, created_at)
    values (${`cs_${a.id}`}, ${a.id}, 10000000, ${`evt_stripe_${a.id}`}, ${T0})`.execute(k);
}

/** The ledger of a pre-D41 account: signup, a top-up, a captured job, an open hold. */
function oldLedger(id: string, extra: number): OldAccount["ledger"] {
  return [
    { kind: "signup_credit", amount: 500_000, reference: "signup" },
    { kind: "deposit", amount: 10_000_000 + extra, reference: `cs_${id}` },
    { kind: "hold", amount: -40_000, hold: `hold_${id}_1`, job: `job_${id}`, request: `req_${id}_1` },
    { kind: "hold_release", amount: 40_000, hold: `hold_${id}_1`, job: `job_${id}`, request: `req_${id}_1` },
    { kind: "charge", amount: -40_000, hold: `hold_${id}_1`, job: `job_${id}`, request: `req_${id}_1` },
    { kind: "hold", amount: -7_000, hold: `hold_${id}_2`, request: `req_${id}_2` },
  ];
}

/** Everything per account that must survive the migration, keyed so that ids can be compared. */
async function snapshot(db: Db, accountId: string) {
  const k = db.kysely;
  const account = (
    await sql<Record<string, unknown>>`select balance_micros, total_deposits_micros, tier_override, limits_override, low_balance_micros, low_balance_armed from accounts where id = ${accountId}`.execute(k)
  ).rows[0];
  const ledger = (
    await sql<Record<string, unknown>>`select id, kind, amount_micros, balance_after_micros, hold_id, job_id, request_id, reference, created_at from ledger_entries where account_id = ${accountId} order by seq`.execute(k)
  ).rows;
  const rows: Record<string, number> = {};
  for (const t of ORG_TABLES) {
    rows[t] = Number((await sql<{ n: number }>`select count(*) as n from ${sql.table(t)} where account_id = ${accountId}`.execute(k)).rows[0].n);
  }
  const num = (r: Record<string, unknown>) => Object.fromEntries(Object.entries(r).map(([c, v]) => [c, typeof v === "bigint" || (typeof v === "string" && /^\d+$/.test(v)) ? Number(v) : v]));
  return { account: account === undefined ? null : num(account), ledger: ledger.map(num), rows };
}

for (const backend of BACKENDS) {
  describe(`migration 016 (organizations) on ${backend.name}`, { skip: backend.skip }, () => {
    test("every account becomes a personal organization: money, ledgers and rows unchanged; old keys and sessions work", async () => {
      const temp = await createTempDatabase(backend.name);
      const db = openDatabase(temp.url);
      try {
        await migrate(db, { to: "015_idempotent_calls" });
        const olds: OldAccount[] = ["usr_alice", "usr_bob", "usr_carol"].map((id, n) => ({
          id,
          email: `${id.slice(4)}@example.com`,
          apiKey: newApiKeySecret(),
          session: newSessionToken(),
          ledger: oldLedger(id, n * 1_000_003),
        }));
        for (const [n, a] of olds.entries()) await writeOldAccount(db, a, n);
        // A table a later migration might add: found by its account_id column, as is idempotent_calls (015).
        await sql`create table side_table (id text primary key, account_id text not null references accounts (id))`.execute(db.kysely);
        for (const a of olds) {
          await sql`insert into side_table (id, account_id) values (${`side_${a.id}`}, ${a.id})`.execute(db.kysely);
          await sql`insert into idempotent_calls (scope, idem_key, account_id, request_hash, state, owner, created_at, expires_at)
            values (${`key_${a.id}`}, 'k1', ${a.id}, 'h', 'done', 'req_x', ${T0}, ${Date.now() + 60_000})`.execute(db.kysely);
        }
        const before = new Map<string, Awaited<ReturnType<typeof snapshot>>>();
        for (const a of olds) before.set(a.id, await snapshot(db, a.id));
        for (const a of olds) assert.equal(before.get(a.id)!.rows.ledger_entries, 6);

        await migrate(db);
        const k = db.kysely;

        const orgOf = new Map<string, string>();
        for (const a of olds) {
          const user = await k.selectFrom("users").selectAll().where("id", "=", a.id).executeTakeFirstOrThrow();
          assert.equal(user.email, a.email, "the user keeps its id and email");
          assert.match(user.personal_org_id ?? "", /^org_[A-Za-z0-9]{22}$/, "a new org_ id");
          orgOf.set(a.id, user.personal_org_id!);
          const org = user.personal_org_id!;

          const after = await snapshot(db, org);
          assert.deepEqual(after, before.get(a.id), `${a.id}: balance, limits, alert, ledger and rows as before`);
          assert.equal(Number(after.account?.balance_micros), await ledgerSum(k, org), "balance equals the ledger sum");
          assert.equal(await snapshot(db, a.id).then((s) => s.ledger.length), 0, "nothing is left under the user id");

          const name = await k.selectFrom("accounts").select("name").where("id", "=", org).executeTakeFirstOrThrow();
          assert.equal(name.name, a.email);
          const members = await k.selectFrom("memberships").selectAll().where("org_id", "=", org).execute();
          assert.deepEqual(members.map((m) => [m.user_id, m.role]), [[a.id, "owner"]]);
          const key = await k.selectFrom("api_keys").select(["created_by", "role", "spent_micros"]).where("id", "=", `key_${a.id}`).executeTakeFirstOrThrow();
          assert.deepEqual({ ...key, spent_micros: Number(key.spent_micros) }, { created_by: a.id, role: "admin", spent_micros: 12345 });
          const users = await k.selectFrom("usage_records").select("user_id").where("account_id", "=", org).execute();
          assert.deepEqual(users.map((u) => u.user_id), [a.id, a.id]);
          const entryUsers = await k.selectFrom("ledger_entries").select("user_id").where("account_id", "=", org).execute();
          assert.ok(entryUsers.every((e) => e.user_id === a.id));
          const session = await k.selectFrom("sessions").select("user_id").where("id", "=", `ses_${a.id}`).executeTakeFirstOrThrow();
          assert.equal(session.user_id, a.id, "sessions belong to users");
        }
        assert.equal(new Set(orgOf.values()).size, olds.length);
        const side = (await sql<{ id: string; account_id: string }>`select id, account_id from side_table order by id`.execute(k)).rows.map((r) => ({ id: r.id, account_id: r.account_id }));
        assert.deepEqual(side, olds.map((a) => ({ id: `side_${a.id}`, account_id: orgOf.get(a.id) })).sort((x, y) => (x.id < y.id ? -1 : 1)), "an unlisted table is re-pointed too");
        const idem = (await sql<{ scope: string; account_id: string }>`select scope, account_id from idempotent_calls order by scope`.execute(k)).rows.map((r) => ({ scope: r.scope, account_id: r.account_id }));
        assert.deepEqual(idem, olds.map((a) => ({ scope: `key_${a.id}`, account_id: orgOf.get(a.id) })).sort((x, y) => (x.scope < y.scope ? -1 : 1)), "idempotent calls too");

        // The old secrets: the key acts for the organization, the session for the user's personal one.
        const auth = new AuthCache({ ttlMs: 0 });
        for (const a of olds) {
          const byKey = await auth.authenticate(k, a.apiKey, { allowSession: false });
          assert.deepEqual(
            { org: byKey?.accountId, user: byKey?.userId, role: byKey?.role },
            { org: orgOf.get(a.id), user: a.id, role: "admin" },
          );
          const bySession = await auth.authenticate(k, a.session, { allowSession: true });
          assert.deepEqual({ org: bySession?.accountId, user: bySession?.userId, role: bySession?.role }, { org: orgOf.get(a.id), user: a.id, role: "owner" });
        }
        const alice = olds[0];
        const limits = (await auth.authenticate(k, alice.apiKey, { allowSession: false }))!.limits;
        assert.equal(limits.rpm, 777, "the limit override stays with the organization");
        assert.equal((await login(k, { email: alice.email, password: PASSWORD }, { requestId: "req_migration_test", ip: null, userAgent: null })).user_id, alice.id, "the password still logs in");

        // Money moves on the migrated organization as before, and the constraints are back.
        const org = orgOf.get(alice.id)!;
        const hold = await placeHold(k, { accountId: org, amountMicros: 1_000, reference: "t" });
        await captureHold(k, hold.id, 600);
        const balance = Number((await k.selectFrom("accounts").select("balance_micros").where("id", "=", org).executeTakeFirstOrThrow()).balance_micros);
        assert.equal(balance, Number(before.get(alice.id)!.account?.balance_micros) - 600);
        assert.equal(balance, await ledgerSum(k, org));
        await assert.rejects(
          sql`insert into api_keys (id, account_id, name, key_hash, prefix, created_at) values ('key_orphan', ${alice.id}, null, 'h', 'p', 0)`.execute(k),
          "an api key of a user id (not an organization) violates the foreign key",
        );
        await assert.rejects(
          sql`insert into sessions (id, user_id, token_hash, created_at, expires_at) values ('ses_orphan', ${org}, 'h2', 0, 0)`.execute(k),
          "a session names a user",
        );
        await assert.rejects(
          sql`update accounts set balance_micros = -1 where id = ${org}`.execute(k),
          "the balance is still never negative",
        );
        await assert.rejects(
          sql`insert into topups (session_id, account_id, amount_micros, event_id, created_at) values (${`cs_${alice.id}`}, ${org}, 1, 'e', 0)`.execute(k),
          "a Checkout Session is still credited once",
        );
      } finally {
        await db.close();
        await temp.drop();
      }
    });
  });
}
