/**
 * Compile-once queries for the hot paths (auth, holds, captures), and which statements PostgreSQL keeps
 * prepared by name.
 *
 * Building a query with Kysely's builder costs tens of microseconds (immutable node trees, compilation);
 * the ledger runs several per request. {@link prepare} builds the query once per database handle with
 * placeholder markers in place of the values, keeps the compiled SQL (dialect-specific, still produced by
 * Kysely) and at run time only substitutes the parameter array.
 */
import type { Compilable, CompiledQuery, Kysely, QueryResult, Transaction } from "kysely";
import { isPostgres } from "./dialect.ts";
import type { Database } from "./schema.ts";

type Executor = Kysely<Database> | Transaction<Database>;

/** A marker standing for the `i`-th argument; typed as the value it replaces so builders type-check. */
export type Param = <T>(i: number) => T;

const MARKER = "\u0000kysely-param:";

/** Statement names on PostgreSQL by SQL text: the compiled-once statements and the hot ones. */
const pgNames = new Map<string, string>();
/** How often each SQL text not (yet) named was run, up to {@link MAX_COUNTED_TEXTS} texts. */
const pgSeen = new Map<string, number>();
/** A text run this often is named (the hot paths' other statements, such as the ledger's CTEs). */
const HOT_AFTER = 10;
/** Named texts at most, per process (each connection keeps a parsed statement and plan for those it runs). */
const MAX_NAMED = 96;
const MAX_COUNTED_TEXTS = 4096;

/**
 * The name under which a PostgreSQL connection keeps `sql` prepared (parsed and planned once per
 * connection instead of at every execution; storage/db.ts), or undefined to run it unnamed. Named: the
 * compiled-once statements of {@link prepare}, and any text once it has run {@link HOT_AFTER} times (the
 * hot statements built elsewhere, such as the ledger's hold and capture), up to {@link MAX_NAMED} texts so
 * that statements whose text varies (lists of ids) cannot grow the server's memory without bound. A
 * `select *` (or `t.*`) is never named: a column added by a migration while it is prepared would change
 * its result type, which PostgreSQL refuses for a prepared statement.
 */
export function pgStatementName(sql: string): string | undefined {
  const name = pgNames.get(sql);
  if (name !== undefined || pgNames.size >= MAX_NAMED) return name;
  const seen = (pgSeen.get(sql) ?? 0) + 1;
  if (seen < HOT_AFTER) {
    if (pgSeen.size < MAX_COUNTED_TEXTS || pgSeen.has(sql)) pgSeen.set(sql, seen);
    return undefined;
  }
  pgSeen.delete(sql);
  return STAR.test(sql) ? undefined : nameOf(sql);
}

const STAR = /select\s+\*|\.\*/i;

function nameOf(sql: string): string {
  const name = `gw_${pgNames.size + 1}`;
  pgNames.set(sql, name);
  return name;
}

/**
 * Returns a function running the query built by `build` with the given argument values. `build` must
 * use `p(i)` for every varying value (the i-th argument) and produce the same shape on every call.
 * The compiled form is cached per database handle (SQLite and PostgreSQL compile differently).
 */
export function prepare<Row>(
  build: (db: Kysely<Database>, p: Param) => Compilable<Row>,
): (db: Executor, ...args: unknown[]) => Promise<QueryResult<Row>> {
  const cache = new WeakMap<object, { compiled: CompiledQuery<Row>; slots: (number | null)[] }>();
  const p: Param = <T>(i: number) => `${MARKER}${i}` as unknown as T;
  return async (db, ...args) => {
    // Transactions share their parent's compiler: key the cache by the dialect's adapter-bearing executor.
    const key = db.getExecutor().adapter;
    let entry = cache.get(key);
    if (!entry) {
      const compiled = build(db as Kysely<Database>, p).compile();
      const slots = compiled.parameters.map((v) =>
        typeof v === "string" && v.startsWith(MARKER) ? Number(v.slice(MARKER.length)) : null,
      );
      entry = { compiled, slots };
      cache.set(key, entry);
      if (isPostgres(db) && !pgNames.has(compiled.sql) && pgNames.size < MAX_NAMED) nameOf(compiled.sql);
    }
    const { compiled, slots } = entry;
    const parameters = compiled.parameters.map((v, i) => {
      const slot = slots[i];
      return slot === null ? v : args[slot];
    });
    return db.executeQuery<Row>({ ...compiled, parameters });
  };
}
