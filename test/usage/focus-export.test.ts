/**
 * Reports of the usage log on both databases, through a real gateway on loopback: `GET /v1/usage?group_by=member`
 * (and its CSV), and the FOCUS 1.2 export `GET /v1/usage/export?format=focus`.
 *
 * An organization with an owner and a member calls with their keys (one record made to name no member,
 * one no key), a test-mode key calls too, one speech and one image job fail. Every row of the export is checked against
 * the FOCUS 1.2 column specification as written below (FOCUS_SPEC, read from the specification's column
 * definitions: required columns, data types, value formats, allowed values, nullability and the rules
 * between columns), and against the ledger: each row's BilledCost is what the ledger charged for that
 * day's calls of that model, member and key, and the rows together cost what the ledger charged in the
 * period. ListCost is the catalog price of the calls (speech per character, images per image).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { getModel } from "../../src/catalog/models.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway, type TestResponse } from "../helpers/gateway.ts";

const ALPHA_VOICE = "pNx4Lq8TzR2vWk7HdM3s";
/** alpha-turbo speech: 0.20 USD per 1000 characters. */
const SPEECH = { model: "alpha-turbo-v2-5", input: "Hello there.", voice_id: ALPHA_VOICE };
const DAY_MS = 86_400_000;

type User = Awaited<ReturnType<TestGateway["register"]>>;

// ------------------------------------------------------------------------------------------------
// The FOCUS 1.2 column specification (FinOps Open Cost and Usage Specification, version 1.2,
// "Columns" and "Attributes"), as this test checks it.

type FocusType = "Decimal" | "String" | "DateTime" | "JSON";
interface ColumnSpec {
  type: FocusType;
  /** Mandatory: always present. Conditional and recommended ones are checked when present. */
  level: "Mandatory" | "Conditional" | "Recommended";
  nullable: boolean;
  allowed?: readonly string[];
  /** Currency Format (ISO 4217 for a national currency) or Unit Format. */
  format?: "currency" | "unit";
}

/** ServiceCategory's allowed values. */
const SERVICE_CATEGORIES = [
  "AI and Machine Learning", "Analytics", "Business Applications", "Compute", "Databases", "Developer Tools", "Multicloud",
  "Identity", "Integration", "Internet of Things", "Management and Governance", "Media", "Migration", "Mobile", "Networking",
  "Security", "Storage", "Web", "Other",
] as const;
/** ServiceSubcategory's allowed values under "AI and Machine Learning" (each has one parent category). */
const AI_SUBCATEGORIES = ["AI Platforms", "Bots", "Generative AI", "Machine Learning", "Natural Language Processing", "Other (AI and Machine Learning)"];

const FOCUS_SPEC: Record<string, ColumnSpec> = {
  // The 21 mandatory columns of FOCUS 1.2.
  BilledCost: { type: "Decimal", level: "Mandatory", nullable: false },
  BillingAccountId: { type: "String", level: "Mandatory", nullable: false },
  BillingAccountName: { type: "String", level: "Mandatory", nullable: true },
  BillingCurrency: { type: "String", level: "Mandatory", nullable: false, format: "currency" },
  BillingPeriodEnd: { type: "DateTime", level: "Mandatory", nullable: false },
  BillingPeriodStart: { type: "DateTime", level: "Mandatory", nullable: false },
  ChargeCategory: { type: "String", level: "Mandatory", nullable: false, allowed: ["Usage", "Purchase", "Tax", "Credit", "Adjustment"] },
  ChargeClass: { type: "String", level: "Mandatory", nullable: true, allowed: ["Correction"] },
  ChargeDescription: { type: "String", level: "Mandatory", nullable: true },
  ChargePeriodEnd: { type: "DateTime", level: "Mandatory", nullable: false },
  ChargePeriodStart: { type: "DateTime", level: "Mandatory", nullable: false },
  ContractedCost: { type: "Decimal", level: "Mandatory", nullable: false },
  EffectiveCost: { type: "Decimal", level: "Mandatory", nullable: false },
  InvoiceIssuerName: { type: "String", level: "Mandatory", nullable: false },
  ListCost: { type: "Decimal", level: "Mandatory", nullable: false },
  PricingQuantity: { type: "Decimal", level: "Mandatory", nullable: true },
  PricingUnit: { type: "String", level: "Mandatory", nullable: true, format: "unit" },
  ProviderName: { type: "String", level: "Mandatory", nullable: false },
  PublisherName: { type: "String", level: "Mandatory", nullable: false },
  ServiceCategory: { type: "String", level: "Mandatory", nullable: false, allowed: SERVICE_CATEGORIES },
  ServiceName: { type: "String", level: "Mandatory", nullable: false },
  // Conditional and recommended columns a usage-priced provider with a price list and tags carries.
  ChargeFrequency: { type: "String", level: "Recommended", nullable: false, allowed: ["One-Time", "Recurring", "Usage-Based"] },
  ConsumedQuantity: { type: "Decimal", level: "Conditional", nullable: true },
  ConsumedUnit: { type: "String", level: "Conditional", nullable: true, format: "unit" },
  ServiceSubcategory: { type: "String", level: "Recommended", nullable: false },
  SkuId: { type: "String", level: "Conditional", nullable: true },
  SkuPriceId: { type: "String", level: "Conditional", nullable: true },
  Tags: { type: "JSON", level: "Conditional", nullable: true },
};
/** Columns the brief of this export names: they must be present although some are conditional in FOCUS. */
const REQUIRED_HERE = ["ConsumedQuantity", "ConsumedUnit", "SkuId", "Tags", "SkuPriceId", "ChargeFrequency", "ServiceSubcategory"];

/** Numeric Format: integer, decimal or E notation; no sign for positives, no commas, symbols or units. */
const NUMERIC = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?(E-?[0-9]+)?$/;
/** Date/Time Format: extended ISO 8601 in UTC with the Z designator, `YYYY-MM-DDTHH:mm:ssZ`. */
const DATE_TIME = /^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$/;
/** Unit Format: `<plural-units>`, `<quantity> <plural-units>`, `<unit>-<time units>` or `<units>/<time unit>`, capitalized. */
const UNIT = /^([1-9][0-9]* )?[A-Z][A-Za-z]*([-/]([1-9][0-9]* )?[A-Z][A-Za-z]*)?$/;

/** Parses an RFC 4180 CSV without line breaks inside fields; an unquoted empty field is null. */
function parseCsv(text: string): (string | null)[][] {
  assert.ok(text.endsWith("\r\n"), "lines end with CRLF");
  return text
    .slice(0, -2)
    .split("\r\n")
    .map((line) => {
      const out: (string | null)[] = [];
      let i = 0;
      for (;;) {
        if (line[i] === '"') {
          let v = "";
          i++;
          for (;;) {
            const q = line.indexOf('"', i);
            assert.ok(q >= 0, `unterminated quote in ${line}`);
            v += line.slice(i, q);
            if (line[q + 1] === '"') {
              v += '"';
              i = q + 2;
            } else {
              i = q + 1;
              break;
            }
          }
          out.push(v);
        } else {
          const c = line.indexOf(",", i);
          const v = line.slice(i, c < 0 ? line.length : c);
          assert.ok(!v.includes('"'), `a bare quote in ${line}`);
          out.push(v === "" ? null : v);
          i = c < 0 ? line.length : c;
        }
        if (i >= line.length) break;
        assert.equal(line[i], ",", `a field ends at a comma: ${line}`);
        i++;
      }
      return out;
    });
}

type Row = Record<string, string | null>;

/** Checks the header and every row against FOCUS_SPEC; returns the rows as objects. */
function checkFocus(csv: string): Row[] {
  const [header, ...lines] = parseCsv(csv);
  const columns = header.map((c) => {
    assert.ok(c !== null);
    return c;
  });
  assert.equal(new Set(columns).size, columns.length, "column names are unique");
  // Column Handling: FOCUS columns in Pascal case, alphanumeric; custom ones prefixed x_ and after them all.
  const firstCustom = columns.findIndex((c) => c.startsWith("x_"));
  for (const [i, c] of columns.entries()) {
    if (c.startsWith("x_")) continue;
    assert.ok(firstCustom < 0 || i < firstCustom, `${c}: FOCUS columns come before custom columns`);
    assert.match(c, /^[A-Z][A-Za-z0-9]*$/, `${c}: Pascal case, alphanumeric`);
    assert.ok(FOCUS_SPEC[c], `${c}: a FOCUS 1.2 column (or x_ prefixed)`);
  }
  for (const [name, spec] of Object.entries(FOCUS_SPEC)) {
    if (spec.level === "Mandatory" || REQUIRED_HERE.includes(name)) assert.ok(columns.includes(name), `${name} is present`);
  }

  const rows = lines.map((fields) => {
    assert.equal(fields.length, columns.length, "every row has every column");
    return Object.fromEntries(columns.map((c, i) => [c, fields[i]])) as Row;
  });
  for (const row of rows) {
    const where = `${row.ChargePeriodStart} ${row.SkuId} ${row.Tags}`;
    for (const [name, spec] of Object.entries(FOCUS_SPEC)) {
      if (!(name in row)) continue;
      const v = row[name];
      if (v === null) {
        assert.ok(spec.nullable, `${name} is not null (${where})`);
        continue;
      }
      // Null Handling and String Handling: no empty or blank placeholders.
      assert.ok(v.trim() !== "", `${name} is not blank (${where})`);
      if (spec.type === "Decimal") assert.match(v, NUMERIC, `${name}: Numeric Format (${where})`);
      if (spec.type === "DateTime") {
        assert.match(v, DATE_TIME, `${name}: Date/Time Format (${where})`);
        assert.equal(new Date(Date.parse(v)).toISOString().replace(".000Z", "Z"), v, `${name} is a real UTC instant`);
      }
      if (spec.type === "JSON") {
        // Key-Value Format: a serialized JSON object with unique keys and scalar values.
        const keys: string[] = [];
        const obj = JSON.parse(v, function (this: unknown, key: string, value: unknown) {
          if (key !== "" && this !== null && typeof this === "object" && !Array.isArray(this)) keys.push(key);
          return value;
        }) as unknown;
        assert.ok(obj !== null && typeof obj === "object" && !Array.isArray(obj), `${name} is a JSON object`);
        assert.equal(new Set(keys).size, keys.length, `${name}: keys are unique`);
        for (const x of Object.values(obj as Record<string, unknown>)) {
          assert.ok(x === null || ["string", "number", "boolean"].includes(typeof x), `${name}: values are scalars`);
        }
      }
      if (spec.allowed) assert.ok(spec.allowed.includes(v), `${name}: '${v}' is an allowed value`);
      if (spec.format === "currency") assert.match(v, /^[A-Z]{3}$/, `${name}: ISO 4217`);
      if (spec.format === "unit") assert.match(v, UNIT, `${name}: Unit Format`);
    }
    // Rules between columns.
    assert.equal(row.BillingCurrency, "USD");
    if (row.ServiceCategory === "AI and Machine Learning") assert.ok(AI_SUBCATEGORIES.includes(row.ServiceSubcategory ?? ""), `ServiceSubcategory '${row.ServiceSubcategory}' belongs to its category`);
    const usage = row.ChargeCategory === "Usage" && row.ChargeClass !== "Correction";
    if (usage) {
      for (const c of ["PricingQuantity", "SkuId", "SkuPriceId", "ConsumedQuantity"]) assert.notEqual(row[c], null, `${c} is not null on a Usage row`);
    } else {
      assert.equal(row.ConsumedQuantity, null, "ConsumedQuantity is null unless Usage");
    }
    assert.equal(row.PricingUnit === null, row.PricingQuantity === null, "PricingUnit is null exactly when PricingQuantity is");
    assert.equal(row.ConsumedUnit === null, row.ConsumedQuantity === null, "ConsumedUnit is null exactly when ConsumedQuantity is");
    const start = Date.parse(row.ChargePeriodStart!);
    assert.equal(Date.parse(row.ChargePeriodEnd!), start + DAY_MS, "ChargePeriodEnd is ChargePeriodStart plus one day");
    assert.equal(start % DAY_MS, 0, "a charge period is a UTC day");
    const billingStart = Date.parse(row.BillingPeriodStart!);
    const billingEnd = Date.parse(row.BillingPeriodEnd!);
    assert.ok(billingStart <= start && start + DAY_MS <= billingEnd, "the charge period lies within the billing period");
    const s = new Date(billingStart);
    assert.deepEqual([s.getUTCDate(), s.getUTCHours()], [1, 0], "the billing period starts a UTC month");
    assert.equal(billingEnd, Date.UTC(s.getUTCFullYear(), s.getUTCMonth() + 1, 1), "and ends at the next");
    for (const c of ["BilledCost", "EffectiveCost", "ListCost", "ContractedCost"]) assert.ok(Number(row[c]) >= 0, `${c} of usage is not negative`);
  }
  return rows;
}

/** Micro-USD of decimal USD text (at most 6 decimals), exactly. */
function micros(usd: string): number {
  const m = /^(-?)([0-9]+)(?:\.([0-9]{1,6}))?$/.exec(usd);
  assert.ok(m, `${usd} has at most 6 decimals`);
  const n = Number(m[2]) * 1_000_000 + Number((m[3] ?? "").padEnd(6, "0"));
  return m[1] === "-" ? -n : n;
}

const isoDay = (t: number) => new Date(t).toISOString().slice(0, 10);

for (const backend of BACKENDS) {
  describe(`usage by member and the FOCUS 1.2 export on ${backend.name}`, { skip: backend.skip }, () => {
    let gw: TestGateway;
    let owner: User;
    let member: User;
    let orgId: string;
    let ownerKey: { key_id: string; api_key: string };
    let memberKey: { key_id: string; api_key: string };
    let testKey: { key_id: string; api_key: string };
    /** Request ids of the calls, by name. */
    const ids: Record<string, string> = {};

    const db = () => gw.services.db.kysely;
    const as = (token: string, org?: string) => ({ token, ...(org ? { headers: { "x-svc-org": org } } : {}) });
    const call = async (name: string, token: string, path: string, body: unknown, headers: Record<string, string> = {}): Promise<TestResponse> => {
      const r = await gw.request("POST", path, { token, body, headers });
      ids[name] = r.headers.get("x-svc-request-id")!;
      return r;
    };
    const exportCsv = async (query: string, token = ownerKey.api_key): Promise<TestResponse> => gw.request("GET", `/v1/usage/export?${query}`, { token });

    before(async () => {
      gw = await startGateway(backend.name);
      owner = await gw.register();
      const made = await gw.request("POST", "/v1/orgs", { ...as(owner.session_token), body: { name: "Acme, \"Studio\"" } });
      assert.equal(made.status, 201, JSON.stringify(made.json));
      orgId = made.json.id;
      member = await gw.register();
      const inv = await gw.request("POST", `/v1/orgs/${orgId}/invites`, { ...as(owner.session_token), body: { email: member.email, role: "member" } });
      assert.equal(inv.status, 201, JSON.stringify(inv.json));
      assert.equal((await gw.request("POST", `/v1/invites/${inv.json.token}/accept`, as(member.session_token))).status, 200);
      assert.equal((await gw.request("POST", `/v1/admin/orgs/${orgId}/deposits`, { token: ADMIN_TOKEN, body: { amount_usd: 50 } })).status, 200);
      const lim = await gw.request("PUT", `/v1/admin/orgs/${orgId}/limits`, { token: ADMIN_TOKEN, body: { rpm: 10_000, per_model_rpm: 10_000 } });
      assert.equal(lim.status, 200, JSON.stringify(lim.json));
      const key = async (u: User, body: Record<string, unknown> = {}) => {
        const r = await gw.request("POST", "/v1/auth/keys", { ...as(u.session_token, orgId), body });
        assert.equal(r.status, 201, JSON.stringify(r.json));
        return r.json as { key_id: string; api_key: string };
      };
      ownerKey = await key(owner);
      memberKey = await key(member);
      testKey = await key(owner, { mode: "test" });

      // The workload: the owner's key, the member's key, the owner's session (no key), a test-mode key.
      assert.equal((await call("ownerSpeech1", ownerKey.api_key, "/v1/audio/speech", SPEECH)).status, 200);
      assert.equal((await call("ownerSpeech2", ownerKey.api_key, "/v1/audio/speech", { ...SPEECH, input: "A second, longer sentence." })).status, 200);
      assert.equal((await call("ownerSpeech3", ownerKey.api_key, "/v1/audio/speech", { ...SPEECH, input: "Third." })).status, 200);
      assert.equal((await call("ownerFailed", ownerKey.api_key, "/v1/audio/speech", SPEECH, { "x-svc-simulate": "fail" })).status, 502);
      const image = await call("ownerImage", ownerKey.api_key, "/v1/images/generations", { model: "imgA-v4", prompt: "a lighthouse", n: 2 });
      assert.equal(image.status, 202);
      const badImage = await call("ownerBadImage", ownerKey.api_key, "/v1/images/generations", { model: "imgA-v4", prompt: "a storm" }, { "x-svc-simulate": "fail" });
      assert.equal(badImage.status, 202);
      assert.equal((await call("ownerChat", ownerKey.api_key, "/v1/chat/completions", { model: "fast", messages: [{ role: "user", content: "Say hi." }] })).status, 200);
      assert.equal((await call("memberSpeech", memberKey.api_key, "/v1/audio/speech", SPEECH)).status, 200);
      assert.equal((await call("memberSfx", memberKey.api_key, "/v1/audio/sfx", { prompt: "a door creaks" })).status, 200);
      assert.equal((await call("ownerSpeech4", ownerKey.api_key, "/v1/audio/speech", { ...SPEECH, input: "Fourth." })).status, 200);
      assert.equal((await call("testSpeech", testKey.api_key, "/v1/audio/speech", SPEECH)).status, 200);
      assert.equal((await gw.waitForJob(ownerKey.api_key, image.json.id)).json.status, "succeeded");
      assert.equal((await gw.waitForJob(ownerKey.api_key, badImage.json.id)).json.status, "failed");

      // Two of the owner's speech calls move to either side of a UTC month's end; one record names no
      // member, one no key (as records from before organizations, and calls made without a key, do).
      const move = (id: string, at: number) => db().updateTable("usage_records").set({ created_at: at }).where("id", "=", id).execute();
      await move(ids.ownerSpeech1, Date.UTC(2025, 0, 31, 23, 30));
      await move(ids.ownerSpeech2, Date.UTC(2025, 1, 1, 0, 10));
      await db().updateTable("usage_records").set({ user_id: null }).where("id", "=", ids.ownerSpeech3).execute();
      await db().updateTable("usage_records").set({ key_id: null }).where("id", "=", ids.ownerSpeech4).execute();
    });
    after(async () => {
      await gw?.close();
    });

    /** What the ledger charged for each request of the organization (charges less refunds), micro-USD. */
    async function ledgerCharges(): Promise<Map<string, number>> {
      const entries = await db()
        .selectFrom("ledger_entries")
        .select(["request_id", "kind", "amount_micros"])
        .where("account_id", "=", orgId)
        .where("kind", "in", ["charge", "refund"])
        .execute();
      const out = new Map<string, number>();
      for (const e of entries) out.set(e.request_id!, (out.get(e.request_id!) ?? 0) - Number(e.amount_micros));
      return out;
    }

    test("group_by=member sums by the member's user id; records naming none group as none", async () => {
      const all = await db().selectFrom("usage_records").selectAll().where("account_id", "=", orgId).where("mode", "=", "live").execute();
      const want = new Map<string, { requests: number; cost: number }>();
      for (const r of all) {
        const g = want.get(r.user_id ?? "none") ?? { requests: 0, cost: 0 };
        g.requests += 1;
        g.cost += Number(r.cost_micros ?? 0);
        want.set(r.user_id ?? "none", g);
      }
      assert.deepEqual([...want.keys()].sort(), [owner.user_id, member.user_id, "none"].sort());
      const res = await gw.request("GET", "/v1/usage?group_by=member&from=2000-01-01", { token: memberKey.api_key });
      assert.equal(res.status, 200);
      assert.equal(res.json.group_by, "member");
      const got = new Map<string, { requests: number; cost: number }>(
        res.json.data.map((g: { group: string; requests: number; cost_usd: number }) => [g.group, { requests: g.requests, cost: Math.round(g.cost_usd * 1e6) }]),
      );
      assert.deepEqual(got, want);
      assert.equal(res.json.total.requests, all.length);
      // `user` is the same grouping under its older name.
      const byUser = await gw.request("GET", "/v1/usage?group_by=user&from=2000-01-01", { token: memberKey.api_key });
      assert.equal(byUser.json.group_by, "user");
      assert.deepEqual(byUser.json.data, res.json.data);
      // The member's calls in a zone's days, and the CSV's rows match the JSON.
      const feb1 = async (tz: string) => {
        const r = await gw.request("GET", `/v1/usage?group_by=member&tz=${encodeURIComponent(tz)}&from=2025-02-01&to=2025-02-01`, { token: ownerKey.api_key });
        return r.json.data.map((g: { group: string; requests: number }) => [g.group, g.requests]);
      };
      assert.deepEqual(await feb1("UTC"), [[owner.user_id, 1]]);
      assert.deepEqual(await feb1("Asia/Tokyo"), [[owner.user_id, 2]], "23:30 UTC on 31 January is 08:30 on 1 February in Tokyo");
      const csv = await gw.request("GET", "/v1/usage.csv?group_by=member&from=2000-01-01", { token: owner.session_token, headers: { "x-svc-org": orgId } });
      assert.equal(csv.status, 200);
      assert.match(csv.headers.get("content-disposition") ?? "", /usage-member\.csv/);
      const rows = parseCsv(Buffer.from(csv.bytes).toString("utf8"));
      assert.deepEqual(rows.slice(1).map((r) => [r[0], Number(r[1]), Number(r[2])]), res.json.data.map((g: { group: string; requests: number; cost_usd: number }) => [g.group, g.requests, g.cost_usd]));
      const bad = await gw.request("GET", "/v1/usage?group_by=team", { token: ownerKey.api_key });
      assert.equal(bad.status, 400);
      assert.equal(bad.json.error.param, "group_by");
    });

    test("the FOCUS export: every row follows the FOCUS 1.2 columns, and costs what the ledger charged", async () => {
      const now = Date.now();
      // The moved calls' two days, then the recent days (a window of whole UTC days ending today).
      const monthEnd = await exportCsv("format=focus&from=2025-01-31&to=2025-02-01");
      const recent = await exportCsv(`format=focus&from=${isoDay(now - 2 * DAY_MS)}&to=${isoDay(now)}`);
      for (const r of [monthEnd, recent]) {
        assert.equal(r.status, 200);
        assert.match(r.headers.get("content-type") ?? "", /^text\/csv/);
        assert.match(r.headers.get("content-disposition") ?? "", /^attachment; filename="focus-\d{4}-\d{2}-\d{2}-to-\d{4}-\d{2}-\d{2}\.csv"$/);
      }
      const rows = [...checkFocus(Buffer.from(monthEnd.bytes).toString("utf8")), ...checkFocus(Buffer.from(recent.bytes).toString("utf8"))];

      // The month's end: one row a day, each in its own UTC month as billing period.
      const [jan, feb] = checkFocus(Buffer.from(monthEnd.bytes).toString("utf8"));
      assert.deepEqual([jan.ChargePeriodStart, jan.ChargePeriodEnd, jan.BillingPeriodStart, jan.BillingPeriodEnd], ["2025-01-31T00:00:00Z", "2025-02-01T00:00:00Z", "2025-01-01T00:00:00Z", "2025-02-01T00:00:00Z"]);
      assert.deepEqual([feb.ChargePeriodStart, feb.ChargePeriodEnd, feb.BillingPeriodStart, feb.BillingPeriodEnd], ["2025-02-01T00:00:00Z", "2025-02-02T00:00:00Z", "2025-02-01T00:00:00Z", "2025-03-01T00:00:00Z"]);

      // Every row is one (day, model, member, key) of the charged calls, costing what the ledger charged for them.
      const charges = await ledgerCharges();
      const records = await db().selectFrom("usage_records").selectAll().where("account_id", "=", orgId).where("mode", "=", "live").execute();
      const groupOf = (day: number, model: string, user: string | null, key: string | null) => JSON.stringify([day, model, user, key]);
      const want = new Map<string, { billed: number; calls: number; chars: number; images: number }>();
      for (const r of records) {
        if (r.status !== "succeeded") {
          assert.equal(charges.get(r.id) ?? 0, 0, `${r.status} calls charged nothing`);
          continue;
        }
        const g = groupOf(Math.floor(Number(r.created_at) / DAY_MS), r.model, r.user_id, r.key_id);
        const w = want.get(g) ?? { billed: 0, calls: 0, chars: 0, images: 0 };
        w.billed += charges.get(r.id) ?? 0;
        w.calls += 1;
        w.chars += Number(r.characters ?? 0);
        w.images += Number(r.images ?? 0);
        want.set(g, w);
      }
      const seen = new Set<string>();
      for (const row of rows) {
        const tags = JSON.parse(row.Tags!) as Record<string, string | null>;
        assert.deepEqual(Object.keys(tags).sort(), ["gateway/key_id", "gateway/org_id", "gateway/user_id"], "provider-defined tags, prefixed");
        assert.equal(tags["gateway/org_id"], orgId);
        const g = groupOf(Date.parse(row.ChargePeriodStart!) / DAY_MS, row.SkuId!, tags["gateway/user_id"], tags["gateway/key_id"]);
        assert.ok(!seen.has(g), `one row per day, model, member and key: ${g}`);
        seen.add(g);
        const w = want.get(g);
        assert.ok(w, `the row ${g} is a group of charged calls`);
        assert.equal(micros(row.BilledCost!), w.billed, `BilledCost is the ledger's charge (${g})`);
        assert.equal(micros(row.EffectiveCost!), w.billed, "no amortization: EffectiveCost is BilledCost");
        assert.equal(row.x_Requests, String(w.calls));
        assert.deepEqual([row.BillingAccountId, row.BillingAccountName, row.ChargeCategory, row.ChargeClass], [orgId, 'Acme, "Studio"', "Usage", null]);
        assert.deepEqual([row.ProviderName, row.PublisherName, row.InvoiceIssuerName], ["media-gateway", "media-gateway", "media-gateway"]);
        assert.equal(row.SkuPriceId, row.SkuId, "the model's /v1/pricing row");
        assert.ok(row.ChargeDescription!.includes(row.SkuId!));
        // ListCost is the catalog price of the calls.
        const model = getModel(row.SkuId!);
        if (model?.pricing.mode === "per-char") {
          assert.deepEqual([row.ServiceName, row.ConsumedUnit, row.ConsumedQuantity, row.PricingUnit], ["Text to Speech", "Characters", String(w.chars), "1000 Characters"]);
          assert.equal(Number(row.PricingQuantity) * 1000, w.chars);
          assert.equal(micros(row.ListCost!), (w.chars * model.pricing.microsPerKchar) / 1000, "ListCost: characters at the catalog's price");
        } else if (model?.pricing.mode === "per-image") {
          assert.deepEqual([row.ServiceName, row.ConsumedUnit, row.ConsumedQuantity, row.PricingUnit, row.PricingQuantity], ["Image Generation", "Images", String(w.images), "Images", String(w.images)]);
          assert.equal(micros(row.ListCost!), w.images * model.pricing.microsPerImage, "ListCost: images at the catalog's price");
        } else if (model?.pricing.mode === "per-call") {
          assert.deepEqual([row.ServiceName, row.PricingUnit, row.PricingQuantity], ["Sound Effects", "Requests", String(w.calls)]);
          assert.equal(micros(row.ListCost!), w.calls * model.pricing.microsPerCall);
        } else {
          assert.deepEqual([row.ServiceName, row.ConsumedUnit, row.PricingUnit], ["Chat Completions", "Tokens", "1000000 Tokens"]);
          assert.equal(micros(row.ListCost!), w.billed);
        }
        assert.equal(micros(row.ContractedCost!), micros(row.ListCost!), "no negotiated prices");
      }
      assert.deepEqual([...seen].sort(), [...want.keys()].sort(), "every group of charged calls has its row");
      // Together the rows cost what the ledger charged the organization for the period's calls.
      const total = rows.reduce((n, r) => n + micros(r.BilledCost!), 0);
      assert.equal(total, [...charges.values()].reduce((n, c) => n + c, 0));
      assert.ok(total > 0);

      // The tags tell members, keys and sessions apart.
      const tagsOf = (name: string) => {
        const r = records.find((x) => x.id === ids[name])!;
        return rows.filter((row) => row.SkuId === r.model && row.ChargePeriodStart === new Date(Math.floor(Number(r.created_at) / DAY_MS) * DAY_MS).toISOString().replace(".000Z", "Z")).map((row) => JSON.parse(row.Tags!));
      };
      assert.ok(tagsOf("memberSpeech").some((t) => t["gateway/user_id"] === member.user_id && t["gateway/key_id"] === memberKey.key_id));
      assert.ok(tagsOf("ownerSpeech4").some((t) => t["gateway/user_id"] === owner.user_id && t["gateway/key_id"] === null), "a call without a key");
      assert.ok(tagsOf("ownerSpeech3").some((t) => t["gateway/user_id"] === null && t["gateway/key_id"] === ownerKey.key_id), "a record naming no member");
      assert.ok(!rows.some((r) => JSON.parse(r.Tags!)["gateway/key_id"] === testKey.key_id), "no test-mode call in a live export");
    });

    test("mode=test: the test-mode calls, which billed nothing, at their catalog price", async () => {
      const now = Date.now();
      const r = await exportCsv(`format=focus&mode=test&from=${isoDay(now - DAY_MS)}&to=${isoDay(now)}`);
      assert.equal(r.status, 200);
      assert.match(r.headers.get("content-disposition") ?? "", /-test\.csv"$/);
      const rows = checkFocus(Buffer.from(r.bytes).toString("utf8"));
      assert.equal(rows.length, 1);
      const [row] = rows;
      assert.deepEqual(JSON.parse(row.Tags!), { "gateway/org_id": orgId, "gateway/user_id": owner.user_id, "gateway/key_id": testKey.key_id });
      assert.deepEqual([row.BilledCost, row.EffectiveCost], ["0", "0"], "no money moved");
      assert.equal(micros(row.ListCost!), SPEECH.input.length * 200, "the catalog price: 0.20 USD per 1000 characters");
      assert.match(row.ChargeDescription!, /test mode/);
    });

    test("the window: whole UTC days, at most 366, defaulting to this month; bad values are 400", async () => {
      const empty = await exportCsv("format=focus&from=2000-01-01&to=2000-01-31");
      assert.equal(empty.status, 200);
      const lines = Buffer.from(empty.bytes).toString("utf8").split("\r\n").filter((l) => l !== "");
      assert.equal(lines.length, 1, "a header row only");
      checkFocus(Buffer.from(empty.bytes).toString("utf8"));
      // The default window is the current UTC month up to today: it holds the calls made now.
      const byDefault = await exportCsv("format=focus");
      assert.equal(byDefault.status, 200);
      const now = new Date();
      const month = `${now.getUTCFullYear()}-${String(now.getUTCMonth() + 1).padStart(2, "0")}`;
      const monthRows = checkFocus(Buffer.from(byDefault.bytes).toString("utf8"));
      assert.ok(monthRows.length > 0);
      for (const row of monthRows) assert.ok(row.ChargePeriodStart!.startsWith(month));
      // Another organization sees none of it.
      const stranger = await gw.register();
      const theirs = await exportCsv("format=focus&from=2025-01-01&to=2025-12-31", stranger.api_key);
      assert.equal(theirs.status, 200);
      assert.equal(checkFocus(Buffer.from(theirs.bytes).toString("utf8")).length, 0);

      for (const [query, param] of [
        ["from=2025-01-01", "format"],
        ["format=csv", "format"],
        ["format=focus&from=2025-02-30", "from"],
        ["format=focus&from=2025-01-01T00:00:00Z", "from"],
        ["format=focus&to=yesterday", "to"],
        ["format=focus&from=2025-03-02&to=2025-03-01", "from"],
        ["format=focus&from=2024-01-01&to=2025-01-01", "to"],
        ["format=focus&mode=sandbox", "mode"],
      ] as const) {
        const res = await exportCsv(query);
        assert.equal(res.status, 400, query);
        assert.equal(res.json.error.code, "invalid_request", query);
        assert.equal(res.json.error.param, param, query);
      }
      assert.equal((await exportCsv("format=focus&from=2024-01-01&to=2024-12-31")).status, 200, "366 days of a leap year");
      assert.equal((await gw.request("GET", "/v1/usage/export?format=focus")).status, 401);
    });
  });
}
