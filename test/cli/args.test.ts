/**
 * Argument parsing of the `gateway` CLI (packages/cli/src/args.ts): each command line gives one
 * command with its options read and checked; mistakes are `UsageError`s naming what is wrong.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parseCommand, UsageError } from "../../packages/cli/src/args.ts";
import { helpText } from "../../packages/cli/src/help.ts";

describe("parseCommand", () => {
  test("speak: the text, --voice, and the optional model, format and output, long or short", () => {
    assert.deepEqual(parseCommand(["speak", "Hello there", "--voice", "v1", "--model", "alpha-v3", "--format", "pcm_16000", "-o", "hi.pcm"]), {
      name: "speak",
      json: false,
      text: "Hello there",
      voice: "v1",
      model: "alpha-v3",
      format: "pcm_16000",
      output: "hi.pcm",
      stream: false,
      simulate: null,
    });
    const short = parseCommand(["speak", "-v", "v1", "Hi", "-m", "beta-speech-hd", "-f", "mp3_22050_32", "--stream", "--json"]);
    assert.equal(short.name, "speak");
    assert.ok(short.name === "speak" && short.text === "Hi" && short.voice === "v1" && short.stream && short.json && short.output === null);
  });

  test("speak --stream without a text (or with -) reads standard input: text null; without --stream the text is required", () => {
    for (const argv of [["speak", "--stream", "--voice", "v1"], ["speak", "--stream", "-v", "v1", "-"]]) {
      const cmd = parseCommand(argv);
      assert.ok(cmd.name === "speak" && cmd.text === null && cmd.stream, argv.join(" "));
    }
    const withText = parseCommand(["speak", "Hi", "--stream", "-v", "v1"]);
    assert.ok(withText.name === "speak" && withText.text === "Hi" && withText.stream, "a text with --stream: the HTTP streamed answer");
    assert.throws(() => parseCommand(["speak", "--voice", "v1"]), /'speak' needs the text to speak \(or --stream to read standard input\)/);
    assert.throws(() => parseCommand(["speak", "--stream", "a", "b", "-v", "v1"]), UsageError);
    assert.match(helpText("speak"), /--stream --voice ID/);
  });

  test("a text that starts with a dash goes after --", () => {
    const cmd = parseCommand(["speak", "--voice", "v1", "--", "-5 degrees tonight"]);
    assert.ok(cmd.name === "speak" && cmd.text === "-5 degrees tonight");
    assert.throws(() => parseCommand(["speak", "--voice", "v1", "-5 degrees"]), UsageError);
  });

  test("image: --model required, -n a whole number, --size and --quality passed as given", () => {
    assert.deepEqual(parseCommand(["image", "a fox", "--model", "imgA-v4", "--size", "16:9", "-n", "2", "-o", "out.png"]), {
      name: "image",
      json: false,
      prompt: "a fox",
      model: "imgA-v4",
      size: "16:9",
      n: 2,
      quality: null,
      output: "out.png",
      simulate: null,
    });
    assert.throws(() => parseCommand(["image", "a fox"]), { name: "UsageError", message: "'image' needs --model" });
    assert.throws(() => parseCommand(["image", "a fox", "-m", "imgA-v4", "-n", "two"]), /-n must be a whole number of at least 1 \(got 'two'\)/);
    assert.throws(() => parseCommand(["image", "a fox", "-m", "imgA-v4", "-n", "0"]), /-n must be a whole number/);
    assert.throws(() => parseCommand(["image", "a fox", "-m", "imgA-v4", "-n", "1.5"]), /-n must be a whole number/);
  });

  test("video: --duration a whole number, --image-url, --simulate one of fail, slow, hang", () => {
    const cmd = parseCommand(["video", "waves", "--model", "vidA-2.5-pro", "--duration", "5", "--image-url", "https://example.com/a.png", "--simulate", "slow", "-o", "clip.mp4"]);
    assert.deepEqual(cmd, { name: "video", json: false, prompt: "waves", model: "vidA-2.5-pro", duration: 5, imageUrl: "https://example.com/a.png", output: "clip.mp4", simulate: "slow" });
    assert.throws(() => parseCommand(["video", "waves", "-m", "vidA-3-pro", "--simulate", "explode"]), /--simulate must be one of fail, slow, hang \(got 'explode'\)/);
  });

  test("a prompt is one argument: an unquoted second word is refused", () => {
    assert.throws(() => parseCommand(["image", "a", "fox", "-m", "imgA-v4"]), /'image' takes one argument: quote the prompt \(got 2\)/);
    assert.throws(() => parseCommand(["image", "-m", "imgA-v4"]), /'image' needs the prompt/);
  });

  test("jobs, job, cancel", () => {
    assert.deepEqual(parseCommand(["jobs", "--status", "pending", "--limit", "20"]), { name: "jobs", json: false, status: "pending", kind: null, model: null, limit: 20, after: null });
    assert.deepEqual(parseCommand(["job", "job_abc"]), { name: "job", json: false, id: "job_abc" });
    assert.deepEqual(parseCommand(["cancel", "job_abc", "--json"]), { name: "cancel", json: true, id: "job_abc" });
    assert.throws(() => parseCommand(["job"]), /'job' needs a job id/);
    assert.throws(() => parseCommand(["jobs", "extra"]), /'jobs' takes no arguments \(got 'extra'\)/);
    assert.throws(() => parseCommand(["jobs", "--limit", "-3"]), UsageError);
  });

  test("usage and requests", () => {
    assert.deepEqual(parseCommand(["usage", "--by", "day", "--from", "2026-01-01", "--to", "2026-01-31", "--tz", "Europe/Berlin", "--csv"]), {
      name: "usage",
      json: false,
      by: "day",
      from: "2026-01-01",
      to: "2026-01-31",
      tz: "Europe/Berlin",
      csv: true,
      focus: false,
    });
    assert.deepEqual(parseCommand(["usage"]), { name: "usage", json: false, by: null, from: null, to: null, tz: null, csv: false, focus: false });
    assert.equal((parseCommand(["usage", "--by", "member"]) as { by: string }).by, "member");
    assert.throws(() => parseCommand(["usage", "--by", "week"]), /--by must be one of day, model, key, member, user \(got 'week'\)/);
    assert.deepEqual(parseCommand(["usage", "--focus", "--from", "2026-01-01", "--to", "2026-01-31"]), {
      name: "usage",
      json: false,
      by: null,
      from: "2026-01-01",
      to: "2026-01-31",
      tz: null,
      csv: false,
      focus: true,
    });
    assert.throws(() => parseCommand(["usage", "--focus", "--by", "model"]), /--focus exports whole UTC days/);
    assert.deepEqual(parseCommand(["requests", "-l", "5"]), { name: "requests", json: false, limit: 5, after: null, model: null, status: null });
  });

  test("keys list (the default), create with --name and --mode test, delete ID", () => {
    assert.deepEqual(parseCommand(["keys"]), { name: "keys-list", json: false });
    assert.deepEqual(parseCommand(["keys", "list", "--json"]), { name: "keys-list", json: true });
    assert.deepEqual(parseCommand(["keys", "create", "--name", "ci", "--mode", "test"]), { name: "keys-create", json: false, keyName: "ci", mode: "test", controls: {} });
    assert.deepEqual(parseCommand(["keys", "create"]), { name: "keys-create", json: false, keyName: null, mode: null, controls: {} });
    assert.deepEqual(parseCommand(["keys", "delete", "key_1"]), { name: "keys-delete", json: false, id: "key_1" });
    assert.throws(() => parseCommand(["keys", "create", "--mode", "live"]), /--mode must be one of test/);
    assert.throws(() => parseCommand(["keys", "delete"]), /'keys delete' needs one key id/);
    assert.throws(() => parseCommand(["keys", "list", "--name", "x"]), /--name applies to 'keys create' and 'keys update' only/);
    assert.throws(() => parseCommand(["keys", "rotate"]), /unknown 'keys' action 'rotate'/);
  });

  test("keys create and update take the D34 controls; none, never and all clear them; alert --set or --off", () => {
    assert.deepEqual(parseCommand(["keys", "create", "--spend-limit", "5", "--period", "day", "--expires", "2030-01-01", "--models", "alpha-*, imgA-v4", "--rpm", "10"]), {
      name: "keys-create",
      json: false,
      keyName: null,
      mode: null,
      controls: { spend_limit_usd: 5, spend_limit_period: "day", expires_at: "2030-01-01", models: ["alpha-*", "imgA-v4"], rpm: 10 },
    });
    assert.deepEqual(parseCommand(["keys", "update", "key_1", "--spend-limit", "none", "--expires", "never", "--models", "all", "--rpm", "none"]), {
      name: "keys-update",
      json: false,
      id: "key_1",
      keyName: null,
      controls: { spend_limit_usd: null, expires_at: null, models: null, rpm: null },
    });
    assert.throws(() => parseCommand(["keys", "update", "key_1"]), /needs something to change/);
    assert.throws(() => parseCommand(["keys", "update", "key_1", "--mode", "test"]), /--mode cannot be changed/);
    assert.throws(() => parseCommand(["keys", "create", "--spend-limit", "1e3"]), /--spend-limit must be an amount of USD/);
    assert.throws(() => parseCommand(["keys", "create", "--period", "year"]), /--period must be one of day, week, month, total/);
    assert.throws(() => parseCommand(["keys", "delete", "key_1", "--rpm", "5"]), /apply to 'keys create' and 'keys update' only/);
    assert.deepEqual(parseCommand(["alert"]), { name: "alert", json: false, set: null, off: false });
    assert.deepEqual(parseCommand(["alert", "--set", "5"]), { name: "alert", json: false, set: 5, off: false });
    assert.deepEqual(parseCommand(["alert", "--off"]), { name: "alert", json: false, set: null, off: true });
    assert.throws(() => parseCommand(["alert", "--set", "5", "--off"]), /not both/);
  });

  test("budgets list (the default), show, create with a scope and the D44 fields, update, delete", () => {
    assert.deepEqual(parseCommand(["budgets"]), { name: "budgets-list", json: false });
    assert.deepEqual(parseCommand(["budgets", "list", "--wide"]), { name: "budgets-list", json: false, wide: true });
    assert.deepEqual(parseCommand(["budgets", "show", "bud_1", "--json"]), { name: "budgets-show", json: true, id: "bud_1" });
    assert.deepEqual(
      parseCommand(["budgets", "create", "--scope", "org", "--amount", "10", "--period", "day", "--timezone", "Asia/Tokyo", "--action", "block", "--thresholds", "100,50,80"]),
      {
        name: "budgets-create",
        json: false,
        scope: { type: "org" },
        fields: { amount_usd: 10, period: "day", timezone: "Asia/Tokyo", action: "block", thresholds: [50, 80, 100] },
      },
    );
    assert.deepEqual(parseCommand(["budgets", "create", "--amount", "2.5", "--period", "month"]), {
      name: "budgets-create",
      json: false,
      scope: { type: "org" },
      fields: { amount_usd: 2.5, period: "month" },
    });
    assert.deepEqual((parseCommand(["budgets", "create", "--scope", "key:key_abc", "--amount", "1", "--period", "total"]) as { scope: unknown }).scope, { type: "key", id: "key_abc" });
    assert.deepEqual((parseCommand(["budgets", "create", "--scope", "member:usr_1", "--amount", "1", "--period", "week", "--thresholds", "none"]) as { scope: unknown; fields: unknown }), {
      name: "budgets-create",
      json: false,
      scope: { type: "member", id: "usr_1" },
      fields: { amount_usd: 1, period: "week", thresholds: [] },
    });
    assert.deepEqual(parseCommand(["budgets", "update", "bud_1", "--amount", "20", "--action", "alert"]), { name: "budgets-update", json: false, id: "bud_1", fields: { amount_usd: 20, action: "alert" } });
    assert.deepEqual(parseCommand(["budgets", "delete", "bud_1"]), { name: "budgets-delete", json: false, id: "bud_1" });

    assert.throws(() => parseCommand(["budgets", "create", "--period", "day"]), /'budgets create' needs --amount USD/);
    assert.throws(() => parseCommand(["budgets", "create", "--amount", "5"]), /'budgets create' needs --period/);
    assert.throws(() => parseCommand(["budgets", "create", "--amount", "0", "--period", "day"]), /--amount must be more than 0/);
    assert.throws(() => parseCommand(["budgets", "create", "--amount", "5", "--period", "year"]), /--period must be one of day, week, month, total/);
    assert.throws(() => parseCommand(["budgets", "create", "--amount", "5", "--period", "day", "--timezone", "Mars/Olympus"]), /--timezone must be an IANA time zone/);
    assert.throws(() => parseCommand(["budgets", "create", "--amount", "5", "--period", "day", "--scope", "team:x"]), /--scope must be org, key:<key id> or member:<user id>/);
    assert.throws(() => parseCommand(["budgets", "create", "--amount", "5", "--period", "day", "--thresholds", "50,120"]), /--thresholds must be whole percentages from 1 to 100/);
    assert.throws(() => parseCommand(["budgets", "create", "--amount", "5", "--period", "day", "--action", "warn"]), /--action must be one of block, alert/);
    assert.throws(() => parseCommand(["budgets", "update", "bud_1"]), /'budgets update' needs something to change/);
    assert.throws(() => parseCommand(["budgets", "update", "bud_1", "--scope", "org"]), /--scope cannot be changed/);
    assert.throws(() => parseCommand(["budgets", "delete"]), /'budgets delete' needs one budget id/);
    assert.throws(() => parseCommand(["budgets", "list", "--amount", "3"]), /apply to 'budgets create' and 'budgets update' only/);
    assert.throws(() => parseCommand(["budgets", "pause", "bud_1"]), /unknown 'budgets' action 'pause'/);
  });

  test("balance and voices: the first 50 voices unless --limit N or --all", () => {
    assert.deepEqual(parseCommand(["balance"]), { name: "balance", json: false });
    assert.deepEqual(parseCommand(["voices", "-p", "beta"]), { name: "voices", json: false, provider: "beta", limit: 50, limitGiven: false });
    assert.deepEqual(parseCommand(["voices"]), { name: "voices", json: false, provider: null, limit: 50, limitGiven: false });
    assert.deepEqual(parseCommand(["voices", "-l", "5"]), { name: "voices", json: false, provider: null, limit: 5, limitGiven: true });
    assert.deepEqual(parseCommand(["voices", "--all", "--json"]), { name: "voices", json: true, provider: null, limit: null, limitGiven: true });
    assert.throws(() => parseCommand(["voices", "--all", "--limit", "5"]), /give --limit N or --all, not both/);
    assert.throws(() => parseCommand(["voices", "--limit", "0"]), /--limit must be a whole number of at least 1/);
    assert.throws(() => parseCommand(["voices", "--provider", "gamma"]), /--provider must be one of alpha, beta, all/);
  });

  test("--wide on the table commands (present only when given); a command without a table refuses it", () => {
    assert.deepEqual(parseCommand(["keys", "list", "--wide"]), { name: "keys-list", json: false, wide: true });
    assert.deepEqual(parseCommand(["requests", "--wide", "--org", "org_1"]), { name: "requests", json: false, limit: null, after: null, model: null, status: null, wide: true, org: "org_1" });
    for (const argv of [["jobs"], ["usage"], ["voices"], ["orgs", "members"]]) assert.equal(parseCommand([...argv, "--wide"]).wide, true, argv.join(" "));
    assert.equal(parseCommand(["jobs"]).wide, undefined);
    assert.throws(() => parseCommand(["balance", "--wide"]), UsageError);
  });

  test("orgs: list (the default), create NAME, show [ID], rename NAME, delete ID, members, invite EMAIL --role, role, remove, invites, revoke", () => {
    assert.deepEqual(parseCommand(["orgs"]), { name: "orgs-list", json: false });
    assert.deepEqual(parseCommand(["orgs", "list", "--json"]), { name: "orgs-list", json: true });
    assert.deepEqual(parseCommand(["orgs", "create", "Acme Studio"]), { name: "orgs-create", json: false, orgName: "Acme Studio" });
    assert.deepEqual(parseCommand(["orgs", "show"]), { name: "orgs-show", json: false, id: null });
    assert.deepEqual(parseCommand(["orgs", "show", "org_1"]), { name: "orgs-show", json: false, id: "org_1" });
    assert.deepEqual(parseCommand(["orgs", "rename", "Acme"]), { name: "orgs-rename", json: false, orgName: "Acme" });
    assert.deepEqual(parseCommand(["orgs", "delete", "org_1"]), { name: "orgs-delete", json: false, id: "org_1" });
    assert.deepEqual(parseCommand(["orgs", "members"]), { name: "orgs-members", json: false });
    assert.deepEqual(parseCommand(["orgs", "invite", "bob@example.com"]), { name: "orgs-invite", json: false, email: "bob@example.com", role: "member" });
    assert.deepEqual(parseCommand(["orgs", "invite", "bob@example.com", "-r", "viewer"]), { name: "orgs-invite", json: false, email: "bob@example.com", role: "viewer" });
    assert.deepEqual(parseCommand(["orgs", "role", "usr_1", "admin"]), { name: "orgs-role", json: false, userId: "usr_1", role: "admin" });
    assert.deepEqual(parseCommand(["orgs", "remove", "usr_1"]), { name: "orgs-remove", json: false, userId: "usr_1" });
    assert.deepEqual(parseCommand(["orgs", "invites"]), { name: "orgs-invites", json: false });
    assert.deepEqual(parseCommand(["orgs", "revoke", "inv_1"]), { name: "orgs-revoke", json: false, inviteId: "inv_1" });
    assert.deepEqual(parseCommand(["invites", "accept", "inv_tok"]), { name: "invites-accept", json: false, token: "inv_tok" });
    assert.deepEqual(parseCommand(["login", "a@example.com"]), { name: "login", json: false, email: "a@example.com" });

    assert.throws(() => parseCommand(["orgs", "create"]), /'orgs create' needs a name/);
    assert.throws(() => parseCommand(["orgs", "create", "Acme", "Studio"]), /quote a name with spaces \(got 2 arguments\)/);
    assert.throws(() => parseCommand(["orgs", "invite", "bob@example.com", "--role", "boss"]), /--role must be one of owner, admin, member, viewer \(got 'boss'\)/);
    assert.throws(() => parseCommand(["orgs", "role", "usr_1", "boss"]), /the role must be one of owner, admin, member, viewer/);
    assert.throws(() => parseCommand(["orgs", "role", "usr_1"]), /'orgs role' needs a user id and a role/);
    assert.throws(() => parseCommand(["orgs", "members", "--role", "admin"]), /--role applies to 'orgs invite' only/);
    assert.throws(() => parseCommand(["orgs", "list", "extra"]), /'orgs list' takes no arguments \(got 'extra'\)/);
    assert.throws(() => parseCommand(["orgs", "leave"]), /unknown 'orgs' action 'leave'/);
    assert.throws(() => parseCommand(["invites"]), /'invites' needs an action: invites accept TOKEN/);
    assert.throws(() => parseCommand(["invites", "accept"]), /'invites accept' needs one invite token/);
  });

  test("--org ORG_ID goes before or after the command, on every command; present only when given", () => {
    assert.deepEqual(parseCommand(["orgs", "members", "--org", "org_1"]), { name: "orgs-members", json: false, org: "org_1" });
    assert.deepEqual(parseCommand(["--org", "org_1", "orgs", "members"]), { name: "orgs-members", json: false, org: "org_1" });
    assert.deepEqual(parseCommand(["--org=org_1", "balance", "--json"]), { name: "balance", json: true, org: "org_1" });
    assert.deepEqual(parseCommand(["--org", "org_1", "keys", "list", "--org", "org_2"]), { name: "keys-list", json: false, org: "org_2" }, "the later one wins");
    assert.deepEqual(parseCommand(["jobs", "--org", "org_1", "--limit", "2"]), { name: "jobs", json: false, status: null, kind: null, model: null, limit: 2, after: null, org: "org_1" });
    assert.equal("org" in parseCommand(["balance"]), false);
    assert.deepEqual(parseCommand(["--org", "org_1", "--help"]), { name: "help", topic: null, json: false });
    assert.throws(() => parseCommand(["--org"]), /--org needs an organization id/);
    assert.throws(() => parseCommand(["balance", "--org", " "]), /--org needs an organization id/);
    assert.throws(() => parseCommand(["balance", "--org"]), (err: Error) => err instanceof UsageError && /--org/.test(err.message));
    assert.match(helpText("orgs"), /^Usage: gateway orgs \[list\]/);
    assert.match(helpText("invites"), /^Usage: gateway invites accept TOKEN/);
    assert.match(helpText(null), /--org ORG_ID/);
    assert.match(helpText(null), /GATEWAY_ORG/);
  });

  test("help: no arguments, --help, help TOPIC and COMMAND --help", () => {
    assert.deepEqual(parseCommand([]), { name: "help", topic: null, json: false });
    assert.deepEqual(parseCommand(["-h"]), { name: "help", topic: null, json: false });
    assert.deepEqual(parseCommand(["help", "image"]), { name: "help", topic: "image", json: false });
    assert.deepEqual(parseCommand(["image", "--help"]), { name: "help", topic: "image", json: false });
    assert.match(helpText("image"), /^Usage: gateway image "prompt" --model M/);
    assert.match(helpText(null), /^gateway: the media gateway/);
    assert.equal(helpText("nonsense"), helpText(null));
  });

  test("unknown commands and options, and options without their value, are usage errors", () => {
    assert.throws(() => parseCommand(["paint", "x"]), { name: "UsageError", message: "unknown command 'paint'" });
    assert.throws(() => parseCommand(["balance", "--verbose"]), (err: Error) => err instanceof UsageError && /--verbose/.test(err.message));
    assert.throws(() => parseCommand(["speak", "hi", "--voice"]), (err: Error) => err instanceof UsageError && /--voice/.test(err.message));
    assert.throws(() => parseCommand(["image", "a fox", "--model", "imgA-v4", "--duration", "5"]), (err: Error) => err instanceof UsageError && /--duration/.test(err.message));
  });
});
