/**
 * The usage text of `gateway` and of each command (`gateway help X`, `gateway X --help`), wrapped to the
 * terminal's width by `wrapHelp` (format.ts).
 */
import { HELP_MAX_WIDTH, wrapHelp } from "./format.ts";

const OVERVIEW = `gateway: the media gateway from the command line

Usage: gateway <command> [options]

Generate
  speak "TEXT" --voice ID          speech to a file (--model, --format, -o)
  speak --stream --voice ID        standard input, spoken line by line
  image "PROMPT" --model M         an image job, followed to the end (-n, -o)
  video "PROMPT" --model M         a video job, followed to the end (-d, -o)

Jobs
  jobs [--status S] [--limit N]    your jobs, newest first
  job ID                           one job
  cancel ID                        cancel a pending or running job

Account
  balance                          balance and tier
  usage [--by GROUP]               spend per day, model, key or member
  usage --focus [--from --to]      the FOCUS 1.2 cost export (CSV)
  requests [--limit N]             the usage log, newest first
  keys list|create|update|delete   your API keys and their controls
  budgets [create|update|delete]   spend budgets per day, week, month or total
  alert [--set USD | --off]        the low-balance alert
  voices [--provider P]            the voice library, 50 at a time (--limit N)

Organizations (a shared balance, members in roles)
  orgs [list] | orgs show [ID]     your organizations; one of them
  orgs create|rename NAME          a new organization; rename the current one
  orgs delete ORG_ID               delete an empty organization
  orgs members | orgs invites      the members; the pending invites
  orgs invite EMAIL [--role R]     invite someone (prints a token, once)
  orgs role USER_ID ROLE           change a member's role
  orgs remove USER_ID              remove a member (your own id: leave)
  orgs revoke INVITE_ID            revoke a pending invite
  invites accept TOKEN             join an organization (session token)
  login EMAIL                      a session token (password on stdin)

Every command takes --json (the answer as JSON), --help, and --org ORG_ID (act
for that organization). Tables fit the terminal: the less important columns are
left out and long texts cut short; --wide shows every column, uncut. 'gateway
help COMMAND' lists a command's options.

Environment
  GATEWAY_API_KEY  your API key (gw_...), or a session token (sess_..., from
                   login) for the account and organization commands; required
                   but for login
  GATEWAY_URL      the gateway's address (default http://127.0.0.1:8080)
  GATEWAY_ORG      the organization to act for when --org is not given
  COLUMNS          the width tables fit (default: the terminal's; in a pipe or a
                   file, tables are not cut)

Exit status: 0 done, 1 the gateway refused or the job failed (the error code is
printed), 2 bad usage.
`;

const TOPICS: Record<string, string> = {
  speak: `Usage: gateway speak "text" --voice ID [options]
       gateway speak --stream --voice ID [options] < text

Speech through POST /v1/audio/speech, written to a file; prints the file, the cost and the balance.

With --stream and no text (or -), standard input is read line by line and each line is spoken as it
arrives, through the realtime socket (/v1/audio/speech/{voice}/stream-input; docs/realtime-speech.md):
the audio is written to -o FILE, or to standard output when it is not a terminal, as it comes. At the
end stderr shows the characters billed, the cost and the balance (the socket's usage record). The
model must have realtime support (not alpha-v3); default alpha-multilingual-v2.
  printf 'Hello.\\nHow are you?\\n' | gateway speak --stream -v ID -o hi.mp3
  my-llm | gateway speak --stream -v ID -f pcm_16000 | aplay -r 16000 -f S16_LE
  -v, --voice ID       voice id (gateway voices); required
  -m, --model M        alpha-multilingual-v2 (default), alpha-v3, alpha-flash-v2-5, alpha-turbo-v2-5,
                       beta-speech-hd, beta-speech-turbo (beta voices)
  -f, --format F       mp3_44100_128 (default), mp3_44100_192, mp3_22050_32, pcm_16000, pcm_22050,
                       pcm_24000, pcm_44100, ulaw_8000
  -o, --output FILE    where to write (default speech.mp3, .pcm or .ulaw by format)
      --stream         with a text: progressive delivery (beta models); without one: standard
                       input through the realtime socket, as it arrives
      --simulate MODE  X-Svc-Simulate: fail, slow or hang (the built-in simulator only)
`,
  image: `Usage: gateway image "prompt" --model M [options]

Submits an image job, shows its progress on stderr, saves the output and prints the files, the cost
and the balance. With -n above 1 the files are numbered: out.png -> out-1.png, out-2.png.
  -m, --model M        imgA-v4, imgA-v4-pro, imgB-2-pro, imgC-v3, ... (gateway's /v1/pricing); required
  -s, --size S         auto, WIDTHxHEIGHT or an aspect such as 16:9
  -n N                 number of images, 1 to 4
  -q, --quality Q      low, medium or high (models with quality tiers)
  -o, --output FILE    where to write (default <job id>.<ext>)
      --simulate MODE  X-Svc-Simulate: fail, slow or hang
`,
  video: `Usage: gateway video "prompt" --model M [options]

Submits a video job (tier 1 and up), shows its progress, saves the clip, prints file, cost and balance.
  -m, --model M        vidA-2.5-pro, vidA-3-pro, vidB-2-fast, vidC-02-768p, vidD-3-fast, ...; required
  -d, --duration S     seconds, 1 to 10 (default 5; vidC-02-* take 6 or 10)
      --image-url URL  https:// URL of the first frame (image-to-video)
  -o, --output FILE    where to write (default <job id>.mp4)
      --simulate MODE  X-Svc-Simulate: fail, slow or hang
`,
  jobs: `Usage: gateway jobs [--status S] [--kind image|video|audio] [--model M]
                    [--limit N] [--after ID] [--wide]

Your jobs, newest first (GET /v1/jobs), 20 at a time: --limit N (up to 100) for more at once, --after
the last id of the previous page (the command prints it) for the next page.
`,
  job: `Usage: gateway job ID

One job (GET /v1/jobs/{id}): status, queue position or progress, amounts, outputs, error.
`,
  cancel: `Usage: gateway cancel ID

Cancels a pending or processing job (POST /v1/jobs/{id}/cancel): it ends failed with code canceled and
its whole hold is released. A finished job cannot be canceled (job_not_cancelable).
`,
  usage: `Usage: gateway usage [--by day|model|key|member] [--from DATE] [--to DATE] [--tz ZONE]
                     [--csv] [--wide]
       gateway usage --focus [--from DATE] [--to DATE]

Requests and spend per group (GET /v1/usage; --csv prints GET /v1/usage.csv); member groups by the
member who called (user is the same). Dates are ISO dates or instants; the default range is the last
30 days; --tz is an IANA zone for day groups (default UTC).

--focus prints the FinOps FOCUS 1.2 cost and usage dataset as CSV (GET /v1/usage/export?format=focus):
one row per UTC day, model, member and key, for finance tools. --from and --to are UTC dates, both
included (default: this month up to today).
`,
  requests: `Usage: gateway requests [--limit N] [--after ID] [--model M] [--status S] [--wide]

The usage log (GET /v1/requests): one record per paid call, newest first, 20 at a time: --limit N
(up to 100) for more at once, --after the last id of the previous page (the command prints it) for
the next page.
`,
  keys: `Usage: gateway keys list [--wide]
       gateway keys create [--name LABEL] [--mode test] [controls]
       gateway keys update KEY_ID [--name LABEL] [controls]
       gateway keys delete KEY_ID

Controls (each optional; on update, only those given change):
  --spend-limit USD|none    spend limit of the key per period (402 key_spend_limit past it)
  --period day|week|month|total   the limit's period, UTC (default month)
  --expires ISO|never       when the key stops working, e.g. 2027-01-01T00:00:00Z
  --models a,b|all          model ids or prefixes such as alpha-* the key may call
  --rpm N|none              the key's own requests per minute

create prints the new secret once: it cannot be shown again. A test-mode key is served by the
simulator and moves no money. A deleted key stops working at once. list shows what each key spent
in its period.
`,
  budgets: `Usage: gateway budgets [list] [--wide]
       gateway budgets show BUDGET_ID
       gateway budgets create [--scope S] --amount USD --period P [fields]
       gateway budgets update BUDGET_ID [fields]
       gateway budgets delete BUDGET_ID

Budgets of the organization (GET/POST /v1/budgets, GET/PATCH/DELETE /v1/budgets/{id}): an amount per
calendar window for the whole organization, one member or one key. A block budget refuses calls
whose hold would pass it (402 budget_exceeded); an alert budget only sends budget.threshold events.
Several apply at once. list shows each budget's scope, period and zone, action, spend of the current
window, what remains and the window in the budget's zone; keys' spend limits show as key budgets.
Owners and admins change budgets; members and viewers read them.

Fields (on update only those given change; the scope stays):
  --scope S                 org (default: the organization acted for), key:KEY_ID or member:USER_ID
  --amount USD              the budget per window, more than 0
  --period P                day, week (from Monday), month or total (one window)
  --timezone ZONE           IANA zone of the windows, e.g. Asia/Tokyo (default UTC)
  --action A                block (default: refuse calls past the amount) or alert (events only)
  --thresholds L            percentages that send one budget.threshold event per window, e.g.
                            50,80,100 (the default), or none

A new period or zone starts counting the new current window.
  gateway budgets create --amount 10 --period day --timezone Asia/Tokyo
  gateway budgets create --scope member:usr_1 --amount 100 --period month --action alert
`,
  alert: `Usage: gateway alert [--set USD | --off]

The low-balance alert (GET/PUT /v1/billing/alerts): below the threshold the gateway sends one
balance.low webhook event to your endpoints that take it, and arms it again once the balance is
back above. Without options it shows the setting.
`,
  balance: `Usage: gateway balance

Your balance, tier and deposits (GET /v1/auth/me).
`,
  orgs: `Usage: gateway orgs [list] [--wide]
       gateway orgs create NAME
       gateway orgs show [ORG_ID]
       gateway orgs rename NAME
       gateway orgs delete ORG_ID
       gateway orgs members
       gateway orgs invite EMAIL [--role owner|admin|member|viewer]
       gateway orgs role USER_ID owner|admin|member|viewer
       gateway orgs remove USER_ID
       gateway orgs invites
       gateway orgs revoke INVITE_ID

Organizations (GET/POST /v1/orgs...): a balance, keys and usage shared by members in roles:
  owner   everything, including admins' roles and deleting the organization
  admin   every key, members below admin (invite, role, remove), webhooks, alerts, top-ups
  member  calls, own keys, reads
  viewer  reads (usage, ledger, jobs)
list marks with * the organization the commands act for. show, rename, members, invite, role,
remove, invites and revoke act for the organization of --org ORG_ID (or GATEWAY_ORG), else for the
credential's own: an API key's organization, a session token's personal one. invite prints the
invite's token once (--role default member); the invited person accepts it with 'gateway invites
accept TOKEN'. remove with your own user id leaves. delete takes only an empty organization (no
balance, nothing running) and needs its owner's session token.

A session token (GATEWAY_API_KEY=sess_...) reaches every organization of its user; an API key only
its own (acting at most as admin): with another --org the gateway answers org_not_found. An action
your role does not allow answers forbidden_role (exit 1).
`,
  invites: `Usage: gateway invites accept TOKEN

Joins the organization of an invite (POST /v1/invites/{token}/accept) in the invite's role. Needs a
session token of the invited email (GATEWAY_API_KEY=sess_...); an invite is accepted once, within 7
days. Then act for the organization with --org ORG_ID.
`,
  login: `Usage: gateway login EMAIL

Signs in (POST /v1/auth/login) and prints a session token, once; it lasts 30 days. The password is
typed at a prompt without echo, or read from stdin: printf %s "$PASSWORD" | gateway login EMAIL.
Export the token as GATEWAY_API_KEY for the account and organization commands: it reaches every
organization of yours (--org ORG_ID, default your personal one) and accepts invites. Generating
(speak, image, video) needs an API key: gateway keys create.
`,
  voices: `Usage: gateway voices [--provider alpha|beta|all] [--limit N | --all] [--wide]

The voice library (GET /v1/audio/voices; default alpha). alpha voices go with alpha-* speech models,
beta voices with beta-speech-*. The library holds thousands of voices: the table shows the first 50,
and says how many there are.
  -p, --provider P     alpha (default), beta or all
  -l, --limit N        show the first N voices (default 50)
      --all            show every voice
      --json           the whole list as JSON (with --limit or --all: that many)
`,
};

/**
 * The usage text of `topic` (a command name), or the overview when null or unknown, wrapped to `width`
 * columns (at most {@link HELP_MAX_WIDTH}; default 80, as in a pipe).
 */
export function helpText(topic: string | null, width: number | null = null): string {
  return wrapHelp((topic !== null && TOPICS[topic]) || OVERVIEW, Math.min(width ?? HELP_MAX_WIDTH, HELP_MAX_WIDTH));
}
