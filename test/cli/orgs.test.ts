/**
 * The `gateway orgs ...` and `gateway invites accept` commands and the `--org` option (D41) end to end:
 * each test runs `node packages/cli/src/main.ts ...` as a child process against a real gateway on
 * loopback (SQLite and PostgreSQL) with a session token or an API key in `GATEWAY_API_KEY`, and checks
 * stdout, stderr and the exit status against what the gateway itself says. A refused action exits 1
 * with the API's code and message; a usage mistake exits 2.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { BACKENDS } from "../helpers/backends.ts";
import { runCli } from "../helpers/cli-run.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";



const cli = runCli;

/** The value of `key` in `key  value` lines. */
function field(text: string, key: string): string {
  const m = new RegExp(`^${key}\\s+(.+)$`, "m").exec(text);
  assert.ok(m, `no '${key}' in:\n${text}`);
  return m[1];
}

for (const backend of BACKENDS) {
  describe(`gateway orgs and --org against a gateway on ${backend.name}`, { skip: backend.skip }, () => {
    let gw: TestGateway;
    let dir: string;

    before(async () => {
      gw = await startGateway(backend.name);
      dir = mkdtempSync(join(tmpdir(), "gw-cli-orgs-"));
    });
    after(async () => {
      await gw?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    test("create, invite, accept as a second user, members, role, remove: every action for the organization of --org", async () => {
      const alice = await gw.register();
      const bob = await gw.register();
      const asAlice = { url: gw.url, key: alice.session_token, cwd: dir };
      const asBob = { url: gw.url, key: bob.session_token, cwd: dir };

      const created = await cli(["orgs", "create", "Acme Studio"], asAlice);
      assert.equal(created.code, 0, created.stderr);
      const org = field(created.stdout, "id");
      assert.match(org, /^org_\w+$/);
      assert.deepEqual([field(created.stdout, "name"), field(created.stdout, "role"), field(created.stdout, "balance")], ["Acme Studio", "owner", "0 USD"]);
      assert.ok(created.stderr.includes(`--org ${org}`), "says how to act for it");

      // list marks the organization the commands act for: the personal one, or the one of --org.
      const listed = await cli(["orgs", "list"], asAlice);
      assert.equal(listed.code, 0, listed.stderr);
      assert.match(listed.stdout, /^\s+ORG_ID\s+NAME\s+ROLE\s+BALANCE_USD\s+TIER\s+CREATED$/m);
      assert.match(listed.stdout, new RegExp(`^\\*\\s+${alice.org_id}\\s+${alice.email}\\s+owner\\s+0\\.5\\s`, "m"));
      assert.match(listed.stdout, new RegExp(`^\\s+${org}\\s+Acme Studio\\s+owner\\s+0\\s`, "m"));
      assert.match((await cli(["--org", org, "orgs", "list"], asAlice)).stdout, new RegExp(`^\\*\\s+${org}\\s`, "m"));

      const invited = await cli(["orgs", "invite", bob.email, "--role", "member", "--org", org], asAlice);
      assert.equal(invited.code, 0, invited.stderr);
      assert.deepEqual([field(invited.stdout, "org_id"), field(invited.stdout, "email"), field(invited.stdout, "role")], [org, bob.email, "member"]);
      const token = field(invited.stdout, "token");
      assert.match(token, /^inv_/);
      assert.match(invited.stderr, /shown only this once/);
      const pending = await cli(["orgs", "invites", "--org", org], asAlice);
      assert.match(pending.stdout, /^INVITE_ID\s+EMAIL\s+ROLE\s+STATUS\s+EXPIRES\s+CREATED$/m);
      assert.match(pending.stdout, new RegExp(`^${field(invited.stdout, "invite_id")}\\s+${bob.email}\\s+member\\s+pending\\s`, "m"));

      const accepted = await cli(["invites", "accept", token], asBob);
      assert.equal(accepted.code, 0, accepted.stderr);
      assert.equal(accepted.stdout, `joined ${org} as member (${bob.email})\n`);
      const again = await cli(["invites", "accept", token], asBob);
      assert.equal(again.code, 1);
      assert.match(again.stderr, /^error: invite_not_found: .+ \(HTTP 404, request req_\w+\)$/m);

      const members = await cli(["orgs", "members", "--org", org], asAlice);
      assert.equal(members.code, 0, members.stderr);
      assert.match(members.stdout, /^USER_ID\s+EMAIL\s+ROLE\s+JOINED$/m);
      assert.match(members.stdout, new RegExp(`^${alice.user_id}\\s+${alice.email}\\s+owner\\s`, "m"));
      assert.match(members.stdout, new RegExp(`^${bob.user_id}\\s+${bob.email}\\s+member\\s`, "m"));
      const asJson = await cli(["--org", org, "orgs", "members", "--json"], asBob);
      assert.deepEqual((JSON.parse(asJson.stdout) as { data: { user_id: string; role: string }[] }).data.map((m) => [m.user_id, m.role]), [[alice.user_id, "owner"], [bob.user_id, "member"]]);

      const role = await cli(["orgs", "role", bob.user_id, "viewer", "--org", org], asAlice);
      assert.equal(role.code, 0, role.stderr);
      assert.equal(role.stdout, `${bob.user_id} (${bob.email}) is now viewer in ${org}\n`);

      // bob acts for the organization with --org or GATEWAY_ORG; as a viewer he reads but may not invite.
      const balance = await cli(["--org", org, "balance"], asBob);
      assert.equal(balance.code, 0, balance.stderr);
      assert.deepEqual([field(balance.stdout, "balance"), field(balance.stdout, "org"), field(balance.stdout, "role")], ["0 USD", `${org} (Acme Studio)`, "viewer"]);
      const shown = await cli(["orgs", "show"], { ...asBob, env: { GATEWAY_ORG: org } });
      assert.deepEqual([field(shown.stdout, "id"), field(shown.stdout, "role")], [org, "viewer"]);
      assert.equal(field((await cli(["orgs", "show"], asBob)).stdout, "id"), bob.org_id, "without --org: the personal organization");
      const refused = await cli(["orgs", "invite", "carol@example.com", "--org", org], asBob);
      assert.equal(refused.code, 1);
      assert.equal(refused.stdout, "");
      assert.match(refused.stderr, /^error: forbidden_role: .+ \(HTTP 403, request req_\w+\)$/m);
      const noKey = await cli(["keys", "create", "--name", "mine"], { ...asBob, env: { GATEWAY_ORG: org } });
      assert.equal(noKey.code, 1);
      assert.match(noKey.stderr, /^error: forbidden_role: /m);
      const noRename = await cli(["orgs", "rename", "Bob's", "--org", org], asBob);
      assert.equal(noRename.code, 1);
      assert.match(noRename.stderr, /^error: forbidden_role: /m);

      const renamed = await cli(["orgs", "rename", "Acme", "--org", org], asAlice);
      assert.equal(field(renamed.stdout, "name"), "Acme");

      const removed = await cli(["orgs", "remove", bob.user_id, "--org", org], asAlice);
      assert.equal(removed.code, 0, removed.stderr);
      assert.equal(removed.stdout, `removed ${bob.user_id} from ${org}\n`);
      const gone = await cli(["orgs", "members", "--org", org], asBob);
      assert.equal(gone.code, 1);
      assert.match(gone.stderr, /^error: org_not_found: .+ \(HTTP 404/m);
      const lastOwner = await cli(["orgs", "remove", alice.user_id, "--org", org], asAlice);
      assert.equal(lastOwner.code, 1);
      assert.match(lastOwner.stderr, /^error: last_owner: .+ \(HTTP 409/m);

      // An invite revoked cannot be accepted.
      const carol = await gw.register();
      const second = await cli(["orgs", "invite", carol.email, "--org", org, "--json"], asAlice);
      const invite = JSON.parse(second.stdout) as { id: string; token: string };
      const revoked = await cli(["orgs", "revoke", invite.id, "--org", org], asAlice);
      assert.equal(revoked.stdout, `revoked ${invite.id}\n`);
      const late = await cli(["invites", "accept", invite.token], { url: gw.url, key: carol.session_token, cwd: dir });
      assert.equal(late.code, 1);
      assert.match(late.stderr, /^error: invite_not_found: /m);

      const deleted = await cli(["orgs", "delete", org], asAlice);
      assert.equal(deleted.code, 0, deleted.stderr);
      assert.equal(deleted.stdout, `deleted ${org}\n`);
    });

    test("--org with an API key: its own organization works, another answers org_not_found; a key made for an organization acts there", async () => {
      const alice = await gw.register();
      const other = await gw.register();
      const asKey = { url: gw.url, key: alice.api_key, cwd: dir };

      const own = await cli(["--org", alice.org_id, "balance", "--json"], asKey);
      assert.equal(own.code, 0, own.stderr);
      assert.equal((JSON.parse(own.stdout) as { org_id: string }).org_id, alice.org_id);
      for (const org of [other.org_id, "org_doesnotexist"]) {
        const foreign = await cli(["balance", "--org", org], asKey);
        assert.equal(foreign.code, 1);
        assert.equal(foreign.stdout, "");
        assert.match(foreign.stderr, /^error: org_not_found: .+ \(HTTP 404, request req_\w+\)$/m);
      }
      const viaEnv = await cli(["orgs", "members"], { ...asKey, env: { GATEWAY_ORG: other.org_id } });
      assert.equal(viaEnv.code, 1);
      assert.match(viaEnv.stderr, /^error: org_not_found: /m);
      assert.equal((await cli(["balance", "--org", other.org_id], { url: gw.url, key: alice.session_token, cwd: dir })).code, 1, "a session too, for an organization it is not in");

      // A key made by a session acting for an organization belongs to it.
      const made = await cli(["orgs", "create", "Keys Inc"], { url: gw.url, key: alice.session_token, cwd: dir });
      const org = field(made.stdout, "id");
      const key = await cli(["--org", org, "keys", "create", "--name", "ci"], { url: gw.url, key: alice.session_token, cwd: dir });
      assert.equal(key.code, 0, key.stderr);
      const apiKey = field(key.stdout, "api_key");
      const byKey = await cli(["orgs", "list"], { url: gw.url, key: apiKey, cwd: dir });
      assert.equal(byKey.code, 0, byKey.stderr);
      assert.match(byKey.stdout, new RegExp(`^\\*\\s+${org}\\s+Keys Inc\\s+admin\\s`, "m"), "the key sees its organization only, acting as admin");
      assert.ok(!byKey.stdout.includes(alice.org_id));

      // Invites are accepted with a session token, never a key.
      const bob = await gw.register();
      const inv = await cli(["orgs", "invite", bob.email, "--role", "viewer"], { url: gw.url, key: apiKey, cwd: dir });
      assert.equal(inv.code, 0, inv.stderr);
      const withKey = await cli(["invites", "accept", field(inv.stdout, "token")], { url: gw.url, key: bob.api_key, cwd: dir });
      assert.equal(withKey.code, 1);
      assert.match(withKey.stderr, /^error: forbidden_role: Accept an invite with a session token/m);
      assert.ok(!withKey.stderr.includes(bob.api_key), "the key is never printed");
    });

    test("login prints a session token for the password on stdin, which then acts for the user's organizations", async () => {
      const alice = await gw.register();
      const opts = { url: gw.url, key: null, cwd: dir };
      const run = await cli(["login", alice.email], { ...opts, input: "correct horse battery\n" });
      assert.equal(run.code, 0, run.stderr);
      assert.equal(field(run.stdout, "user_id"), alice.user_id);
      const session = field(run.stdout, "session_token");
      assert.match(session, /^sess_/);
      assert.match(run.stderr, /shown only this once: export GATEWAY_API_KEY=/);
      const made = await cli(["orgs", "create", "Login Co"], { url: gw.url, key: session, cwd: dir });
      assert.equal(made.code, 0, made.stderr);
      const listed = await cli(["orgs", "list", "--json"], { url: gw.url, key: session, cwd: dir });
      assert.deepEqual((JSON.parse(listed.stdout) as { data: { id: string }[] }).data.map((o) => o.id), [alice.org_id, field(made.stdout, "id")]);

      const wrong = await cli(["login", alice.email], { ...opts, input: "not the password" });
      assert.equal(wrong.code, 1);
      assert.match(wrong.stderr, /^error: auth_error: .+ \(HTTP 401/m);
      const none = await cli(["login", alice.email], opts);
      assert.equal(none.code, 2);
      assert.match(none.stderr, /^error: no password/m);
      assert.equal((await cli(["login"], opts)).code, 2);
    });

    test("a session token on a key-only command says so; usage mistakes exit 2 before any call", async () => {
      const alice = await gw.register();
      const opts = { url: gw.url, key: alice.session_token, cwd: dir };
      const image = await cli(["image", "a fox", "--model", "imgA-v4"], opts);
      assert.equal(image.code, 1);
      assert.match(image.stderr, /^error: auth_error: /m);
      assert.match(image.stderr, /generating needs an API key/);
      assert.ok(!image.stderr.includes(alice.session_token), "the session token is never printed");

      const badRole = await cli(["orgs", "role", alice.user_id, "boss"], opts);
      assert.equal(badRole.code, 2);
      assert.match(badRole.stderr, /^error: the role must be one of owner, admin, member, viewer \(got 'boss'\)$/m);
      assert.match(badRole.stderr, /^Usage: gateway orgs \[list\]/m);
      const noOrg = await cli(["balance", "--org"], opts);
      assert.equal(noOrg.code, 2);
    });
  });
}
