/**
 * The operator's account queries (issue 15 point 3: find an account by email or id, `GET /v1/admin/users`
 * and `GET /v1/admin/users/{user_id}`), beside the operator actions (accounts/admin.ts) as the team's SQL
 * decision places every folder's queries; the email search is written per dialect (`Dialect` of storage/db.ts).
 *
 * The search is an exact user id or an email prefix, not a substring: a prefix is a range scan of the
 * unique index on `accounts.email` on both databases, where a substring (`LIKE '%x%'`, `ILIKE`) reads every
 * account, however few match. Emails are stored lowercased (registration.ts), so lowercasing the query makes the
 * prefix case-insensitive without `lower(email)` (which no index covers).
 * - SQLite compares text by bytes (BINARY), so `email >= q AND email < next(q)` is exactly "starts with q".
 * - PostgreSQL compares by the database's collation. Under a code-point order (`C`, `POSIX`, `C.UTF-8`) the
 *   same range is exact and uses the index. Under a linguistic collation (`en_US.UTF-8`) it is not (that
 *   order skips punctuation: `john.doe` does not sort between `john.` and `john/`), so there the query is
 *   `email LIKE 'q%'`, exact but a scan (an index `accounts (email text_pattern_ops)` would serve it). Which
 *   one applies is probed once per database handle.
 * With the exact id the plans are SQLite's MULTI-INDEX OR over the primary key and the email index, and
 * PostgreSQL's BitmapOr of `accounts_pkey` and `accounts_email_key`; the matches are then sorted by age.
 * Without `q` the newest accounts are a sort of the whole table: no index leads with `created_at`.
 */
import { type Kysely, sql, type Transaction } from "kysely";
import type { Dialect } from "../storage/db.ts";
import type { Database } from "../storage/schema.ts";

type Executor = Kysely<Database> | Transaction<Database>;

/** An account as the operator sees it in lists and on its page. Amounts micro-USD, times ms since the epoch. */
export interface AdminAccountRow {
  id: string;
  email: string;
  balanceMicros: number;
  totalDepositsMicros: number;
  tierOverride: number | null;
  /** The D22 overrides as stored (JSON text), or null. */
  limitsOverride: string | null;
  createdAt: number;
  /** API keys of the account (live and test). */
  keys: number;
  /** The latest `last_used_at` of its keys (written at most once a minute per key), or null. */
  lastKeyUsedAt: number | null;
}

/** The text just above every string that starts with `prefix` in code-point order, or null when none is. */
export function prefixUpperBound(prefix: string): string | null {
  const points = [...prefix];
  while (points.length > 0) {
    const last = points.pop()!.codePointAt(0)!;
    // Skip the surrogate range: its code points are not characters a stored string can hold.
    const next = last + 1 === 0xd800 ? 0xe000 : last + 1;
    if (next <= 0x10ffff) return points.join("") + String.fromCodePoint(next);
  }
  return null;
}

/** Whether PostgreSQL orders text by code point here (probed with pairs a linguistic collation orders otherwise). */
const bytewise = new WeakMap<object, Promise<boolean>>();
async function comparesByCodePoint(db: Kysely<Database>): Promise<boolean> {
  let probe = bytewise.get(db);
  if (!probe) {
    // Constant text in the database's default collation, the one `accounts.email` has.
    probe = sql<{ ok: boolean }>`select ('B'::text < 'a'::text and 'a-b'::text < 'a.'::text and 'z'::text < 'é'::text) as ok`
      .execute(db)
      .then((r) => r.rows[0]?.ok === true);
    bytewise.set(db, probe);
  }
  return probe;
}

/** `\`, `%` and `_` escaped for a PostgreSQL LIKE pattern (its default escape is the backslash). */
function likeLiteral(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

const ROW_COLUMNS = ["id", "email", "balance_micros", "total_deposits_micros", "tier_override", "limits_override", "created_at"] as const;

/** The select of {@link AdminAccountRow}s: the columns and two subqueries on `api_keys_account`. */
function selectRows(db: Executor) {
  return db.selectFrom("accounts").select((eb) => [
    ...ROW_COLUMNS,
    eb.selectFrom("api_keys").select((k) => k.fn.countAll<number>().as("n")).whereRef("api_keys.account_id", "=", "accounts.id").as("keys"),
    eb.selectFrom("api_keys").select((k) => k.fn.max("last_used_at").as("t")).whereRef("api_keys.account_id", "=", "accounts.id").as("last_key_used_at"),
  ]);
}

function rowOf(r: {
  id: string;
  email: string;
  balance_micros: number;
  total_deposits_micros: number;
  tier_override: number | null;
  limits_override: string | null;
  created_at: number;
  keys: number | null;
  last_key_used_at: number | null;
}): AdminAccountRow {
  return {
    id: r.id,
    email: r.email,
    balanceMicros: Number(r.balance_micros),
    totalDepositsMicros: Number(r.total_deposits_micros),
    tierOverride: r.tier_override === null ? null : Number(r.tier_override),
    limitsOverride: r.limits_override,
    createdAt: Number(r.created_at),
    keys: Number(r.keys ?? 0),
    lastKeyUsedAt: r.last_key_used_at === null ? null : Number(r.last_key_used_at),
  };
}

/**
 * One page of accounts, newest first (by creation time, then id): those whose id is `q` or whose email
 * starts with `q` (case-insensitive), every account when `q` is null. `after` is the id of the last account
 * of the previous page; one that names no account is ignored (the first page).
 */
export async function searchAccounts(
  db: Kysely<Database>,
  dialect: Dialect,
  opts: { q: string | null; limit: number; after: string | null },
): Promise<{ rows: AdminAccountRow[]; hasMore: boolean }> {
  let query = selectRows(db).orderBy("created_at", "desc").orderBy("id", "desc").limit(opts.limit + 1);
  if (opts.q !== null) {
    const id = opts.q;
    const prefix = opts.q.toLowerCase();
    const upper = prefixUpperBound(prefix);
    const range = dialect === "sqlite" || (await comparesByCodePoint(db));
    query = query.where((eb) =>
      eb.or([
        eb("id", "=", id),
        range
          ? upper === null
            ? eb("email", ">=", prefix)
            : eb.and([eb("email", ">=", prefix), eb("email", "<", upper)])
          : eb("email", "like", `${likeLiteral(prefix)}%`),
      ]),
    );
  }
  if (opts.after !== null) {
    const anchor = await db.selectFrom("accounts").select(["created_at", "id"]).where("id", "=", opts.after).executeTakeFirst();
    if (anchor) {
      const at = Number(anchor.created_at);
      query = query.where((eb) => eb(eb.refTuple("created_at", "id"), "<", eb.tuple(at, anchor.id)));
    }
  }
  const rows = await query.execute();
  return { rows: rows.slice(0, opts.limit).map(rowOf), hasMore: rows.length > opts.limit };
}

/** The account `id` as the operator sees it, or null when there is none. */
export async function adminAccountRow(db: Executor, id: string): Promise<AdminAccountRow | null> {
  const row = await selectRows(db).where("id", "=", id).executeTakeFirst();
  return row ? rowOf(row) : null;
}
