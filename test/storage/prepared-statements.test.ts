/**
 * Hot statements on PostgreSQL run as named prepared statements (storage/prepared.ts `pgStatementName`):
 * the compiled-once ones at once, others once they ran ten times (never a `select *`); a connection parses
 * and plans each once (`pg_prepared_statements` lists it) and answers as before.
 * `DATABASE_PREPARED_STATEMENTS=off` (a pooler in transaction mode) leaves every statement unnamed.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { sql } from "kysely";
import { loadConfig } from "../../src/config.ts";
import { type Db, migrate, openDatabase } from "../../src/storage/db.ts";
import { prepare } from "../../src/storage/prepared.ts";
import { BACKENDS, createTempDatabase, type TempDatabase } from "../helpers/backends.ts";

const pgBackend = BACKENDS.find((b) => b.name === "postgres")!;

/** A compiled-once read of one account. */
const accountEmail = prepare((db, p) => db.selectFrom("accounts").select(["name as email"]).where("id", "=", p<string>(0)));

describe("named prepared statements on postgres", { skip: pgBackend.skip }, () => {
  let temp: TempDatabase;
  before(async () => {
    temp = await createTempDatabase("postgres");
    const db = openDatabase(temp.url);
    await migrate(db);
    await db.kysely
      .insertInto("accounts")
      .values({ id: "usr_ps", name: "ps@example.com", balance_micros: 0, total_deposits_micros: 0, tier_override: null, limits_override: null, created_at: 0 })
      .execute();
    await db.close();
  });
  after(async () => {
    await temp?.drop();
  });

  /** Runs the statement twice on one connection; returns its answers and the connection's named statements. */
  async function onOneConnection(db: Db): Promise<{ emails: string[]; names: string[] }> {
    return db.kysely.connection().execute(async (conn) => {
      const emails: string[] = [];
      for (let i = 0; i < 2; i++) emails.push((await accountEmail(conn, "usr_ps")).rows[0]?.email ?? "");
      const names = (await sql<{ name: string; statement: string }>`select name, statement from pg_prepared_statements`.execute(conn)).rows;
      return { emails, names: names.filter((r) => r.statement.includes('from "accounts"')).map((r) => r.name) };
    });
  }

  test("on by default: parsed once per connection, same answers", async () => {
    const db = openDatabase(temp.url);
    try {
      const { emails, names } = await onOneConnection(db);
      assert.deepEqual(emails, ["ps@example.com", "ps@example.com"]);
      assert.equal(names.length, 1, "one named statement, reused");
      assert.match(names[0], /^gw_\d+$/);
    } finally {
      await db.close();
    }
  });

  test("any other statement is named once it ran ten times, except a select * (a column added later would change its result type)", async () => {
    const db = openDatabase(temp.url);
    try {
      const named = await db.kysely.connection().execute(async (conn) => {
        for (let i = 0; i < 12; i++) {
          // Texts no other test runs: built here, not compiled once.
          const r = await conn.selectFrom("accounts").select(["id", "created_at"]).where("name", "=", `ps@example.com`).where("balance_micros", ">=", -i).execute();
          assert.equal(r.length, 1);
          assert.equal((await conn.selectFrom("accounts").selectAll().where("tier_override", "is", null).where("balance_micros", ">=", -i).execute()).length, 1);
        }
        const rows = (await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(conn)).rows;
        return rows.map((r) => r.statement);
      });
      assert.equal(named.filter((t) => t.includes('select "id", "created_at" from "accounts"')).length, 1, "the hot one is named");
      assert.equal(named.filter((t) => t.includes("select * from")).length, 0, "the select * is not");
    } finally {
      await db.close();
    }
  });

  test("DATABASE_PREPARED_STATEMENTS=off: unnamed, same answers", async () => {
    assert.equal(loadConfig({}).databasePreparedStatements, true);
    assert.equal(loadConfig({ DATABASE_PREPARED_STATEMENTS: "off" }).databasePreparedStatements, false);
    assert.throws(() => loadConfig({ DATABASE_PREPARED_STATEMENTS: "yes" }), /DATABASE_PREPARED_STATEMENTS must be one of on, off/);
    const db = openDatabase(temp.url, { preparedStatements: false });
    try {
      const { emails, names } = await onOneConnection(db);
      assert.deepEqual(emails, ["ps@example.com", "ps@example.com"]);
      assert.deepEqual(names, []);
    } finally {
      await db.close();
    }
  });
});
