/**
 * Budgets on calendar windows (D44) over real HTTP on both databases: the routes and their roles, the
 * windows of a time zone far from UTC (a clock the test controls), 50 parallel calls against a `block`
 * budget, a member's budget that blocks that member only, a key's spend limit shown (and changed) as a
 * budget, job holds and their release, `X-Svc-Budget-Remaining-USD`, one `budget.threshold` event per
 * threshold and window, and one audit entry per change; the window arithmetic on its own.
 */
import assert from "node:assert/strict";
import { after, before, describe, mock, test } from "node:test";
import { budgetWindow, canonicalTimeZone } from "../../src/billing/budget-windows.ts";
import { thresholdsDue } from "../../src/billing/budgets.ts";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../helpers/gateway.ts";
import { type Receiver, startReceiver, verify } from "../webhooks/receiver.ts";

const ALPHA_VOICE = "pNx4Lq8TzR2vWk7HdM3s";
const SPEECH = { model: "alpha-turbo-v2-5", input: "Hello there.", voice_id: ALPHA_VOICE };
const micros = (usd: number) => Math.round(usd * 1_000_000);
const usd = (m: number) => m / 1_000_000;

describe("budget windows (D44): calendar boundaries of the budget's time zone", () => {
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  test("a day in Kiritimati (UTC+14) and in Pago Pago (UTC-11) starts at their own midnight", () => {
    const t = Date.parse("2026-11-29T09:30:00Z"); // 23:30 on the 29th in Kiritimati, 22:30 on the 28th in Pago Pago
    assert.deepEqual(budgetWindow("day", "Pacific/Kiritimati", t), { start: Date.parse("2026-11-28T10:00:00Z"), end: Date.parse("2026-11-29T10:00:00Z") });
    assert.equal(iso(budgetWindow("day", "Pacific/Kiritimati", t + 3_600_000).start), "2026-11-29T10:00:00.000Z");
    assert.equal(iso(budgetWindow("day", "Pacific/Pago_Pago", t).start), "2026-11-28T11:00:00.000Z");
  });
  test("weeks start on Monday, months on the first, total is one window", () => {
    const sunday = Date.parse("2026-11-29T12:00:00Z");
    assert.equal(iso(budgetWindow("week", "UTC", sunday).start), "2026-11-23T00:00:00.000Z");
    assert.equal(iso(budgetWindow("week", "Pacific/Kiritimati", sunday).start), "2026-11-29T10:00:00.000Z", "already Monday the 30th there");
    assert.equal(iso(budgetWindow("month", "Asia/Tokyo", Date.parse("2026-11-30T16:00:00Z")).start), "2026-11-30T15:00:00.000Z", "1 December in Tokyo");
    assert.deepEqual(budgetWindow("total", "Asia/Tokyo", sunday), { start: 0, end: null });
  });
  test("a day of a daylight-saving change is 23 or 25 hours long", () => {
    const spring = budgetWindow("day", "Europe/Paris", Date.parse("2026-03-29T12:00:00Z"));
    assert.equal((spring.end! - spring.start) / 3_600_000, 23);
    const autumn = budgetWindow("day", "America/New_York", Date.parse("2026-11-01T12:00:00Z"));
    assert.equal((autumn.end! - autumn.start) / 3_600_000, 25);
  });
  test("zone names: canonical forms kept, unknown names and offsets refused", () => {
    assert.equal(canonicalTimeZone("utc"), "UTC");
    assert.equal(canonicalTimeZone("Asia/Tokyo"), "Asia/Tokyo");
    assert.equal(canonicalTimeZone("Mars/Olympus"), null);
    assert.equal(canonicalTimeZone("+05:00"), null);
  });
  test("thresholds: each crossed once per window, the next one due worked out", () => {
    const base = { amountMicros: 1_000_000, windowStart: 5, thresholds: [50, 80, 100], alertedWindowStart: null, alertedPercent: 0 };
    assert.deepEqual(thresholdsDue({ ...base, spentMicros: 850_000 }), { windowStart: 5, crossed: [50, 80], percent: 80, nextMicros: 1_000_000 });
    assert.deepEqual(thresholdsDue({ ...base, spentMicros: 900_000, alertedWindowStart: 5, alertedPercent: 80 }).crossed, []);
    assert.deepEqual(thresholdsDue({ ...base, spentMicros: 900_000, alertedWindowStart: 4, alertedPercent: 80 }).crossed, [50, 80], "a new window starts from none");
    assert.equal(thresholdsDue({ ...base, spentMicros: 1_000_000, alertedWindowStart: 5, alertedPercent: 80 }).nextMicros, Number.MAX_SAFE_INTEGER);
  });
});

for (const backend of BACKENDS) {
  describe(`budgets (D44) on ${backend.name}`, { skip: backend.skip }, () => {
    let gw: TestGateway;
    let rx: Receiver;
    before(async () => {
      rx = await startReceiver();
      gw = await startGateway(backend.name, { WEBHOOK_ALLOW_PRIVATE: "1" });
    });
    after(async () => {
      await gw?.close();
      await rx?.close();
    });
    const db = () => gw.services.db.kysely;
    const as = (token: string, org?: string) => ({ token, ...(org ? { headers: { "x-svc-org": org } } : {}) });

    /** A funded account whose own limits let many calls run at once. */
    async function account(depositUsd = 20) {
      const u = await gw.register();
      await gw.deposit(u.user_id, depositUsd);
      const r = await gw.request("PUT", `/v1/admin/users/${u.user_id}/limits`, {
        token: ADMIN_TOKEN,
        body: { rpm: 10_000, per_model_rpm: 10_000, audio_concurrent_per_provider: { alpha: 100, beta: 100 }, image_concurrent: 50, image_queue_depth_cap: 100 },
      });
      assert.equal(r.status, 200);
      return u;
    }
    async function join(orgId: string, inviter: string, role: string) {
      const u = await gw.register();
      const inv = await gw.request("POST", `/v1/orgs/${orgId}/invites`, { token: inviter, body: { email: u.email, role } });
      assert.equal(inv.status, 201, JSON.stringify(inv.json));
      const ok = await gw.request("POST", `/v1/invites/${inv.json.token}/accept`, { token: u.session_token });
      assert.equal(ok.status, 200, JSON.stringify(ok.json));
      return u;
    }
    async function keyOf(token: string, org?: string, body: Record<string, unknown> = {}) {
      const r = await gw.request("POST", "/v1/auth/keys", { ...as(token, org), body });
      assert.equal(r.status, 201, JSON.stringify(r.json));
      return r.json as { key_id: string; api_key: string };
    }
    async function budget(token: string, body: Record<string, unknown>, org?: string) {
      const r = await gw.request("POST", "/v1/budgets", { ...as(token, org), body });
      assert.equal(r.status, 201, JSON.stringify(r.json));
      return r.json as Record<string, unknown> & { id: string; spent_usd: number; remaining_usd: number };
    }
    async function price(token: string): Promise<number> {
      const r = await gw.request("POST", "/v1/audio/speech", { token, body: SPEECH });
      assert.equal(r.status, 200, JSON.stringify(r.json));
      return micros(Number(r.headers.get("x-svc-cost-usd")));
    }
    async function assertInvariants(accountId: string) {
      assert.equal(await getBalance(db(), accountId), await ledgerSum(db(), accountId), "balance == ledger sum");
      const open = await db().selectFrom("holds").select("id").where("account_id", "=", accountId).where("status", "=", "open").execute();
      assert.equal(open.length, 0, "no hold left open");
    }
    async function getBudget(token: string, id: string) {
      const r = await gw.request("GET", `/v1/budgets/${id}`, { token });
      assert.equal(r.status, 200, JSON.stringify(r.json));
      return r.json as { spent_usd: number; remaining_usd: number; window_start: string; window_end: string | null } & Record<string, unknown>;
    }

    test("routes: create with defaults, read, change, delete; bad fields 400 with nothing created; members read, owners and admins write", async () => {
      const owner = await account();
      const b = await budget(owner.session_token, { scope: { type: "org", id: owner.org_id }, amount_usd: 5, period: "month", timezone: "Asia/Tokyo" });
      assert.match(b.id, /^bud_/);
      assert.deepEqual(
        { o: b.object, s: b.scope, a: b.amount_usd, p: b.period, tz: b.timezone, ac: b.action, t: b.thresholds, sp: b.spent_usd, r: b.remaining_usd, src: b.source },
        { o: "budget", s: { type: "org", id: owner.org_id }, a: 5, p: "month", tz: "Asia/Tokyo", ac: "block", t: [50, 80, 100], sp: 0, r: 5, src: "budget" },
      );
      assert.match(String(b.window_start), /T00:00:00\.000\+09:00$/, "a month starts at Tokyo's midnight");
      assert.match(String(b.window_end), /-01T00:00:00\.000\+09:00$/);

      const bad: [Record<string, unknown>, string][] = [
        [{ scope: { type: "org", id: owner.org_id }, amount_usd: 0, period: "day" }, "amount_usd"],
        [{ scope: { type: "org", id: owner.org_id }, amount_usd: 0.0000001, period: "day" }, "amount_usd"],
        [{ scope: { type: "org", id: owner.org_id }, amount_usd: 1, period: "year" }, "period"],
        [{ scope: { type: "org", id: owner.org_id }, amount_usd: 1, period: "day", timezone: "Mars/Olympus" }, "timezone"],
        [{ scope: { type: "org", id: owner.org_id }, amount_usd: 1, period: "day", timezone: "+05:00" }, "timezone"],
        [{ scope: { type: "org", id: "org_someoneelse" }, amount_usd: 1, period: "day" }, "scope.id"],
        [{ scope: { type: "member", id: "usr_nobody" }, amount_usd: 1, period: "day" }, "scope.id"],
        [{ scope: { type: "key", id: "key_nothere" }, amount_usd: 1, period: "day" }, "scope.id"],
        [{ scope: { type: "org", id: owner.org_id }, amount_usd: 1, period: "day", thresholds: [0] }, "thresholds"],
        [{ scope: { type: "org", id: owner.org_id }, amount_usd: 1, period: "day", action: "warn" }, "action"],
      ];
      for (const [body, param] of bad) {
        const r = await gw.request("POST", "/v1/budgets", { token: owner.session_token, body });
        assert.equal(r.status, 400, JSON.stringify(body));
        assert.equal(r.json.error.code, "invalid_request");
        assert.ok(String(r.json.error.param).startsWith(param), `${JSON.stringify(body)}: ${r.json.error.param}`);
      }
      const list = await gw.request("GET", "/v1/budgets", { token: owner.session_token });
      assert.equal(list.json.data.length, 1, "nothing created by the refused bodies");

      const patched = await gw.request("PATCH", `/v1/budgets/${b.id}`, { token: owner.api_key, body: { amount_usd: 7.5, thresholds: [90, 25, 25], action: "alert" } });
      assert.equal(patched.status, 200, JSON.stringify(patched.json));
      assert.deepEqual({ a: patched.json.amount_usd, t: patched.json.thresholds, ac: patched.json.action }, { a: 7.5, t: [25, 90], ac: "alert" });

      // Roles: a viewer and a member read; an admin writes; a member's key cannot write.
      const team = await gw.request("POST", "/v1/orgs", { token: owner.session_token, body: { name: "Finance" } });
      const orgId = team.json.id as string;
      const viewer = await join(orgId, owner.session_token, "viewer");
      const member = await join(orgId, owner.session_token, "member");
      const admin = await join(orgId, owner.session_token, "admin");
      const tb = await budget(admin.session_token, { scope: { type: "org", id: orgId }, amount_usd: 1, period: "day" }, orgId);
      for (const u of [viewer, member]) {
        assert.equal((await gw.request("GET", "/v1/budgets", as(u.session_token, orgId))).json.data.length, 1);
        assert.equal((await gw.request("GET", `/v1/budgets/${tb.id}`, as(u.session_token, orgId))).status, 200);
        const w = await gw.request("POST", "/v1/budgets", { ...as(u.session_token, orgId), body: { scope: { type: "org", id: orgId }, amount_usd: 1, period: "day" } });
        assert.equal(w.status, 403);
        assert.equal(w.json.error.code, "forbidden_role");
        assert.equal((await gw.request("DELETE", `/v1/budgets/${tb.id}`, as(u.session_token, orgId))).status, 403);
      }
      const memberKey = await keyOf(member.session_token, orgId);
      assert.equal((await gw.request("PATCH", `/v1/budgets/${tb.id}`, { token: memberKey.api_key, body: { amount_usd: 2 } })).status, 403);
      // Another organization's budget is not found.
      const other = await gw.request("GET", `/v1/budgets/${tb.id}`, { token: owner.session_token });
      assert.equal(other.status, 404);
      assert.equal(other.json.error.code, "budget_not_found");

      const del = await gw.request("DELETE", `/v1/budgets/${b.id}`, { token: owner.session_token });
      assert.deepEqual(del.json, { id: b.id, object: "budget", deleted: true });
      assert.equal((await gw.request("GET", `/v1/budgets/${b.id}`, { token: owner.session_token })).status, 404);
      assert.equal((await gw.request("DELETE", `/v1/budgets/${b.id}`, { token: owner.session_token })).status, 404);
      const row = await db().selectFrom("accounts").select("has_budgets").where("id", "=", owner.org_id).executeTakeFirstOrThrow();
      assert.equal(Number(row.has_budgets), 0, "an organization without budgets stops looking for them");

      // The operator's view and creation of another organization's budgets.
      const opList = await gw.request("GET", `/v1/admin/orgs/${orgId}/budgets`, { token: ADMIN_TOKEN });
      assert.deepEqual(opList.json.data.map((x: { id: string }) => x.id), [tb.id]);
      const opMade = await gw.request("POST", `/v1/admin/orgs/${orgId}/budgets`, { token: ADMIN_TOKEN, body: { scope: { type: "member", id: member.user_id }, amount_usd: 3, period: "week" } });
      assert.equal(opMade.status, 201, JSON.stringify(opMade.json));
      assert.equal((await gw.request("GET", `/v1/admin/orgs/org_nope/budgets`, { token: ADMIN_TOKEN })).status, 404);
    });

    test("a day budget in Kiritimati (UTC+14) opens a new window at Kiritimati's midnight, not UTC's", async () => {
      // Its own gateway with the ledger on the event loop (not SQLite's writer thread), so that the clock
      // the test sets is the clock of every hold.
      const main = gw;
      gw = await startGateway(backend.name, { SQLITE_LEDGER_THREAD: "off" });
      try {
        await kiritimati();
      } finally {
        await gw.close();
        gw = main;
      }
    });
    async function kiritimati() {
      const u = await account();
      const p = await price(u.api_key);
      // The fake clock: one minute before the midnight after next in Kiritimati (the call above is in
      // today's window there, not in the test's). Kiritimati's midnight is 10:00 UTC.
      const tz = "Pacific/Kiritimati";
      const tomorrow = budgetWindow("day", tz, Date.now()).end!;
      const midnight = budgetWindow("day", tz, tomorrow).end!;
      const justBefore = midnight - 60_000;
      const day = (ms: number) => new Date(ms + 14 * 3_600_000).toISOString().slice(0, 10);
      assert.equal(new Date(midnight).toISOString().slice(11), "10:00:00.000Z");
      mock.timers.enable({ apis: ["Date"], now: justBefore });
      try {
        const b = await budget(u.session_token, { scope: { type: "org", id: u.org_id }, amount_usd: usd(p + p / 2), period: "day", timezone: tz });
        assert.equal(b.window_start, `${day(justBefore)}T00:00:00.000+14:00`);
        assert.equal(b.window_end, `${day(midnight)}T00:00:00.000+14:00`);
        assert.equal(b.spent_usd, 0, "the call made before is in another window");
        assert.equal((await gw.request("POST", "/v1/audio/speech", { token: u.api_key, body: SPEECH })).status, 200);
        const refused = await gw.request("POST", "/v1/audio/speech", { token: u.api_key, body: SPEECH });
        assert.equal(refused.status, 402);
        assert.equal(refused.json.error.code, "budget_exceeded");
        assert.equal(refused.json.error.param, b.id);
        assert.equal((await getBudget(u.api_key, b.id)).spent_usd, usd(p));

        mock.timers.tick(2 * 60_000); // 00:01 of the next day in Kiritimati; 10:01 of the same day in UTC
        assert.equal(new Date(Date.now()).toISOString().slice(0, 10), new Date(justBefore).toISOString().slice(0, 10), "the same UTC day");
        const next = await getBudget(u.api_key, b.id);
        assert.equal(next.window_start, `${day(midnight)}T00:00:00.000+14:00`);
        assert.equal(next.spent_usd, 0);
        const ok = await gw.request("POST", "/v1/audio/speech", { token: u.api_key, body: SPEECH });
        assert.equal(ok.status, 200, JSON.stringify(ok.json));
        assert.equal(ok.headers.get("x-svc-budget-remaining-usd"), String(usd(p / 2)));
        assert.equal((await getBudget(u.api_key, b.id)).spent_usd, usd(p));
        assert.equal((await gw.request("POST", "/v1/audio/speech", { token: u.api_key, body: SPEECH })).status, 402);
      } finally {
        mock.timers.reset();
      }
      await assertInvariants(u.org_id);
    }

    test("50 parallel calls against an organization budget that covers 3: exactly 3 succeed, the rest 402 budget_exceeded, nothing passes it", async () => {
      const u = await account();
      const p = await price(u.api_key);
      const b = await budget(u.session_token, { scope: { type: "org", id: u.org_id }, amount_usd: usd(3 * p + p / 2), period: "total" });
      assert.equal(b.spent_usd, usd(p), "the call made before counts in a total budget");
      const k = await keyOf(u.session_token);
      const answers = await Promise.all(Array.from({ length: 50 }, () => gw.request("POST", "/v1/audio/speech", { token: k.api_key, body: SPEECH })));
      const ok = answers.filter((a) => a.status === 200);
      assert.equal(ok.length, 2, "3 calls fit: one was made before");
      for (const a of answers.filter((x) => x.status !== 200)) {
        assert.equal(a.status, 402);
        assert.equal(a.json.error.code, "budget_exceeded");
        assert.equal(a.json.error.type, "billing_error");
        assert.equal(a.json.error.param, b.id);
      }
      const after = await getBudget(u.api_key, b.id);
      assert.equal(after.spent_usd, usd(3 * p));
      assert.ok(after.spent_usd <= Number(b.amount_usd));
      const charged = await db().selectFrom("usage_records").select("id").where("account_id", "=", u.org_id).where("status", "=", "succeeded").execute();
      assert.equal(charged.length, 3, "only three calls were charged");
      await assertInvariants(u.org_id);
    });

    test("a member's budget blocks that member only; key budgets and the member's keys; the remaining header", async () => {
      const owner = await account();
      const team = await gw.request("POST", "/v1/orgs", { token: owner.session_token, body: { name: "Two" } });
      const orgId = team.json.id as string;
      const dep = await gw.request("POST", `/v1/admin/orgs/${orgId}/deposits`, { token: ADMIN_TOKEN, body: { amount_usd: 10 } });
      assert.equal(dep.status, 200);
      await gw.request("PUT", `/v1/admin/orgs/${orgId}/limits`, { token: ADMIN_TOKEN, body: { rpm: 10_000, per_model_rpm: 10_000, audio_concurrent_per_provider: { alpha: 100 } } });
      const alice = await join(orgId, owner.session_token, "member");
      const bob = await join(orgId, owner.session_token, "member");
      const aliceKey = await keyOf(alice.session_token, orgId);
      const aliceKey2 = await keyOf(alice.session_token, orgId);
      const bobKey = await keyOf(bob.session_token, orgId);
      const p = await price(bobKey.api_key);
      assert.equal((await gw.request("POST", "/v1/audio/speech", { token: bobKey.api_key, body: SPEECH })).headers.get("x-svc-budget-remaining-usd"), null, "no budget, no header");

      const mb = await budget(owner.session_token, { scope: { type: "member", id: alice.user_id }, amount_usd: usd(p), period: "week", timezone: "America/Los_Angeles" }, orgId);
      const first = await gw.request("POST", "/v1/audio/speech", { token: aliceKey.api_key, body: SPEECH });
      assert.equal(first.status, 200);
      assert.equal(first.headers.get("x-svc-budget-remaining-usd"), "0");
      const second = await gw.request("POST", "/v1/audio/speech", { token: aliceKey2.api_key, body: SPEECH });
      assert.equal(second.status, 402, "the member's other key is blocked too");
      assert.equal(second.json.error.param, mb.id);
      for (let i = 0; i < 3; i++) assert.equal((await gw.request("POST", "/v1/audio/speech", { token: bobKey.api_key, body: SPEECH })).status, 200, "another member is not");

      // A key budget blocks that key only; Bob's answers name what is left of it.
      const kb = await budget(owner.session_token, { scope: { type: "key", id: bobKey.key_id }, amount_usd: usd(p * 10), period: "day" }, orgId);
      const bobCall = await gw.request("POST", "/v1/audio/speech", { token: bobKey.api_key, body: SPEECH });
      // Five calls of Bob's key were made today before the budget: they count in it, with this sixth one.
      assert.equal(bobCall.headers.get("x-svc-budget-remaining-usd"), String(usd(4 * p)));
      assert.equal((await getBudget(bobKey.api_key, kb.id)).spent_usd, usd(6 * p));
      await assertInvariants(orgId);
    });

    test("a key's spend limit is a key budget: listed, changed and removed through /v1/budgets, both views agree", async () => {
      const u = await account();
      const k = await keyOf(u.session_token, undefined, { spend_limit_usd: 2, spend_limit_period: "day" });
      const p = await price(k.api_key);
      const list = await gw.request("GET", "/v1/budgets", { token: u.session_token });
      const kb = list.json.data.find((b: { scope: { id: string } }) => b.scope.id === k.key_id);
      assert.ok(kb, "listed");
      assert.deepEqual(
        { id: kb.id, a: kb.amount_usd, p: kb.period, tz: kb.timezone, ac: kb.action, s: kb.spent_usd, src: kb.source },
        { id: `bud_${k.key_id}`, a: 2, p: "day", tz: "UTC", ac: "block", s: usd(p), src: "key_spend_limit" },
      );
      const second = await gw.request("POST", "/v1/audio/speech", { token: k.api_key, body: SPEECH });
      assert.equal(second.headers.get("x-svc-budget-remaining-usd"), String(usd(micros(2) - 2 * p)), "the key's limit is a block budget of the header");
      const ch = await gw.request("PATCH", `/v1/budgets/${kb.id}`, { token: u.session_token, body: { amount_usd: usd(2 * p), period: "week" } });
      assert.equal(ch.status, 200, JSON.stringify(ch.json));
      const keys = await gw.request("GET", "/v1/auth/keys", { token: u.session_token });
      const row = keys.json.data.find((x: { key_id: string }) => x.key_id === k.key_id);
      assert.deepEqual({ l: row.spend_limit_usd, p: row.spend_limit_period, s: row.spent_usd }, { l: usd(2 * p), p: "week", s: usd(2 * p) });
      const refused = await gw.request("POST", "/v1/audio/speech", { token: k.api_key, body: SPEECH });
      assert.equal(refused.status, 402);
      assert.equal(refused.json.error.code, "key_spend_limit");
      const tz = await gw.request("PATCH", `/v1/budgets/${kb.id}`, { token: u.session_token, body: { timezone: "Europe/Paris" } });
      assert.equal(tz.status, 400);
      assert.equal((await gw.request("DELETE", `/v1/budgets/${kb.id}`, { token: u.session_token })).status, 200);
      const after = (await gw.request("GET", "/v1/auth/keys", { token: u.session_token })).json.data.find((x: { key_id: string }) => x.key_id === k.key_id);
      assert.equal(after.spend_limit_usd, null);
      assert.equal((await gw.request("POST", "/v1/audio/speech", { token: k.api_key, body: SPEECH })).status, 200);
    });

    test("a job's hold counts at submit and gives back what it did not use; a failed job gives it all back", async () => {
      const u = await account();
      const b = await budget(u.session_token, { scope: { type: "org", id: u.org_id }, amount_usd: 5, period: "month" });
      const sub = await gw.request("POST", "/v1/images/generations", { token: u.api_key, body: { model: "imgA-v4", prompt: "a fox in snow" } });
      assert.equal(sub.status, 202, JSON.stringify(sub.json));
      const done = await gw.waitForJob(u.api_key, sub.json.id);
      assert.equal(done.json.status, "succeeded");
      assert.equal((await getBudget(u.api_key, b.id)).spent_usd, done.json.cost_usd);
      const fail = await gw.request("POST", "/v1/images/generations", { token: u.api_key, body: { model: "imgA-v4", prompt: "a fox" }, headers: { "x-svc-simulate": "fail" } });
      assert.equal(fail.status, 202, JSON.stringify(fail.json));
      const f = await gw.waitForJob(u.api_key, fail.json.id);
      assert.equal(f.json.status, "failed");
      assert.equal((await getBudget(u.api_key, b.id)).spent_usd, done.json.cost_usd, "a failed job costs the budget nothing");
      // A synchronous call whose upstream fails after the hold gives the budget its hold back too.
      const failedCall = await gw.request("POST", "/v1/audio/speech", { token: u.api_key, body: SPEECH, headers: { "x-svc-simulate": "fail" } });
      assert.ok(failedCall.status >= 500 && failedCall.status !== 500, String(failedCall.status));
      assert.equal((await getBudget(u.api_key, b.id)).spent_usd, done.json.cost_usd, "a failed call costs the budget nothing");
      // A budget smaller than a job's hold refuses the submit with nothing written.
      await gw.request("PATCH", `/v1/budgets/${b.id}`, { token: u.session_token, body: { amount_usd: done.json.cost_usd } });
      const jobsBefore = await db().selectFrom("jobs").select("id").where("account_id", "=", u.org_id).execute();
      const no = await gw.request("POST", "/v1/images/generations", { token: u.api_key, body: { model: "imgA-v4", prompt: "another fox" } });
      assert.equal(no.status, 402);
      assert.equal(no.json.error.code, "budget_exceeded");
      const jobsAfter = await db().selectFrom("jobs").select("id").where("account_id", "=", u.org_id).execute();
      assert.equal(jobsAfter.length, jobsBefore.length, "no job written");
      await assertInvariants(u.org_id);
    });

    test("thresholds: one signed budget.threshold event per threshold and window, alert budgets never block", async () => {
      const u = await account();
      const ep = await gw.request("POST", "/v1/webhooks", { token: u.api_key, body: { url: `${rx.url}/budget-${backend.name}`, events: ["budget.threshold"] } });
      assert.equal(ep.status, 201, JSON.stringify(ep.json));
      const p = await price(u.api_key);
      const b = await budget(u.session_token, { scope: { type: "org", id: u.org_id }, amount_usd: usd(4 * p), period: "total", action: "alert", thresholds: [50, 100] });
      // 1 of 4 spent before: 25 %. Then 6 more calls in parallel: 175 %, never blocked.
      const answers = await Promise.all(Array.from({ length: 6 }, () => gw.request("POST", "/v1/audio/speech", { token: u.api_key, body: SPEECH })));
      assert.deepEqual(answers.map((a) => a.status), [200, 200, 200, 200, 200, 200]);
      await rx.waitFor(() => rx.on(`/budget-${backend.name}`).length >= 2, "two threshold events");
      await gw.services.budgetAlerts.sweep();
      // Past the sweep: no more events may come.
      await new Promise((r) => setTimeout(r, 2500));
      const got = rx.on(`/budget-${backend.name}`).map((x) => verify(String(ep.json.secret), x));
      assert.equal(got.length, 2, JSON.stringify(got.map((g) => g.data)));
      assert.deepEqual(got.map((g) => g.type), ["budget.threshold", "budget.threshold"]);
      assert.deepEqual(got.map((g) => g.data.percent).sort(), [100, 50]);
      for (const g of got) {
        assert.equal(g.data.budget_id, b.id);
        assert.deepEqual(g.data.scope, { type: "org", id: u.org_id });
        assert.equal(g.data.amount_usd, usd(4 * p));
        assert.equal(g.data.window_start, "1970-01-01T00:00:00.000Z");
      }
    });

    test("every budget change writes one audit entry with its request id; a refused change writes none", async () => {
      const u = await account();
      const count = async () => (await db().selectFrom("audit_log").select("id").where("org_id", "=", u.org_id).where("action", "like", "budget.%").execute()).length;
      const made = await gw.request("POST", "/v1/budgets", { token: u.session_token, body: { scope: { type: "org", id: u.org_id }, amount_usd: 3, period: "day", timezone: "Europe/Berlin" } });
      const changed = await gw.request("PATCH", `/v1/budgets/${made.json.id}`, { token: u.api_key, body: { amount_usd: 4 } });
      const refused = await gw.request("PATCH", `/v1/budgets/${made.json.id}`, { token: u.api_key, body: { timezone: "Nowhere/Land" } });
      assert.equal(refused.status, 400);
      const deleted = await gw.request("DELETE", `/v1/budgets/${made.json.id}`, { token: u.session_token });
      assert.equal(await count(), 3);
      const rows = await db().selectFrom("audit_log").selectAll().where("org_id", "=", u.org_id).where("action", "like", "budget.%").orderBy("id").execute();
      const byAction = new Map(rows.map((r) => [r.action, r]));
      assert.equal(byAction.get("budget.created")?.request_id, made.headers.get("x-svc-request-id"));
      assert.equal(byAction.get("budget.updated")?.request_id, changed.headers.get("x-svc-request-id"));
      assert.equal(byAction.get("budget.deleted")?.request_id, deleted.headers.get("x-svc-request-id"));
      assert.deepEqual(JSON.parse(byAction.get("budget.updated")!.changes_json!), { amount_usd: [3, 4] });
      assert.equal(byAction.get("budget.updated")?.actor_type, "key");
      for (const r of rows) assert.ok(!JSON.stringify(r).includes(u.api_key) && !JSON.stringify(r).includes(u.session_token), "no secret");
    });
  });
}
