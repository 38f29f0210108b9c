/**
 * The command line of `gateway`, parsed with `node:util` `parseArgs` (strict: an unknown option or a
 * missing value is a usage error) into one {@link Command}. Parsing reads nothing else (no environment,
 * no network), so it is tested on its own.
 */
import { parseArgs, type ParseArgsConfig } from "node:util";

/** A usage mistake: printed with the usage text, exit status 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

/** Options every command accepts. */
export interface CommonOptions {
  /** Print the answer as JSON on stdout instead of a table or text. */
  json: boolean;
  /**
   * `--org ORG_ID` (before or after the command): the organization the command acts for (D41, sent as
   * `X-Svc-Org`); present only when given (else `GATEWAY_ORG`, else the credential's default one).
   */
  org?: string;
  /**
   * `--wide` (the commands that print a table): every column, uncut, whatever the terminal's width;
   * present only when given (issue 42).
   */
  wide?: true;
}

/** The roles of an organization's members (D41), highest first. */
export const ROLES = ["owner", "admin", "member", "viewer"] as const;
export type Role = (typeof ROLES)[number];

/** `X-Svc-Simulate` values the built-in simulator honours (D10), for trying failures out. */
export const SIMULATE_VALUES = ["fail", "slow", "hang"] as const;
export type Simulate = (typeof SIMULATE_VALUES)[number];

/** One parsed command line. */
export type Command = CommonOptions &
  (
    | { name: "help"; topic: string | null }
    | {
        name: "speak";
        /** The text; null with `--stream` and no text (or `-`): standard input, line by line, through the realtime socket (D42). */
        text: string | null;
        voice: string;
        model: string | null;
        format: string | null;
        output: string | null;
        stream: boolean;
        simulate: Simulate | null;
      }
    | { name: "image"; prompt: string; model: string; size: string | null; n: number | null; quality: string | null; output: string | null; simulate: Simulate | null }
    | { name: "video"; prompt: string; model: string; duration: number | null; imageUrl: string | null; output: string | null; simulate: Simulate | null }
    | { name: "jobs"; status: string | null; kind: string | null; model: string | null; limit: number | null; after: string | null }
    | { name: "job"; id: string }
    | { name: "cancel"; id: string }
    | {
        name: "usage";
        /** `member` and `user` group alike (`user` is the older name). */
        by: "day" | "model" | "key" | "member" | "user" | null;
        from: string | null;
        to: string | null;
        tz: string | null;
        csv: boolean;
        /** `--focus`: the FOCUS 1.2 export (GET /v1/usage/export?format=focus) as CSV, over UTC days. */
        focus: boolean;
      }
    | { name: "requests"; limit: number | null; after: string | null; model: string | null; status: string | null }
    | { name: "keys-list" }
    | { name: "keys-create"; keyName: string | null; mode: "test" | null; controls: KeyControlFlags }
    | { name: "keys-update"; id: string; keyName: string | null; controls: KeyControlFlags }
    | { name: "keys-delete"; id: string }
    | { name: "budgets-list" }
    | { name: "budgets-show"; id: string }
    | { name: "budgets-create"; scope: BudgetScopeFlag; fields: BudgetFlags & Required<Pick<BudgetFlags, "amount_usd" | "period">> }
    | { name: "budgets-update"; id: string; fields: BudgetFlags }
    | { name: "budgets-delete"; id: string }
    | { name: "balance" }
    | { name: "alert"; set: number | null; off: boolean }
    | {
        name: "voices";
        provider: "alpha" | "beta" | "all" | null;
        /** How many voices to show: `--limit N`, null for every one (`--all`); default {@link VOICES_LIMIT}. */
        limit: number | null;
        /** Whether `--limit` or `--all` was given (the JSON answer is then cut to it too; else it is whole). */
        limitGiven: boolean;
      }
    | { name: "orgs-list" }
    | { name: "orgs-create"; orgName: string }
    | { name: "orgs-show"; id: string | null }
    | { name: "orgs-rename"; orgName: string }
    | { name: "orgs-delete"; id: string }
    | { name: "orgs-members" }
    | { name: "orgs-invite"; email: string; role: Role }
    | { name: "orgs-role"; userId: string; role: Role }
    | { name: "orgs-remove"; userId: string }
    | { name: "orgs-invites" }
    | { name: "orgs-revoke"; inviteId: string }
    | { name: "invites-accept"; token: string }
    | { name: "login"; email: string }
  );

/**
 * `--scope` of `budgets create` (D44): `org` (the organization acted for: its id is looked up), `key:<key
 * id>` or `member:<user id>`.
 */
export type BudgetScopeFlag = { type: "org" } | { type: "key" | "member"; id: string };

/** The fields of `budgets create` / `budgets update` as the API body takes them; absent = not given. */
export interface BudgetFlags {
  amount_usd?: number;
  period?: "day" | "week" | "month" | "total";
  timezone?: string;
  action?: "block" | "alert";
  thresholds?: number[];
}

/** How many voices `gateway voices` shows without `--limit` or `--all` (the library holds thousands). */
export const VOICES_LIMIT = 50;

/** The names of the commands, in the order the usage text lists them. */
export const COMMANDS = ["speak", "image", "video", "jobs", "job", "cancel", "usage", "requests", "keys", "budgets", "balance", "alert", "voices", "orgs", "invites", "login", "help"] as const;

/**
 * The D34 controls given on `keys create` / `keys update`, as the API body takes them: absent = not given
 * (unchanged), null = cleared (`none`, `never`, `all`).
 */
export interface KeyControlFlags {
  spend_limit_usd?: number | null;
  spend_limit_period?: "day" | "week" | "month" | "total";
  expires_at?: string | null;
  models?: string[] | null;
  rpm?: number | null;
}

type Options = NonNullable<ParseArgsConfig["options"]>;

const COMMON: Options = {
  json: { type: "boolean", default: false },
  help: { type: "boolean", short: "h", default: false },
  org: { type: "string" },
};
const OUTPUT: Options = { output: { type: "string", short: "o" } };
/** `--wide`, taken by the commands that print a table. */
const WIDE: Options = { wide: { type: "boolean", default: false } };
const SIMULATE: Options = { simulate: { type: "string" } };

/** The options each command accepts (beyond `--json` and `--help`). */
const OPTIONS: Record<string, Options> = {
  speak: { voice: { type: "string", short: "v" }, model: { type: "string", short: "m" }, format: { type: "string", short: "f" }, stream: { type: "boolean", default: false }, ...OUTPUT, ...SIMULATE },
  image: { model: { type: "string", short: "m" }, size: { type: "string", short: "s" }, n: { type: "string", short: "n" }, quality: { type: "string", short: "q" }, ...OUTPUT, ...SIMULATE },
  video: { model: { type: "string", short: "m" }, duration: { type: "string", short: "d" }, "image-url": { type: "string" }, ...OUTPUT, ...SIMULATE },
  jobs: { status: { type: "string" }, kind: { type: "string" }, model: { type: "string", short: "m" }, limit: { type: "string", short: "l" }, after: { type: "string" }, ...WIDE },
  job: {},
  cancel: {},
  usage: { by: { type: "string" }, from: { type: "string" }, to: { type: "string" }, tz: { type: "string" }, csv: { type: "boolean", default: false }, focus: { type: "boolean", default: false }, ...WIDE },
  requests: { limit: { type: "string", short: "l" }, after: { type: "string" }, model: { type: "string", short: "m" }, status: { type: "string" }, ...WIDE },
  keys: {
    name: { type: "string" },
    mode: { type: "string" },
    "spend-limit": { type: "string" },
    period: { type: "string" },
    expires: { type: "string" },
    models: { type: "string" },
    rpm: { type: "string" },
    ...WIDE,
  },
  budgets: {
    scope: { type: "string" },
    amount: { type: "string" },
    period: { type: "string" },
    timezone: { type: "string" },
    action: { type: "string" },
    thresholds: { type: "string" },
    ...WIDE,
  },
  balance: {},
  alert: { set: { type: "string" }, off: { type: "boolean", default: false } },
  voices: { provider: { type: "string", short: "p" }, limit: { type: "string", short: "l" }, all: { type: "boolean", default: false }, ...WIDE },
  orgs: { role: { type: "string", short: "r" }, ...WIDE },
  invites: {},
  login: {},
  help: {},
};

type Values = Record<string, string | boolean | undefined>;

/**
 * Parses `argv` (the arguments after the program name). `gateway`, `gateway --help`, `gateway help X`
 * and `gateway X --help` give a `help` command. Throws {@link UsageError} for an unknown command or
 * option, a missing argument or a value that is not of the expected form (a whole number, one of a list).
 */
export function parseCommand(argv: readonly string[]): Command {
  const { org: leading, rest: args } = leadingOrg(argv);
  const cmd = parseNamed(args);
  const org = cmd.org ?? leading;
  if (org === undefined || cmd.name === "help") return cmd;
  if (org.trim() === "") throw new UsageError("--org needs an organization id (org_...)");
  return { ...cmd, org: org.trim() };
}

/** `--org ID` or `--org=ID` given before the command name (`gateway --org org_1 keys list`), and the arguments after it. */
function leadingOrg(argv: readonly string[]): { org: string | undefined; rest: readonly string[] } {
  let org: string | undefined;
  let i = 0;
  for (; i < argv.length; i++) {
    if (argv[i] === "--org") {
      if (i + 1 >= argv.length) throw new UsageError("--org needs an organization id (org_...)");
      org = argv[++i];
    } else if (argv[i].startsWith("--org=")) {
      org = argv[i].slice("--org=".length);
    } else {
      break;
    }
  }
  return { org, rest: argv.slice(i) };
}

/** The command of `argv` (command name first); `org` set when `--org` follows the command name. */
function parseNamed(argv: readonly string[]): Command {
  const [name, ...rest] = argv;
  if (name === undefined || name === "--help" || name === "-h") return { name: "help", topic: null, json: false };
  if (!(name in OPTIONS)) throw new UsageError(`unknown command '${name}'`);
  let parsed: { values: Values; positionals: string[] };
  try {
    parsed = parseArgs({ args: [...rest], options: { ...COMMON, ...OPTIONS[name] }, allowPositionals: true, strict: true }) as { values: Values; positionals: string[] };
  } catch (err) {
    // parseArgs's messages name the option and suggest `--` for values that look like options.
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
  const { values: v, positionals: pos } = parsed;
  const json = v.json === true;
  if (v.help === true) return { name: "help", topic: name, json };
  const str = (key: string): string | null => (typeof v[key] === "string" ? (v[key] as string) : null);
  const cmd = parseOptions(name, v, pos, json, str);
  const withWide: Command = v.wide === true ? { ...cmd, wide: true } : cmd;
  return typeof v.org === "string" ? { ...withWide, org: v.org } : withWide;
}

/** The command `name` from its parsed option values `v` and positional arguments `pos`. */
function parseOptions(name: string, v: Values, pos: string[], json: boolean, str: (key: string) => string | null): Command {
  switch (name) {
    case "help":
      expectPositionals(name, pos, 0, 1);
      return { name: "help", topic: pos[0] ?? null, json };
    case "speak": {
      // With --stream the text may be left out (or given as -): standard input is spoken as it arrives.
      const stream = v.stream === true;
      expectPositionals(name, pos, stream ? 0 : 1, 1, stream ? "the text to speak (or none: standard input)" : "the text to speak (or --stream to read standard input)");
      return {
        name,
        json,
        text: stream && (pos[0] === undefined || pos[0] === "-") ? null : pos[0],
        voice: required(str("voice"), "--voice", "speak"),
        model: str("model"),
        format: str("format"),
        output: str("output"),
        stream,
        simulate: oneOf(str("simulate"), SIMULATE_VALUES, "--simulate"),
      };
    }
    case "image":
      expectPositionals(name, pos, 1, 1, "the prompt");
      return {
        name,
        json,
        prompt: pos[0],
        model: required(str("model"), "--model", "image"),
        size: str("size"),
        n: wholeNumber(str("n"), "-n"),
        quality: str("quality"),
        output: str("output"),
        simulate: oneOf(str("simulate"), SIMULATE_VALUES, "--simulate"),
      };
    case "video":
      expectPositionals(name, pos, 1, 1, "the prompt");
      return {
        name,
        json,
        prompt: pos[0],
        model: required(str("model"), "--model", "video"),
        duration: wholeNumber(str("duration"), "--duration"),
        imageUrl: str("image-url"),
        output: str("output"),
        simulate: oneOf(str("simulate"), SIMULATE_VALUES, "--simulate"),
      };
    case "jobs":
      expectPositionals(name, pos, 0, 0);
      return { name, json, status: str("status"), kind: str("kind"), model: str("model"), limit: wholeNumber(str("limit"), "--limit"), after: str("after") };
    case "job":
    case "cancel":
      expectPositionals(name, pos, 1, 1, "a job id");
      return { name, json, id: pos[0] };
    case "usage":
      expectPositionals(name, pos, 0, 0);
      if (v.focus === true && (str("by") !== null || str("tz") !== null || v.csv === true)) {
        throw new UsageError("--focus exports whole UTC days by model, member and key: it takes --from and --to only");
      }
      return { name, json, by: oneOf(str("by"), ["day", "model", "key", "member", "user"] as const, "--by"), from: str("from"), to: str("to"), tz: str("tz"), csv: v.csv === true, focus: v.focus === true };
    case "requests":
      expectPositionals(name, pos, 0, 0);
      return { name, json, limit: wholeNumber(str("limit"), "--limit"), after: str("after"), model: str("model"), status: str("status") };
    case "keys":
      return parseKeys(pos, str("name"), str("mode"), keyControlFlags(str), json);
    case "budgets":
      return parseBudgets(pos, str("scope"), budgetFlags(str), json);
    case "balance":
      expectPositionals(name, pos, 0, 0);
      return { name, json };
    case "alert": {
      expectPositionals(name, pos, 0, 0);
      const set = str("set");
      if (set !== null && v.off === true) throw new UsageError("give --set USD or --off, not both");
      return { name, json, set: set === null ? null : usdAmount(set, "--set"), off: v.off === true };
    }
    case "voices":
      expectPositionals(name, pos, 0, 0);
      if (v.all === true && str("limit") !== null) throw new UsageError("give --limit N or --all, not both");
      return {
        name,
        json,
        provider: oneOf(str("provider"), ["alpha", "beta", "all"] as const, "--provider"),
        limit: v.all === true ? null : (wholeNumber(str("limit"), "--limit") ?? VOICES_LIMIT),
        limitGiven: v.all === true || str("limit") !== null,
      };
    case "orgs":
      return parseOrgs(pos, str("role"), json);
    case "login":
      expectPositionals(name, pos, 1, 1, "your email address");
      return { name, json, email: pos[0] };
    case "invites": {
      const [sub, ...args] = pos;
      if (sub !== "accept") throw new UsageError(sub === undefined ? `'invites' needs an action: invites accept TOKEN` : `unknown 'invites' action '${sub}' (accept)`);
      if (args.length !== 1) throw new UsageError(`'invites accept' needs one invite token (inv_...)`);
      return { name: "invites-accept", json, token: args[0] };
    }
    default:
      throw new UsageError(`unknown command '${name}'`);
  }
}

/** The D34 flags of `keys create` and `keys update`: `--spend-limit USD|none`, `--period P`, `--expires ISO|never`, `--models a,b|all`, `--rpm N|none`. */
function keyControlFlags(str: (key: string) => string | null): KeyControlFlags {
  const out: KeyControlFlags = {};
  const limit = str("spend-limit");
  if (limit !== null) out.spend_limit_usd = limit === "none" ? null : usdAmount(limit, "--spend-limit");
  const period = oneOf(str("period"), ["day", "week", "month", "total"] as const, "--period");
  if (period !== null) out.spend_limit_period = period;
  const expires = str("expires");
  if (expires !== null) out.expires_at = expires === "never" ? null : expires;
  const models = str("models");
  if (models !== null) {
    const list = models.split(",").map((m) => m.trim()).filter((m) => m !== "");
    out.models = models === "all" ? null : list;
    if (out.models !== null && list.length === 0) throw new UsageError("--models needs model ids or prefixes such as alpha-* (comma separated), or all");
  }
  const rpm = str("rpm");
  if (rpm !== null) out.rpm = rpm === "none" ? null : wholeNumber(rpm, "--rpm");
  return out;
}

/** The D44 fields of `budgets create` and `budgets update`: `--amount USD`, `--period P`, `--timezone ZONE`, `--action A`, `--thresholds 50,80,100|none`. */
function budgetFlags(str: (key: string) => string | null): BudgetFlags {
  const out: BudgetFlags = {};
  const amount = str("amount");
  if (amount !== null) {
    out.amount_usd = usdAmount(amount, "--amount");
    if (out.amount_usd <= 0) throw new UsageError(`--amount must be more than 0 USD (got '${amount}')`);
  }
  const period = oneOf(str("period"), ["day", "week", "month", "total"] as const, "--period");
  if (period !== null) out.period = period;
  const timezone = str("timezone");
  if (timezone !== null) {
    if (!isTimeZone(timezone)) throw new UsageError(`--timezone must be an IANA time zone such as UTC, Europe/Paris or Asia/Tokyo (got '${timezone}')`);
    out.timezone = timezone;
  }
  const action = oneOf(str("action"), ["block", "alert"] as const, "--action");
  if (action !== null) out.action = action;
  const thresholds = str("thresholds");
  if (thresholds !== null) out.thresholds = thresholds === "none" ? [] : percentList(thresholds);
  return out;
}

/** Whether the runtime knows `zone` as a time zone (IANA names, `UTC`). */
function isTimeZone(zone: string): boolean {
  if (zone.trim() === "") return false;
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** `50,80,100`: whole percentages from 1 to 100, comma separated, each once, in ascending order. */
function percentList(value: string): number[] {
  const parts = value.split(",").map((p) => p.trim());
  const bad = () => new UsageError(`--thresholds must be whole percentages from 1 to 100, comma separated, such as 50,80,100 (or none) (got '${value}')`);
  if (parts.some((p) => !/^\d+$/.test(p))) throw bad();
  const list = [...new Set(parts.map(Number))].sort((a, b) => a - b);
  if (list.some((n) => n < 1 || n > 100)) throw bad();
  return list;
}

/** `--scope org|key:<id>|member:<id>` of `budgets create`. */
function budgetScope(value: string): BudgetScopeFlag {
  if (value === "org") return { type: "org" };
  const m = /^(key|member):(.+)$/.exec(value);
  if (!m || m[2].trim() === "") throw new UsageError(`--scope must be org, key:<key id> or member:<user id> (got '${value}')`);
  return { type: m[1] as "key" | "member", id: m[2].trim() };
}

/**
 * `budgets list` (the default), `budgets show ID`, `budgets create [--scope S] --amount USD --period P
 * [--timezone Z] [--action A] [--thresholds L]` (scope default `org`), `budgets update ID [fields]`,
 * `budgets delete ID`.
 */
function parseBudgets(pos: string[], scope: string | null, fields: BudgetFlags, json: boolean): Command {
  const [sub, ...args] = pos;
  const given = Object.keys(fields).length > 0;
  const noFields = (action: string) => {
    if (scope !== null) throw new UsageError(`--scope applies to 'budgets create' only`);
    if (given) throw new UsageError(`--amount, --period, --timezone, --action and --thresholds apply to 'budgets create' and 'budgets update' only (not '${action}')`);
  };
  const oneId = (action: string) => {
    if (args.length !== 1) throw new UsageError(`'budgets ${action}' needs one budget id (bud_...)`);
    return args[0];
  };
  switch (sub) {
    case "list":
    case undefined:
      noFields("list");
      if (args.length > 0) throw new UsageError(`'budgets list' takes no arguments`);
      return { name: "budgets-list", json };
    case "show":
      noFields("show");
      return { name: "budgets-show", json, id: oneId("show") };
    case "create":
      if (args.length > 0) throw new UsageError(`'budgets create' takes no arguments (the scope is --scope)`);
      if (fields.amount_usd === undefined) throw new UsageError(`'budgets create' needs --amount USD`);
      if (fields.period === undefined) throw new UsageError(`'budgets create' needs --period day, week, month or total`);
      return { name: "budgets-create", json, scope: budgetScope(scope ?? "org"), fields: { ...fields, amount_usd: fields.amount_usd, period: fields.period } };
    case "update": {
      if (scope !== null) throw new UsageError(`--scope cannot be changed: make a new budget`);
      const id = oneId("update");
      if (!given) throw new UsageError(`'budgets update' needs something to change: --amount, --period, --timezone, --action or --thresholds`);
      return { name: "budgets-update", json, id, fields };
    }
    case "delete":
      noFields("delete");
      return { name: "budgets-delete", json, id: oneId("delete") };
    default:
      throw new UsageError(`unknown 'budgets' action '${sub}' (list, show, create, update or delete)`);
  }
}

/** A USD amount given on the command line (a non-negative decimal number). */
function usdAmount(value: string, option: string): number {
  if (!/^\d+(\.\d+)?$/.test(value)) throw new UsageError(`${option} must be an amount of USD such as 20 or 2.50 (got '${value}')`);
  return Number(value);
}

/** `keys list`, `keys create [--name N] [--mode test] [controls]`, `keys update ID [--name N] [controls]`, `keys delete ID`. */
function parseKeys(pos: string[], name: string | null, mode: string | null, controls: KeyControlFlags, json: boolean): Command {
  const [sub, ...args] = pos;
  const hasControls = Object.keys(controls).length > 0;
  const only = (allowed: string) => {
    if (name !== null && allowed !== "create") throw new UsageError(`--name applies to 'keys create' and 'keys update' only`);
    if (mode !== null && allowed !== "create") throw new UsageError(`--mode applies to 'keys create' only`);
    if (hasControls && allowed !== "create") throw new UsageError(`--spend-limit, --period, --expires, --models and --rpm apply to 'keys create' and 'keys update' only`);
  };
  switch (sub) {
    case "list":
    case undefined:
      only("list");
      if (args.length > 0) throw new UsageError(`'keys list' takes no arguments`);
      return { name: "keys-list", json };
    case "create":
      if (args.length > 0) throw new UsageError(`'keys create' takes no arguments (the label is --name)`);
      return { name: "keys-create", json, keyName: name, mode: oneOf(mode, ["test"] as const, "--mode"), controls };
    case "update":
      if (mode !== null) throw new UsageError(`--mode cannot be changed: make a new key`);
      if (args.length !== 1) throw new UsageError(`'keys update' needs one key id`);
      if (!hasControls && name === null) throw new UsageError(`'keys update' needs something to change: --name, --spend-limit, --period, --expires, --models or --rpm`);
      return { name: "keys-update", json, id: args[0], keyName: name, controls };
    case "delete":
      only("delete");
      if (args.length !== 1) throw new UsageError(`'keys delete' needs one key id`);
      return { name: "keys-delete", json, id: args[0] };
    default:
      throw new UsageError(`unknown 'keys' action '${sub}' (list, create, update or delete)`);
  }
}

/**
 * `orgs list` (the default), `orgs create NAME`, `orgs show [ORG_ID]`, `orgs rename NAME`, `orgs delete
 * ORG_ID`, `orgs members`, `orgs invite EMAIL [--role R]` (default member), `orgs role USER_ID ROLE`,
 * `orgs remove USER_ID`, `orgs invites`, `orgs revoke INVITE_ID`. Those without an id act for the
 * organization of `--org` (else the credential's default one).
 */
function parseOrgs(pos: string[], role: string | null, json: boolean): Command {
  const [sub, ...args] = pos;
  const take = (n: number, what: string) => {
    if (args.length < n) throw new UsageError(`'orgs ${sub}' needs ${what}`);
    if (args.length > n) {
      const quote = sub === "create" || sub === "rename" ? ": quote a name with spaces" : "";
      throw new UsageError(n === 0 ? `'orgs ${sub ?? "list"}' takes no arguments (got '${args[0]}')` : `'orgs ${sub}' takes ${what}${quote} (got ${args.length} arguments)`);
    }
  };
  if (role !== null && sub !== "invite") throw new UsageError(`--role applies to 'orgs invite' only ('orgs role USER_ID ROLE' changes a member's)`);
  switch (sub) {
    case "list":
    case undefined:
      take(0, "");
      return { name: "orgs-list", json };
    case "create":
      take(1, "a name");
      return { name: "orgs-create", json, orgName: args[0] };
    case "show":
      if (args.length > 1) throw new UsageError(`'orgs show' takes at most one organization id`);
      return { name: "orgs-show", json, id: args[0] ?? null };
    case "rename":
      take(1, "the new name");
      return { name: "orgs-rename", json, orgName: args[0] };
    case "delete":
      take(1, "the organization id (org_...)");
      return { name: "orgs-delete", json, id: args[0] };
    case "members":
    case "invites":
      take(0, "");
      return { name: sub === "members" ? "orgs-members" : "orgs-invites", json };
    case "invite":
      take(1, "one email address");
      return { name: "orgs-invite", json, email: args[0], role: oneOf(role, ROLES, "--role") ?? "member" };
    case "role":
      take(2, "a user id and a role");
      return { name: "orgs-role", json, userId: args[0], role: oneOf(args[1], ROLES, "the role") as Role };
    case "remove":
      take(1, "one user id (usr_...)");
      return { name: "orgs-remove", json, userId: args[0] };
    case "revoke":
      take(1, "one invite id");
      return { name: "orgs-revoke", json, inviteId: args[0] };
    default:
      throw new UsageError(`unknown 'orgs' action '${sub}' (list, create, show, rename, delete, members, invite, role, remove, invites or revoke)`);
  }
}

function expectPositionals(command: string, pos: string[], min: number, max: number, what = "arguments"): void {
  if (pos.length < min) throw new UsageError(`'${command}' needs ${what}`);
  if (pos.length > max) {
    throw new UsageError(
      max === 0 ? `'${command}' takes no arguments (got '${pos[0]}')` : `'${command}' takes ${max === 1 ? "one argument" : `${max} arguments`}: quote ${what} (got ${pos.length})`,
    );
  }
}

function required(value: string | null, option: string, command: string): string {
  if (value === null || value === "") throw new UsageError(`'${command}' needs ${option}`);
  return value;
}

/** A positive whole number given as text (`-n 2`, `--limit 20`), or null when the option was not given. */
function wholeNumber(value: string | null, option: string): number | null {
  if (value === null) return null;
  if (!/^\d+$/.test(value) || Number(value) < 1 || !Number.isSafeInteger(Number(value))) throw new UsageError(`${option} must be a whole number of at least 1 (got '${value}')`);
  return Number(value);
}

function oneOf<T extends string>(value: string | null, allowed: readonly T[], option: string): T | null {
  if (value === null) return null;
  if (!(allowed as readonly string[]).includes(value)) throw new UsageError(`${option} must be one of ${allowed.join(", ")} (got '${value}')`);
  return value as T;
}
