/**
 * Organizations, members and roles (D41). The billing entity keeps its table, `accounts`, and every
 * `account_id` column keeps its name: an `account_id` is from now on an organization's id (`org_<random>`).
 * The login moves to a new table `users` (`usr_<random>`, email, password hash); `memberships` gives
 * users roles in organizations and `invites` holds pending invitations (token stored as a hash).
 *
 * Every existing account becomes the personal organization of one owner, in one transaction:
 * - a user with the account's id (`usr_...`, kept: sessions, the register answer and the operator's
 *   `/v1/admin/users/{user_id}` routes name it), email and password hash, whose `personal_org_id` is the
 *   new organization;
 * - the organization gets a new `org_<random>` id, named after the email, and every `account_id` of every
 *   table (api_keys, holds, ledger_entries, voices, jobs, webhook_endpoints, webhook_secrets,
 *   webhook_events, webhook_deliveries, usage_records, topups, and any other table with an `account_id`
 *   column: they are found in the catalog) is re-pointed to it; balances, deposits, tiers, limits and
 *   alerts stay on the row, so balances and ledgers are unchanged;
 * - one `owner` membership; `api_keys.created_by`, `ledger_entries.user_id` and `usage_records.user_id`
 *   name the user (the only one who could have made them); existing keys act with `admin` rights
 *   (`api_keys.role`: what they could do before, and nothing that is the owner's alone);
 * - `sessions` belong to users: `sessions.account_id` becomes `sessions.user_id`, referencing `users`.
 *
 * Foreign keys: PostgreSQL's constraints that reference `accounts` are dropped for the re-pointing and
 * added back with their own definitions afterwards (validated then). SQLite cannot drop a UNIQUE column
 * (`accounts.email`) nor change a foreign key, so `accounts` and `sessions` are rebuilt with foreign keys
 * off (its documented procedure for schema changes), inside one transaction that ends with
 * `PRAGMA foreign_key_check`; a violation rolls everything back.
 */
import { type Kysely, sql } from "kysely";
import { newId } from "../../ids.ts";
import type { Dialect } from "../dialect.ts";

/**
 * Tables whose `account_id` names the organization (every one but `sessions`, which moves to users) when
 * this migration was written; the migration re-points every table with an `account_id` column it finds.
 */
export const ORG_TABLES = [
  "api_keys",
  "holds",
  "ledger_entries",
  "voices",
  "jobs",
  "webhook_endpoints",
  "webhook_secrets",
  "webhook_events",
  "webhook_deliveries",
  "usage_records",
  "topups",
] as const;

/** Rows of the id map inserted per statement (two parameters each). */
const BATCH = 400;

type Db = Kysely<unknown>;

export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  if (dialect === "postgres") {
    // The migrator runs every PostgreSQL migration in a transaction already.
    await migrate(db, dialect);
    return;
  }
  // SQLite: foreign keys can only be switched off outside a transaction.
  await sql`pragma foreign_keys = off`.execute(db);
  try {
    const off = await sql<{ foreign_keys: number }>`pragma foreign_keys`.execute(db);
    if (Number(off.rows[0]?.foreign_keys) !== 0) throw new Error("could not switch SQLite foreign keys off");
    // Its own SQLite transaction on the migrator's connection (the driver's transactions are grouped
    // commits made for request traffic; nothing else runs while migrations do).
    await sql`begin immediate`.execute(db);
    try {
      await migrate(db, dialect);
      await sql`commit`.execute(db);
    } catch (err) {
      await sql`rollback`.execute(db);
      throw err;
    }
  } finally {
    await sql`pragma foreign_keys = on`.execute(db);
  }
}

async function migrate(db: Db, dialect: Dialect): Promise<void> {
  await db.schema
    .createTable("users")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("email", "text", (c) => c.notNull().unique())
    .addColumn("password_hash", "text", (c) => c.notNull())
    .addColumn("personal_org_id", "text")
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .execute();

  // What ties users to organizations must outlive nothing it names: cascades on both sides.
  await db.schema
    .createTable("memberships")
    .addColumn("org_id", "text", (c) => c.notNull().references("accounts.id").onDelete("cascade"))
    .addColumn("user_id", "text", (c) => c.notNull().references("users.id").onDelete("cascade"))
    .addColumn("role", "text", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("memberships_pkey", ["org_id", "user_id"])
    .execute();
  await db.schema.createIndex("memberships_user").on("memberships").columns(["user_id", "created_at"]).execute();

  await db.schema
    .createTable("invites")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("org_id", "text", (c) => c.notNull().references("accounts.id").onDelete("cascade"))
    .addColumn("email", "text", (c) => c.notNull())
    .addColumn("role", "text", (c) => c.notNull())
    .addColumn("token_hash", "text", (c) => c.notNull().unique())
    .addColumn("created_by", "text")
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("expires_at", "bigint", (c) => c.notNull())
    .addColumn("accepted_at", "bigint")
    .execute();
  await db.schema.createIndex("invites_org").on("invites").columns(["org_id", "created_at"]).execute();

  await db.schema.alterTable("api_keys").addColumn("created_by", "text").execute();
  await db.schema.alterTable("api_keys").addColumn("role", "text", (c) => c.notNull().defaultTo("admin")).execute();
  await db.schema.alterTable("ledger_entries").addColumn("user_id", "text").execute();
  await db.schema.alterTable("usage_records").addColumn("user_id", "text").execute();

  // The old id -> new id map of every account.
  await db.schema
    .createTable("org_id_map_016")
    .addColumn("old_id", "text", (c) => c.primaryKey())
    .addColumn("new_id", "text", (c) => c.notNull())
    .execute();
  const ids = (await sql<{ id: string }>`select id from accounts`.execute(db)).rows.map((r) => r.id);
  for (let i = 0; i < ids.length; i += BATCH) {
    const values = ids.slice(i, i + BATCH).map((id) => sql`(${id}, ${newId("org")})`);
    await sql`insert into org_id_map_016 (old_id, new_id) values ${sql.join(values)}`.execute(db);
  }

  await sql`insert into users (id, email, password_hash, personal_org_id, created_at)
    select a.id, a.email, a.password_hash, m.new_id, a.created_at from accounts a join org_id_map_016 m on m.old_id = a.id`.execute(db);

  const fks = dialect === "postgres" ? await dropPgForeignKeys(db) : [];

  const newIdOf = (table: string) => sql`(select m.new_id from org_id_map_016 m where m.old_id = ${sql.ref(`${table}.account_id`)})`;
  const mapped = (table: string) => sql`${sql.ref(`${table}.account_id`)} in (select old_id from org_id_map_016)`;
  await sql`update accounts set id = (select m.new_id from org_id_map_016 m where m.old_id = accounts.id)`.execute(db);
  for (const table of await accountIdTables(db, dialect)) {
    // The user each row of the old single-user account belongs to, written with the re-pointing (the
    // right-hand sides read the row as it was).
    const extra =
      table === "api_keys"
        ? sql`, created_by = account_id`
        : table === "ledger_entries" || table === "usage_records"
          ? sql`, user_id = account_id`
          : sql``;
    await sql`update ${sql.table(table)} set account_id = ${newIdOf(table)}${extra} where ${mapped(table)}`.execute(db);
  }
  await sql`insert into memberships (org_id, user_id, role, created_at)
    select u.personal_org_id, u.id, 'owner', u.created_at from users u`.execute(db);

  if (dialect === "postgres") {
    await sql`alter table accounts drop column email, drop column password_hash`.execute(db);
    await sql`alter table accounts add column name text`.execute(db);
    await sql`alter table sessions rename column account_id to user_id`.execute(db);
    for (const fk of fks) {
      if (fk.table === "sessions") continue;
      await sql`alter table ${sql.table(fk.table)} add constraint ${sql.ref(fk.name)} ${sql.raw(fk.definition)}`.execute(db);
    }
    await sql`alter table sessions add constraint sessions_user_id_fkey foreign key (user_id) references users (id) on delete cascade`.execute(db);
  } else {
    await rebuildSqliteAccounts(db);
    await rebuildSqliteSessions(db);
  }
  await sql`update accounts set name = (select u.email from users u where u.personal_org_id = accounts.id)`.execute(db);
  await db.schema.createIndex("users_personal_org").on("users").column("personal_org_id").execute();
  await db.schema.dropTable("org_id_map_016").execute();

  if (dialect === "sqlite") {
    const bad = await sql<{ table: string }>`pragma foreign_key_check`.execute(db);
    if (bad.rows.length > 0) throw new Error(`foreign key violations after migration 016 in ${[...new Set(bad.rows.map((r) => r.table))].join(", ")}`);
  }
}

/**
 * Every table with an `account_id` column but `sessions` (which moves to users): {@link ORG_TABLES} and
 * any a migration written beside this one added (found in the catalog, not listed, so none is missed).
 */
async function accountIdTables(db: Db, dialect: Dialect): Promise<string[]> {
  const rows =
    dialect === "postgres"
      ? await sql<{ name: string }>`select table_name as name from information_schema.columns
          where table_schema = current_schema() and column_name = 'account_id' order by table_name`.execute(db)
      : await sql<{ name: string }>`select m.name as name from sqlite_master m, pragma_table_info(m.name) c
          where m.type = 'table' and c.name = 'account_id' order by m.name`.execute(db);
  return rows.rows.map((r) => r.name).filter((t) => t !== "sessions");
}

/** Drops every PostgreSQL foreign key that references `accounts`; returns them to be added back. */
async function dropPgForeignKeys(db: Db): Promise<{ table: string; name: string; definition: string }[]> {
  const fks = (
    await sql<{ table: string; name: string; definition: string }>`
      select conrelid::regclass::text as "table", conname as name, pg_get_constraintdef(oid) as definition
      from pg_constraint where contype = 'f' and confrelid = 'accounts'::regclass order by conname`.execute(db)
  ).rows;
  for (const fk of fks) await sql`alter table ${sql.table(fk.table)} drop constraint ${sql.ref(fk.name)}`.execute(db);
  return fks;
}

/** The `create` statements of a SQLite table and of its own (not automatic) indexes. */
async function sqliteSchemaOf(db: Db, table: string): Promise<{ create: string; indexes: string[] }> {
  const rows = (
    await sql<{ type: string; sql: string | null }>`select type, sql from sqlite_master where tbl_name = ${table} order by type desc`.execute(db)
  ).rows;
  const create = rows.find((r) => r.type === "table")?.sql;
  if (!create) throw new Error(`no table ${table}`);
  return { create, indexes: rows.filter((r) => r.type === "index" && r.sql !== null).map((r) => r.sql as string) };
}

/** Removes a column definition from a `create table` statement, or throws when it is not there as expected. */
function withoutColumn(create: string, definition: string): string {
  const out = create.replace(`${definition}, `, "");
  if (out === create) throw new Error(`migration 016: column definition ${definition} not found in ${create}`);
  return out;
}

/**
 * SQLite: `accounts` without `email` and `password_hash` (a UNIQUE column cannot be dropped), with a
 * `name`. The statement is the table's own with those two column definitions taken out, so columns added
 * by other migrations come along; its indexes are made again.
 */
async function rebuildSqliteAccounts(db: Db): Promise<void> {
  const { create, indexes } = await sqliteSchemaOf(db, "accounts");
  let next = withoutColumn(create, `"email" text not null unique`);
  next = withoutColumn(next, `"password_hash" text not null`);
  next = next.replace(/^create table "accounts"/i, `create table "accounts_016"`);
  const columns = (await sql<{ name: string }>`select name from pragma_table_info('accounts')`.execute(db)).rows
    .map((r) => r.name)
    .filter((c) => c !== "email" && c !== "password_hash");
  const list = sql.join(columns.map((c) => sql.ref(c)));
  await sql.raw(next).execute(db);
  await sql`insert into accounts_016 (${list}) select ${list} from accounts`.execute(db);
  await sql`drop table accounts`.execute(db);
  await sql`alter table accounts_016 rename to accounts`.execute(db);
  for (const ix of indexes) await sql.raw(ix).execute(db);
  await sql`alter table accounts add column name text`.execute(db);
}

/** SQLite: `sessions` with `user_id` referencing `users` in place of `account_id`. */
async function rebuildSqliteSessions(db: Db): Promise<void> {
  await db.schema
    .createTable("sessions_016")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("user_id", "text", (c) => c.notNull().references("users.id").onDelete("cascade"))
    .addColumn("token_hash", "text", (c) => c.notNull().unique())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("expires_at", "bigint", (c) => c.notNull())
    .execute();
  await sql`insert into sessions_016 (id, user_id, token_hash, created_at, expires_at)
    select id, account_id, token_hash, created_at, expires_at from sessions`.execute(db);
  await sql`drop table sessions`.execute(db);
  await sql`alter table sessions_016 rename to sessions`.execute(db);
}
