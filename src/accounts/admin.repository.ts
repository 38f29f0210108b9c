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
import { type ExpressionBuilder, type Kysely, sql, type Transaction } from "kysely";
import type { Dialect } from "../storage/db.ts";
import type { Database } from "../storage/schema.ts";

type Executor = Kysely<Database> | Transaction<Database>;

/**
 * An organization as the operator sees it in lists and on its page (D41), with the user whose personal
 * organization it is when listed as a user. Amounts micro-USD, times ms since the epoch.
 */
export interface AdminAccountRow {
  /** The organization. */
  id: string;
  name: string | null;
  /** The user (users' list and page), else null. */
  userId: string | null;
  /** The user's email (users' list and page), else null. */
  email: string | null;
  balanceMicros: number;
  totalDepositsMicros: number;
  tierOverride: number | null;
  /** The D22 overrides as stored (JSON text), or null. */
  limitsOverride: string | null;
  /** The organization's creation time (a user's row: the user's). */
  createdAt: number;
  /** API keys of the organization (live and test). */
  keys: number;
  /** The latest `last_used_at` of its keys (written at most once a minute per key), or null. */
  lastKeyUsedAt: number | null;
  /** Members of the organization. */
  members: number;
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

const ORG_COLUMNS = [
  "accounts.id",
  "accounts.name",
  "accounts.balance_micros",
  "accounts.total_deposits_micros",
  "accounts.tier_override",
  "accounts.limits_override",
] as const;

/** The organization's columns and three subqueries on `api_keys_account` and `memberships_pkey`. */
function orgColumns(eb: ExpressionBuilder<Database, "accounts">) {
  return [
    ...ORG_COLUMNS,
    eb.selectFrom("api_keys").select((k) => k.fn.countAll<number>().as("n")).whereRef("api_keys.account_id", "=", "accounts.id").as("keys"),
    eb.selectFrom("api_keys").select((k) => k.fn.max("last_used_at").as("t")).whereRef("api_keys.account_id", "=", "accounts.id").as("last_key_used_at"),
    eb.selectFrom("memberships").select((k) => k.fn.countAll<number>().as("n")).whereRef("memberships.org_id", "=", "accounts.id").as("members"),
  ] as const;
}

/** Users with their personal organization (`GET /v1/admin/users`): a user without one is not listed. */
function selectUserRows(db: Executor) {
  return db
    .selectFrom("users")
    .innerJoin("accounts", "accounts.id", "users.personal_org_id")
    .select((eb) => [
      ...orgColumns(eb as unknown as ExpressionBuilder<Database, "accounts">),
      "users.id as user_id",
      "users.email",
      "users.created_at",
    ]);
}

/** Organizations (`GET /v1/admin/orgs`). */
function selectOrgRows(db: Executor) {
  return db.selectFrom("accounts").select((eb) => [
    ...orgColumns(eb),
    sql<string | null>`null`.as("user_id"),
    sql<string | null>`null`.as("email"),
    "accounts.created_at",
  ]);
}

function rowOf(r: {
  id: string;
  name: string | null;
  user_id: string | null;
  email: string | null;
  balance_micros: number;
  total_deposits_micros: number;
  tier_override: number | null;
  limits_override: string | null;
  created_at: number;
  keys: number | null;
  last_key_used_at: number | null;
  members: number | null;
}): AdminAccountRow {
  return {
    id: r.id,
    name: r.name,
    userId: r.user_id,
    email: r.email,
    balanceMicros: Number(r.balance_micros),
    totalDepositsMicros: Number(r.total_deposits_micros),
    tierOverride: r.tier_override === null ? null : Number(r.tier_override),
    limitsOverride: r.limits_override,
    createdAt: Number(r.created_at),
    keys: Number(r.keys ?? 0),
    lastKeyUsedAt: r.last_key_used_at === null ? null : Number(r.last_key_used_at),
    members: Number(r.members ?? 0),
  };
}

/** `column >= prefix and column < upper` (exact "starts with" in code-point order), or a LIKE where the collation is linguistic. */
async function startsWith(db: Kysely<Database>, dialect: Dialect, column: "users.email", q: string) {
  const prefix = q.toLowerCase();
  const upper = prefixUpperBound(prefix);
  const range = dialect === "sqlite" || (await comparesByCodePoint(db));
  return (eb: ExpressionBuilder<Database, "users">) =>
    range
      ? upper === null
        ? eb(column, ">=", prefix)
        : eb.and([eb(column, ">=", prefix), eb(column, "<", upper)])
      : eb(column, "like", `${likeLiteral(prefix)}%`);
}

/**
 * One page of users with their personal organization, newest first (by creation time, then id): those
 * whose user id is `q`, whose personal organization's id is `q`, or whose email starts with `q`
 * (case-insensitive), every user when `q` is null. `after` is the user id of the last row of the previous
 * page; one that names no user is ignored (the first page).
 */
export async function searchAccounts(
  db: Kysely<Database>,
  dialect: Dialect,
  opts: { q: string | null; limit: number; after: string | null },
): Promise<{ rows: AdminAccountRow[]; hasMore: boolean }> {
  let query = selectUserRows(db).orderBy("users.created_at", "desc").orderBy("users.id", "desc").limit(opts.limit + 1);
  if (opts.q !== null) {
    const id = opts.q;
    const email = await startsWith(db, dialect, "users.email", opts.q);
    query = query.where((eb) => eb.or([eb("users.id", "=", id), eb("accounts.id", "=", id), email(eb)]));
  }
  if (opts.after !== null) {
    const anchor = await db.selectFrom("users").select(["created_at", "id"]).where("id", "=", opts.after).executeTakeFirst();
    if (anchor) {
      const at = Number(anchor.created_at);
      query = query.where((eb) => eb(eb.refTuple("users.created_at", "users.id"), "<", eb.tuple(at, anchor.id)));
    }
  }
  const rows = await query.execute();
  return { rows: rows.slice(0, opts.limit).map(rowOf), hasMore: rows.length > opts.limit };
}

/**
 * One page of organizations, newest first: those whose id is `q` or whose name starts with `q`
 * (case-insensitive), every one when `q` is null. `after` is the id of the last organization of the previous page.
 */
export async function searchOrgs(
  db: Kysely<Database>,
  dialect: Dialect,
  opts: { q: string | null; limit: number; after: string | null },
): Promise<{ rows: AdminAccountRow[]; hasMore: boolean }> {
  let query = selectOrgRows(db).orderBy("accounts.created_at", "desc").orderBy("accounts.id", "desc").limit(opts.limit + 1);
  if (opts.q !== null) {
    const id = opts.q;
    // Names are free text in any case: a case-insensitive prefix, a scan (organizations are few next to usage).
    const pattern = `${likeLiteral(opts.q.toLowerCase())}%`;
    query = query.where((eb) => eb.or([eb("accounts.id", "=", id), sql<boolean>`lower(${sql.ref("accounts.name")}) like ${pattern} escape '\\'`]));
  }
  if (opts.after !== null) {
    const anchor = await db.selectFrom("accounts").select(["created_at", "id"]).where("id", "=", opts.after).executeTakeFirst();
    if (anchor) {
      const at = Number(anchor.created_at);
      query = query.where((eb) => eb(eb.refTuple("accounts.created_at", "accounts.id"), "<", eb.tuple(at, anchor.id)));
    }
  }
  const rows = await query.execute();
  return { rows: rows.slice(0, opts.limit).map(rowOf), hasMore: rows.length > opts.limit };
}

/** The user `userId` with its personal organization as the operator sees it, or null when there is none. */
export async function adminUserRow(db: Executor, userId: string): Promise<AdminAccountRow | null> {
  const row = await selectUserRows(db).where("users.id", "=", userId).executeTakeFirst();
  return row ? rowOf(row) : null;
}

/** The organization `orgId` as the operator sees it, or null when there is none. */
export async function adminOrgRow(db: Executor, orgId: string): Promise<AdminAccountRow | null> {
  const row = await selectOrgRows(db).where("accounts.id", "=", orgId).executeTakeFirst();
  return row ? rowOf(row) : null;
}

/** The personal organization of `userId`, or null when the user does not exist or has none. */
export async function personalOrgOf(db: Executor, userId: string): Promise<string | null> {
  const row = await db.selectFrom("users").select("personal_org_id").where("id", "=", userId).executeTakeFirst();
  return row?.personal_org_id ?? null;
}
