/**
 * `gateway budgets ...` (D44) end to end: `node packages/cli/src/main.ts` as a child process against a real
 * gateway on loopback (SQLite and PostgreSQL). An owner sets a day budget in Asia/Tokyo with the CLI; a
 * member spends it with `gateway speak` until the gateway refuses (402 `budget_exceeded`, exit 1); the
 * list shows scope, period and zone, action, spend, remaining and the window in Tokyo's calendar, as the
 * API says; the member may read but not change budgets (403 `forbidden_role`); the owner raises it, makes
 * a member budget that blocks that member only, sees a key's spend limit as a key budget, and deletes.
 * Usage mistakes exit 2 before any call. Also the window text of a budget (format.ts) in its own zone.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { budgetScopeText, budgetWindow, wallTime } from "../../packages/cli/src/format.ts";
import { DEMO_ALPHA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { runCli as cli } from "../helpers/cli-run.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../helpers/gateway.ts";

/** "Hello." in alpha-multilingual-v2: 6 characters at 0.405 USD per 1000, 0.00243 USD a call. */
const SPEECH_USD = 0.00243;

/** The value of `key` in `key  value` lines. */
function field(text: string, key: string): string {
  const m = new RegExp(`^${key}\\s+(.+)$`, "m").exec(text);
  assert.ok(m, `no '${key}' in:\n${text}`);
  return m[1];
}

/** Today's date (`YYYY-MM-DD`) in `timeZone`, and tomorrow's. */
function localDays(timeZone: string): [string, string] {
  const day = (t: number) => new Intl.DateTimeFormat("en-CA", { timeZone, year: "numeric", month: "2-digit", day: "2-digit" }).format(new Date(t));
  const today = day(Date.now());
  const [y, m, d] = today.split("-").map(Number);
  return [today, new Date(Date.UTC(y, m - 1, d + 1)).toISOString().slice(0, 10)];
}

describe("budget texts", () => {
  test("a window reads in the budget's own zone; a total budget has no end; scopes as --scope writes them", () => {
    assert.equal(wallTime("2026-11-29T15:00:00Z", "Asia/Tokyo"), "2026-11-30 00:00");
    assert.equal(wallTime("2026-03-29T01:00:00Z", "Europe/Paris"), "2026-03-29 03:00", "after the spring change, UTC+2");
    assert.equal(budgetWindow({ window_start: "2026-11-29T15:00:00Z", window_end: "2026-11-30T15:00:00Z", timezone: "Asia/Tokyo" }), "2026-11-30 00:00 -> 2026-12-01 00:00 Asia/Tokyo");
    assert.equal(budgetWindow({ window_start: "2026-11-01T09:30:00Z", window_end: null, timezone: "UTC" }), "since 2026-11-01 09:30 UTC");
    assert.deepEqual([budgetScopeText({ type: "org", id: "org_1" }), budgetScopeText({ type: "key", id: "key_1" }), budgetScopeText({ type: "member", id: "usr_1" })], ["org", "key:key_1", "member:usr_1"]);
  });
});

for (const backend of BACKENDS) {
  describe(`gateway budgets against a gateway on ${backend.name}`, { skip: backend.skip }, () => {
    let gw: TestGateway;
    let dir: string;

    before(async () => {
      gw = await startGateway(backend.name);
      dir = mkdtempSync(join(tmpdir(), "gw-cli-budgets-"));
    });
    after(async () => {
      await gw?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    test("an owner sets a day budget in Asia/Tokyo, a member spends it until 402 budget_exceeded, the list shows it; members read only", async () => {
      const owner = await gw.register();
      const member = await gw.register();
      const asOwner = { url: gw.url, key: owner.session_token, cwd: dir };
      const created = await cli(["orgs", "create", "Budget Team"], asOwner);
      assert.equal(created.code, 0, created.stderr);
      const org = field(created.stdout, "id");
      const invited = await cli(["orgs", "invite", member.email, "--role", "member", "--org", org], asOwner);
      assert.equal((await cli(["invites", "accept", field(invited.stdout, "token")], { url: gw.url, key: member.session_token, cwd: dir })).code, 0);
      assert.equal((await gw.request("POST", `/v1/admin/orgs/${org}/deposits`, { token: ADMIN_TOKEN, body: { amount_usd: 20 } })).status, 200);
      const memberKey = await gw.request("POST", "/v1/auth/keys", { token: member.session_token, headers: { "x-svc-org": org }, body: { name: "member" } });
      assert.equal(memberKey.status, 201);
      const ownerKey = await gw.request("POST", "/v1/auth/keys", { token: owner.session_token, headers: { "x-svc-org": org }, body: { name: "owner" } });
      const asMember = { url: gw.url, key: memberKey.json.api_key as string, cwd: dir };
      const asMemberSession = { url: gw.url, key: member.session_token, cwd: dir };

      // The owner sets 0.01 USD a day in Tokyo's calendar (the scope defaults to the organization of --org).
      const made = await cli(["budgets", "create", "--amount", "0.01", "--period", "day", "--timezone", "Asia/Tokyo", "--thresholds", "50,100", "--org", org], asOwner);
      assert.equal(made.code, 0, made.stderr);
      const id = field(made.stdout, "budget_id");
      assert.match(id, /^bud_/);
      const [today, tomorrow] = localDays("Asia/Tokyo");
      assert.deepEqual(
        ["scope", "amount", "timezone", "action", "thresholds", "spent", "remaining", "window"].map((k) => field(made.stdout, k)),
        ["org", "0.01 USD per day", "Asia/Tokyo", "block", "50%, 100%", "0 USD", "0.01 USD", `${today} 00:00 -> ${tomorrow} 00:00 Asia/Tokyo`],
      );
      const api = await gw.request("GET", `/v1/budgets/${id}`, { token: owner.session_token, headers: { "x-svc-org": org } });
      assert.deepEqual([api.json.scope, api.json.amount_usd, api.json.period, api.json.timezone, api.json.thresholds], [{ type: "org", id: org }, 0.01, "day", "Asia/Tokyo", [50, 100]]);

      // The member spends it with the CLI: four calls fit (0.00972 USD), the fifth would pass it.
      for (let i = 0; i < 4; i++) {
        const run = await cli(["speak", "Hello.", "--voice", DEMO_ALPHA_VOICE_ID, "-o", `b${i}.mp3`], asMember);
        assert.equal(run.code, 0, run.stderr);
      }
      const refused = await cli(["speak", "Hello.", "--voice", DEMO_ALPHA_VOICE_ID, "-o", "b4.mp3"], asMember);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /^error: budget_exceeded: .+ \(HTTP 402, request req_\w+\)$/m);

      // Everyone reads the budgets: the list's row, and the same in JSON as the API answers it.
      const list = await cli(["budgets", "--wide"], { ...asMemberSession, env: { GATEWAY_ORG: org } });
      assert.equal(list.code, 0, list.stderr);
      assert.match(list.stdout, /^BUDGET_ID\s+SCOPE\s+PERIOD\s+ACTION\s+SPENT\s+REMAINING\s+WINDOW\s+THRESHOLDS$/m);
      const spent = (4 * SPEECH_USD).toFixed(5);
      const row = new RegExp(`^${id}\\s+org\\s+day Asia/Tokyo\\s+block\\s+${spent} of 0\\.01 USD\\s+0\\.00028 USD\\s+${today} 00:00 -> ${tomorrow} 00:00 Asia/Tokyo\\s+50%,100%$`, "m");
      assert.match(list.stdout, row);
      const listed = await cli(["budgets", "--json"], asMember);
      assert.deepEqual(JSON.parse(listed.stdout), (await gw.request("GET", "/v1/budgets", { token: memberKey.json.api_key })).json);
      const shown = await cli(["budgets", "show", id], asMember);
      assert.deepEqual([field(shown.stdout, "spent"), field(shown.stdout, "remaining")], [`${spent} USD`, "0.00028 USD"]);

      // A member may not change budgets.
      const denied = await cli(["budgets", "update", id, "--amount", "5"], asMember);
      assert.equal(denied.code, 1);
      assert.match(denied.stderr, /^error: forbidden_role: .+ \(HTTP 403/m);

      // The owner raises it and narrows the alerts: the member's next call passes.
      const raised = await cli(["budgets", "update", id, "--amount", "1", "--thresholds", "80", "--org", org], asOwner);
      assert.equal(raised.code, 0, raised.stderr);
      assert.deepEqual([field(raised.stdout, "amount"), field(raised.stdout, "thresholds"), field(raised.stdout, "spent")], ["1 USD per day", "80%", `${spent} USD`]);
      assert.equal((await cli(["speak", "Hello.", "--voice", DEMO_ALPHA_VOICE_ID, "-o", "b5.mp3"], asMember)).code, 0);

      // A member budget blocks that member only; alerts only warn.
      const mine = await cli(["budgets", "create", "--scope", `member:${member.user_id}`, "--amount", "0.001", "--period", "month", "--org", org], asOwner);
      assert.equal(mine.code, 0, mine.stderr);
      assert.equal(field(mine.stdout, "scope"), `member:${member.user_id}`);
      assert.equal((await cli(["speak", "Hello.", "--voice", DEMO_ALPHA_VOICE_ID, "-o", "b6.mp3"], asMember)).code, 1, "the member is over its own budget");
      assert.equal((await cli(["speak", "Hello.", "--voice", DEMO_ALPHA_VOICE_ID, "-o", "b7.mp3"], { ...asMember, key: ownerKey.json.api_key })).code, 0, "the owner is not");
      const alertOnly = await cli(["budgets", "create", "--scope", `key:${ownerKey.json.key_id}`, "--amount", "0.000001", "--period", "week", "--action", "alert", "--org", org], asOwner);
      assert.equal(alertOnly.code, 0, alertOnly.stderr);
      assert.equal((await cli(["speak", "Hello.", "--voice", DEMO_ALPHA_VOICE_ID, "-o", "b8.mp3"], { ...asMember, key: ownerKey.json.api_key })).code, 0, "an alert budget does not block");

      // A key's spend limit (D34) lists as a key budget.
      const limited = await gw.request("POST", "/v1/auth/keys", { token: owner.session_token, headers: { "x-svc-org": org }, body: { name: "capped", spend_limit_usd: 3, spend_limit_period: "week" } });
      assert.equal(limited.status, 201);
      const all = await cli(["budgets", "--wide", "--org", org], asOwner);
      assert.match(all.stdout, new RegExp(`\\s+key:${limited.json.key_id}\\s+week UTC\\s+block\\s+0 of 3 USD\\s`, "m"));

      // Delete: gone from the list; an unknown id is the API's 404.
      const deleted = await cli(["budgets", "delete", id, "--org", org], asOwner);
      assert.equal(deleted.code, 0, deleted.stderr);
      assert.equal(deleted.stdout, `deleted ${id}\n`);
      assert.ok(!(await cli(["budgets", "--org", org], asOwner)).stdout.includes(id));
      const unknown = await cli(["budgets", "show", id, "--org", org], asOwner);
      assert.equal(unknown.code, 1);
      assert.match(unknown.stderr, /^error: budget_not_found: /m);
    });

    test("usage mistakes exit 2 before any call", async () => {
      for (const args of [
        ["budgets", "create", "--amount", "5"],
        ["budgets", "create", "--amount", "5", "--period", "day", "--timezone", "Nowhere/Else"],
        ["budgets", "update", "bud_x"],
        ["budgets", "frobnicate"],
      ]) {
        const run = await cli(args, { url: "http://127.0.0.1:9", key: "sess_unused", cwd: dir });
        assert.equal(run.code, 2, `${args.join(" ")}: ${run.stderr}`);
        assert.match(run.stderr, /^error: /m);
      }
    });
  });
}
