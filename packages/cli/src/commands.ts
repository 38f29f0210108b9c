/**
 * What each `gateway` command does, over the SDK (packages/client: `Gateway` and its namespaces). Every
 * command writes its answer to `io.stdout` (text, or JSON with `--json`), progress and notes to
 * `io.stderr`, and resolves with the exit status; a refused call is thrown as the SDK's `GatewayError`
 * (an `APIError` subclass, or `APIConnectionError`) and printed by `main.ts`.
 */
import { createWriteStream } from "node:fs";
import { rename, rm } from "node:fs/promises";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import { type Answer, type Budget, downloadOutput, type Gateway, GatewayError, type JsonBody, type MediaJob } from "../../client/src/index.ts";
import type { Command } from "./args.ts";
import { budgetScopeText, budgetWindow, type Column, extensionOf, extensionOfFormat, keyValues, table, type TableLayout, usd } from "./format.ts";
import { ProgressReporter, type ProgressSink } from "./progress.ts";
// Types only: speak-stream.ts (and `ws` with it) is loaded by `speak --stream` alone.
import type { AudioSink, StreamIo } from "./speak-stream.ts";

/** The streams a command writes to, and how it reads a secret (a password) when it needs one. */
export interface CliIo {
  /** Standard output; `isTTY` and `columns` (the terminal's width) when known, for the width of tables and usage text. */
  stdout: { write(text: string): void; isTTY?: boolean; readonly columns?: number };
  stderr: ProgressSink;
  /** A secret typed at `prompt` without echo on a terminal, else the whole of stdin (one trailing newline dropped). */
  readSecret?(prompt: string): Promise<string>;
  /** Standard input, read line by line by `speak --stream` (absent: that command has no input). */
  stdin?: StreamIo["stdin"];
  /** Standard output for bytes: the audio of `speak --stream` without `-o`, when it is not a terminal. */
  audioOut?: AudioSink;
}

/**
 * What a command runs with: the SDK client (key and base URL applied), the streams, an abort signal
 * (Ctrl-C), and `width`: the columns a table may take (the terminal's or `COLUMNS`; null or absent:
 * unbounded, output into a pipe or a file).
 */
export interface CommandContext {
  api: Gateway;
  io: CliIo;
  signal: AbortSignal;
  width?: number | null;
}

/** The layout of a command's table: the context's width, or every column uncut with `--wide`. */
function layoutOf(cmd: { wide?: true }, ctx: CommandContext): TableLayout {
  return { width: ctx.width ?? null, wide: cmd.wide === true };
}

/** A timestamp column: kept while there is room, never cut. */
const time = (header: string, priority: number): Column => ({ header, priority });

/**
 * `gateway login EMAIL`: a session token (`POST /v1/auth/login`, 30 days) for the password read by
 * `io.readSecret`, printed once for `GATEWAY_API_KEY`: it serves the account and organization commands
 * (D41: every organization of the user, with `--org`), not generation. Throws the SDK's
 * `AuthenticationError` (401 `auth_error`) for a wrong pair, `RateLimitError` after too many failures.
 */
export async function login(cmd: Extract<Command, { name: "login" }>, { api, io, signal }: CommandContext): Promise<number> {
  const password = io.readSecret ? await io.readSecret(`Password for ${cmd.email}: `) : "";
  if (password === "") {
    io.stderr.write("error: no password: type it at the prompt, or pipe it on stdin (printf %s \"$PASSWORD\" | gateway login EMAIL)\n");
    return 2;
  }
  const data = await api.auth.login({ email: cmd.email, password }, { signal });
  io.stdout.write(cmd.json ? json(data) : keyValues([["user_id", data.user_id], ["session_token", data.session_token]]));
  io.stderr.write("The session_token is shown only this once: export GATEWAY_API_KEY=<session_token> for the account and organization commands (--org picks the organization); generating needs an API key.\n");
  return 0;
}

/** Runs `cmd` (anything but `help` and `login`) and resolves with the exit status. */
export async function runCommand(cmd: Exclude<Command, { name: "help" | "login" }>, ctx: CommandContext): Promise<number> {
  switch (cmd.name) {
    case "speak":
      return speak(cmd, ctx);
    case "image":
    case "video":
      return media(cmd, ctx);
    case "jobs":
      return jobs(cmd, ctx);
    case "job": {
      const job = await ctx.api.jobs.get(cmd.id, { signal: ctx.signal });
      ctx.io.stdout.write(cmd.json ? json(job) : jobDetails(job));
      return 0;
    }
    case "cancel": {
      const job = await ctx.api.jobs.cancel(cmd.id, { signal: ctx.signal });
      ctx.io.stdout.write(cmd.json ? json(job) : `canceled ${job.id}: hold of ${usd(job.hold_usd)} released, nothing charged\n`);
      return 0;
    }
    case "usage":
      return usage(cmd, ctx);
    case "requests":
      return requests(cmd, ctx);
    case "keys-list":
    case "keys-create":
    case "keys-update":
    case "keys-delete":
      return keys(cmd, ctx);
    case "budgets-list":
    case "budgets-show":
    case "budgets-create":
    case "budgets-update":
    case "budgets-delete":
      return budgets(cmd, ctx);
    case "balance":
      return balance(cmd, ctx);
    case "alert":
      return alert(cmd, ctx);
    case "voices":
      return voices(cmd, ctx);
    case "orgs-list":
    case "orgs-create":
    case "orgs-show":
    case "orgs-rename":
    case "orgs-delete":
      return orgs(cmd, ctx);
    case "orgs-members":
    case "orgs-invite":
    case "orgs-role":
    case "orgs-remove":
    case "orgs-invites":
    case "orgs-revoke":
      return members(cmd, ctx);
    case "invites-accept":
      return acceptInvite(cmd, ctx);
  }
}

function json(value: unknown): string {
  return JSON.stringify(value, null, 2) + "\n";
}

/** `X-Svc-Simulate` for the simulator (D10), when asked for. */
function simulateHeaders(simulate: string | null): Record<string, string> | undefined {
  return simulate ? { "x-svc-simulate": simulate } : undefined;
}

async function speak(cmd: Extract<Command, { name: "speak" }>, { api, io, signal }: CommandContext): Promise<number> {
  if (cmd.text === null) {
    // `--stream` without a text: standard input through the realtime socket (D42).
    const headers = simulateHeaders(cmd.simulate);
    const { speakStream } = await import("./speak-stream.ts");
    return speakStream({ voice: cmd.voice, model: cmd.model, format: cmd.format, output: cmd.output, json: cmd.json, ...(headers ? { headers } : {}) }, api, io, signal);
  }
  type SpeechBody = JsonBody<"createSpeech">;
  const body = {
    input: cmd.text,
    voice_id: cmd.voice,
    ...(cmd.model ? { model: cmd.model as SpeechBody["model"] } : {}),
    ...(cmd.format ? { response_format: cmd.format as SpeechBody["response_format"] } : {}),
    ...(cmd.stream ? { stream: true } : {}),
  } satisfies SpeechBody;
  const response = await api.audio.speech(body, { headers: simulateHeaders(cmd.simulate), signal });
  if (!response.body) throw new GatewayError({ status: response.status, code: "empty_answer", message: "the gateway answered without audio" });
  const path = cmd.output ?? `speech.${extensionOfFormat(cmd.format)}`;
  // Written beside the target and renamed when whole: an interrupted call leaves no truncated file.
  const part = `${path}.part`;
  try {
    await pipeline(Readable.fromWeb(response.body as NodeReadableStream<Uint8Array>), createWriteStream(part), { signal });
    await rename(part, path);
  } catch (err) {
    await rm(part, { force: true });
    throw err;
  }
  const h = response.headers;
  const result = {
    files: [path],
    content_type: h.get("content-type"),
    model: h.get("x-svc-model"),
    characters: h.get("x-svc-chars-billed") === null ? null : Number(h.get("x-svc-chars-billed")),
    cost_usd: h.get("x-svc-cost-usd") === null ? null : Number(h.get("x-svc-cost-usd")),
    balance_usd: h.get("x-svc-balance-usd") === null ? null : Number(h.get("x-svc-balance-usd")),
  };
  if (cmd.json) {
    io.stdout.write(json(result));
  } else {
    io.stdout.write(`${path}\n`);
    io.stdout.write(`${result.model ?? "speech"}, ${result.characters ?? "?"} characters: cost ${usd(h.get("x-svc-cost-usd"))}, balance ${usd(h.get("x-svc-balance-usd"))}\n`);
  }
  return 0;
}

async function media(cmd: Extract<Command, { name: "image" | "video" }>, { api, io, signal }: CommandContext): Promise<number> {
  const progress = new ProgressReporter(io.stderr);
  // The terminal line's spinner and clock move between updates; nothing is written off a terminal.
  const timer = io.stderr.isTTY ? setInterval(() => progress.tick(), 125) : null;
  timer?.unref();
  let current: MediaJob | null = null;
  const options = {
    headers: simulateHeaders(cmd.simulate),
    signal,
    onUpdate: (job: MediaJob) => {
      current = job;
      progress.update(job);
    },
  };
  let job: MediaJob;
  try {
    if (cmd.name === "image") {
      type ImageBody = JsonBody<"createImageJob">;
      const body: ImageBody = {
        model: cmd.model as ImageBody["model"],
        prompt: cmd.prompt,
        ...(cmd.size ? { size: cmd.size } : {}),
        ...(cmd.n !== null ? { n: cmd.n } : {}),
        ...(cmd.quality ? { quality: cmd.quality as ImageBody["quality"] } : {}),
      };
      job = await api.images.generateAndWait(body, options);
    } else {
      type VideoBody = JsonBody<"createVideoJob">;
      const body: VideoBody = {
        model: cmd.model as VideoBody["model"],
        prompt: cmd.prompt,
        ...(cmd.duration !== null ? { duration: cmd.duration } : {}),
        ...(cmd.imageUrl ? { image_url: cmd.imageUrl } : {}),
      };
      job = await api.videos.generateAndWait(body, options);
    }
  } catch (err) {
    const running = current as MediaJob | null;
    if (signal.aborted && running) {
      progress.finish();
      // Stopping to watch is not cancelling: the job runs on and is charged if it succeeds.
      io.stderr.write(`stopped following ${running.id}; it keeps running. Check it with 'gateway job ${running.id}', stop it with 'gateway cancel ${running.id}'.\n`);
      return 130;
    }
    throw err;
  } finally {
    if (timer) clearInterval(timer);
    progress.finish();
  }

  if (job.status !== "succeeded") {
    const code = job.error?.code ?? job.status;
    const message = job.error?.message ?? `the job ended ${job.status}`;
    io.stderr.write(`error: ${code}: ${message}\n(job ${job.id} ${job.status}: its hold of ${usd(job.hold_usd)} was released, nothing charged)\n`);
    if (cmd.json) io.stdout.write(json({ files: [], cost_usd: 0, job }));
    return 1;
  }
  const target = cmd.output ?? `${job.id}.${extensionOf(job.output?.content_type)}`;
  const files = await downloadOutput(job, target, { signal });
  const me = await api.auth.me({ signal }).catch(() => null);
  const balance = me?.balance_usd ?? null;
  if (cmd.json) {
    io.stdout.write(json({ files, cost_usd: job.cost_usd, balance_usd: balance, job }));
  } else {
    for (const f of files) io.stdout.write(`${f}\n`);
    io.stdout.write(`${job.model}, ${job.id}: cost ${usd(job.cost_usd)}, balance ${usd(balance)}\n`);
  }
  return 0;
}

async function jobs(cmd: Extract<Command, { name: "jobs" }>, ctx: CommandContext): Promise<number> {
  const { api, io, signal } = ctx;
  const query = {
    limit: cmd.limit ?? undefined,
    // Passed as given: the gateway answers 400 `invalid_request` (param status or kind) for a value it does not know.
    status: (cmd.status ?? undefined) as MediaJob["status"] | undefined,
    kind: (cmd.kind ?? undefined) as MediaJob["kind"] | undefined,
    model: cmd.model ?? undefined,
    after: cmd.after ?? undefined,
  };
  const page = await api.jobs.list(query, { signal });
  if (cmd.json) {
    io.stdout.write(json(page.body));
    return 0;
  }
  io.stdout.write(
    table(
      [
        "ID",
        { header: "KIND", priority: 7 },
        { header: "MODEL", priority: 8 },
        { header: "STATUS", priority: 9 },
        { header: "HOLD_USD", priority: 4 },
        { header: "COST_USD", priority: 6 },
        time("CREATED", 5),
      ],
      page.data.map((j) => [j.id, j.kind, j.model, statusCell(j), j.hold_usd, j.cost_usd, j.created_at]),
      layoutOf(cmd, ctx),
    ),
  );
  const next = page.nextCursor();
  if (next !== null) io.stderr.write(`more: gateway jobs --after ${next} (the next page; --limit N up to 100 for more at once)\n`);
  return 0;
}

/** The status with the queue position or progress of a running job. */
function statusCell(job: MediaJob): string {
  if (job.status === "pending" && typeof job.queue_position === "number") return `pending #${job.queue_position}`;
  if (job.status === "processing" && typeof job.progress === "number") return `processing ${Math.floor(job.progress * 100)}%`;
  return job.status;
}

/** A job as aligned `key  value` lines. */
export function jobDetails(job: MediaJob): string {
  const outputs = job.output ? (job.output.urls.length > 0 ? job.output.urls : [job.output.url]) : [];
  return keyValues([
    ["id", job.id],
    ["kind", job.kind],
    ["model", job.model],
    ["status", job.status],
    ["queue_position", job.status === "pending" ? job.queue_position : null],
    ["progress", job.status === "processing" && typeof job.progress === "number" ? `${Math.floor(job.progress * 100)}%` : null],
    ["hold", usd(job.hold_usd)],
    ["cost", usd(job.cost_usd)],
    ["created_at", job.created_at],
    ["updated_at", job.updated_at],
    ["content_type", job.output?.content_type ?? null],
    ...outputs.map((u, i): [string, string] => [outputs.length > 1 ? `output_${i + 1}` : "output", u]),
    ["error", job.error ? `${job.error.code}: ${job.error.message}` : null],
  ]);
}

/** The units of a usage group (D29), as the document has them. */
type UsageUnits = NonNullable<Answer<"getUsage">["data"][number]["units"]>;

const UNIT_ORDER: (keyof UsageUnits)[] = ["characters", "seconds", "images", "minutes", "input_tokens", "output_tokens", "cached_tokens"];

async function usage(cmd: Extract<Command, { name: "usage" }>, ctx: CommandContext): Promise<number> {
  const { api, io, signal } = ctx;
  if (cmd.focus) {
    const csv = await api.usage.focus({ from: cmd.from ?? undefined, to: cmd.to ?? undefined }, { signal });
    io.stdout.write(csv);
    return 0;
  }
  const query = { group_by: cmd.by ?? undefined, from: cmd.from ?? undefined, to: cmd.to ?? undefined, tz: cmd.tz ?? undefined };
  if (cmd.csv) {
    const csv = await api.usage.csv(query, { signal });
    io.stdout.write(csv.endsWith("\n") ? csv : `${csv}\n`);
    return 0;
  }
  const summary = await api.usage.summary(query, { signal });
  if (cmd.json) {
    io.stdout.write(json(summary));
    return 0;
  }
  // One column per unit that occurs, in a fixed order.
  const units = UNIT_ORDER.filter((u) => summary.data.some((g) => g.units?.[u] !== undefined));
  io.stdout.write(
    table(
      [
        { header: summary.group_by.toUpperCase(), min: 16 },
        { header: "REQUESTS", priority: 8 },
        "COST_USD",
        ...units.map((u, i): Column => ({ header: u.toUpperCase(), priority: 5 - i / 10 })),
      ],
      [
        ...summary.data.map((g) => [g.group, g.requests, g.cost_usd, ...units.map((u) => g.units?.[u])]),
        ["total", summary.total.requests, summary.total.cost_usd, ...units.map(() => "")],
      ],
      layoutOf(cmd, ctx),
    ),
  );
  return 0;
}

async function requests(cmd: Extract<Command, { name: "requests" }>, ctx: CommandContext): Promise<number> {
  const { api, io, signal } = ctx;
  const query = {
    limit: cmd.limit ?? undefined,
    after: cmd.after ?? undefined,
    model: cmd.model ?? undefined,
    status: (cmd.status ?? undefined) as MediaJob["status"] | undefined,
  };
  const page = await api.requests.list(query, { signal });
  if (cmd.json) {
    io.stdout.write(json(page.body));
    return 0;
  }
  io.stdout.write(
    table(
      [
        "ID",
        { header: "KIND", priority: 6 },
        { header: "MODEL", priority: 9 },
        { header: "STATUS", priority: 8 },
        { header: "COST_USD", priority: 7 },
        { header: "LATENCY_MS", priority: 2 },
        { header: "JOB", priority: 3 },
        time("CREATED", 5),
      ],
      page.data.map((r) => [r.id, r.kind, r.model, r.status, r.cost_usd, r.latency_ms, r.job_id, r.created_at]),
      layoutOf(cmd, ctx),
    ),
  );
  const next = page.nextCursor();
  if (next !== null) io.stderr.write(`more: gateway requests --after ${next} (the next page; --limit N up to 100 for more at once)\n`);
  return 0;
}

/** "$0.12 of $5 per month", "$0.12 this month" without a limit (D34). */
function spendText(k: { spend_limit_usd: number | null; spend_limit_period: string; spent_usd: number }): string {
  const per = k.spend_limit_period === "total" ? "in total" : `per ${k.spend_limit_period}`;
  return k.spend_limit_usd === null ? `${usd(k.spent_usd)} this ${k.spend_limit_period === "total" ? "key" : k.spend_limit_period}` : `${usd(k.spent_usd)} of ${usd(k.spend_limit_usd)} ${per}`;
}

/** The controls of a key as key-value rows (D34). */
function controlRows(k: { spend_limit_usd: number | null; spend_limit_period: string; spent_usd: number; expires_at: string | null; models: string[] | null; rpm: number | null }): [string, string | null][] {
  return [
    ["spend", spendText(k)],
    ["expires_at", k.expires_at ?? "never"],
    ["models", k.models === null ? "all" : k.models.join(",")],
    ["rpm", k.rpm === null ? "account's" : String(k.rpm)],
  ];
}

async function keys(cmd: Extract<Command, { name: "keys-list" | "keys-create" | "keys-update" | "keys-delete" }>, ctx: CommandContext): Promise<number> {
  const { api, io, signal } = ctx;
  if (cmd.name === "keys-list") {
    const data = await api.keys.list({ signal });
    if (cmd.json) {
      io.stdout.write(json(data));
      return 0;
    }
    io.stdout.write(
      table(
        [
          "KEY_ID",
          { header: "NAME", priority: 7, min: 10 },
          { header: "PREFIX", priority: 6 },
          { header: "MODE", priority: 8 },
          { header: "SPEND", priority: 9, min: 12 },
          time("EXPIRES", 4),
          { header: "MODELS", priority: 5, min: 8 },
          { header: "RPM", priority: 3 },
          time("LAST_USED", 2),
        ],
        data.data.map((k) => [k.key_id, k.name, k.prefix, k.mode, spendText(k), k.expires_at ?? "never", k.models === null ? "all" : k.models.join(","), k.rpm === null ? "-" : String(k.rpm), k.last_used_at]),
        layoutOf(cmd, ctx),
      ),
    );
    return 0;
  }
  if (cmd.name === "keys-create") {
    // `mode` is D32's; sent only when asked for, so a plain create works on every gateway.
    const body: JsonBody<"createKey"> = { name: cmd.keyName, ...(cmd.mode ? { mode: cmd.mode } : {}), ...cmd.controls };
    const data = await api.keys.create(body, { signal });
    const confirmedTest = (data as { mode?: string }).mode === "test" || data.api_key.startsWith("gw_test_");
    if (cmd.mode === "test" && !confirmedTest) {
      // A gateway without test-mode keys (D32) ignores `mode` and makes a live key, which would spend real
      // money where the caller expects none: take it back and say so, never hand it out.
      await api.keys.delete(data.key_id);
      throw new GatewayError({ status: 0, code: "test_mode_unsupported", message: `this gateway does not make test-mode keys; the live key it made instead (${data.key_id}) was deleted` });
    }
    if (Object.keys(cmd.controls).length > 0 && (data as { spend_limit_period?: string }).spend_limit_period === undefined) {
      // Likewise a gateway without key controls (D34) ignores them: a key without its limits is not what was asked for.
      await api.keys.delete(data.key_id);
      throw new GatewayError({ status: 0, code: "key_controls_unsupported", message: `this gateway does not take key controls; the key it made without them (${data.key_id}) was deleted` });
    }
    if (cmd.json) {
      io.stdout.write(json(data));
    } else {
      io.stdout.write(keyValues([["key_id", data.key_id], ["name", data.name], ["mode", data.mode], ["api_key", data.api_key], ["created_at", data.created_at], ...controlRows(data)]));
    }
    io.stderr.write("The api_key is shown only this once: store it now (export GATEWAY_API_KEY=...).\n");
    return 0;
  }
  if (cmd.name === "keys-update") {
    const body = { ...(cmd.keyName !== null ? { name: cmd.keyName } : {}), ...cmd.controls };
    const data = await api.keys.update(cmd.id, body, { signal });
    io.stdout.write(cmd.json ? json(data) : keyValues([["key_id", data.key_id], ["name", data.name], ["mode", data.mode], ...controlRows(data)]));
    return 0;
  }
  const data = await api.keys.delete(cmd.id, { signal });
  io.stdout.write(cmd.json ? json(data) : `deleted ${data.key_id}\n`);
  return 0;
}

/** A budget as key-value rows (D44). */
function budgetRows(b: Budget): [string, string | null][] {
  return [
    ["budget_id", b.id],
    ["scope", budgetScopeText(b.scope)],
    ["amount", `${usd(b.amount_usd)} per ${b.period === "total" ? "total (one window)" : b.period}`],
    ["timezone", b.timezone],
    ["action", b.action],
    ["thresholds", b.thresholds.length === 0 ? "none" : b.thresholds.map((t) => `${t}%`).join(", ")],
    ["spent", usd(b.spent_usd)],
    ["remaining", usd(b.remaining_usd)],
    ["window", budgetWindow(b)],
    ["created_at", b.created_at],
  ];
}

/** "1.2 of 10 USD" (D44). */
function budgetSpend(b: Budget): string {
  return `${b.spent_usd} of ${usd(b.amount_usd)}`;
}

/**
 * `gateway budgets [list]|show ID|create|update ID|delete ID` (D44): the organization's budgets (its keys'
 * spend limits listed as key budgets). `create --scope org` names the organization acted for.
 */
async function budgets(cmd: Extract<Command, { name: "budgets-list" | "budgets-show" | "budgets-create" | "budgets-update" | "budgets-delete" }>, ctx: CommandContext): Promise<number> {
  const { api, io, signal } = ctx;
  switch (cmd.name) {
    case "budgets-list": {
      const data = await api.budgets.list({ signal });
      if (cmd.json) {
        io.stdout.write(json(data));
        return 0;
      }
      io.stdout.write(
        table(
          [
            "BUDGET_ID",
            { header: "SCOPE", priority: 9, min: 10 },
            { header: "PERIOD", priority: 8, min: 10 },
            { header: "ACTION", priority: 7 },
            { header: "SPENT", priority: 10, min: 12 },
            { header: "REMAINING", priority: 6 },
            { header: "WINDOW", priority: 5, min: 16 },
            { header: "THRESHOLDS", priority: 3 },
          ],
          data.data.map((b) => [
            b.id,
            budgetScopeText(b.scope),
            b.period === "total" ? "total" : `${b.period} ${b.timezone}`,
            b.action,
            budgetSpend(b),
            usd(b.remaining_usd),
            budgetWindow(b),
            b.thresholds.length === 0 ? "none" : b.thresholds.map((t) => `${t}%`).join(","),
          ]),
          layoutOf(cmd, ctx),
        ),
      );
      return 0;
    }
    case "budgets-show": {
      const data = await api.budgets.get(cmd.id, { signal });
      io.stdout.write(cmd.json ? json(data) : keyValues(budgetRows(data)));
      return 0;
    }
    case "budgets-create": {
      const scope = cmd.scope.type === "org" ? { type: "org" as const, id: await currentOrg(api, signal) } : cmd.scope;
      const data = await api.budgets.create({ scope, ...cmd.fields }, { signal });
      io.stdout.write(cmd.json ? json(data) : keyValues(budgetRows(data)));
      return 0;
    }
    case "budgets-update": {
      const data = await api.budgets.update(cmd.id, cmd.fields, { signal });
      io.stdout.write(cmd.json ? json(data) : keyValues(budgetRows(data)));
      return 0;
    }
    case "budgets-delete": {
      const data = await api.budgets.delete(cmd.id, { signal });
      io.stdout.write(cmd.json ? json(data) : `deleted ${data.id}\n`);
      return 0;
    }
  }
}

/** `gateway alert [--set USD | --off]`: reads or sets the low-balance alert (D34). */
async function alert(cmd: Extract<Command, { name: "alert" }>, { api, io, signal }: CommandContext): Promise<number> {
  const data =
    cmd.set === null && !cmd.off ? await api.billing.getAlert({ signal }) : await api.billing.setAlert({ low_balance_usd: cmd.off ? null : cmd.set }, { signal });
  io.stdout.write(
    cmd.json
      ? json(data)
      : keyValues([
          ["low_balance", data.low_balance_usd === null ? "off" : usd(data.low_balance_usd)],
          ["armed", data.low_balance_usd === null ? null : data.armed ? "yes" : "no (sent; armed again once the balance is back above)"],
          ["balance", usd(data.balance_usd)],
        ]),
  );
  return 0;
}

async function balance(cmd: Extract<Command, { name: "balance" }>, { api, io, signal }: CommandContext): Promise<number> {
  const data = await api.auth.me({ signal });
  io.stdout.write(
    cmd.json
      ? json(data)
      : keyValues([
          ["balance", usd(data.balance_usd)],
          ["tier", `${data.tier} (${data.tier_name})`],
          ["deposits", usd(data.total_deposits_usd)],
          ["email", data.email],
          ["user_id", data.user_id],
          ["org", orgLabel(data.org_id, data.org_name)],
          ["role", data.role],
        ]),
  );
  return 0;
}

/** `org_... (name)`, or the id alone for an organization without a name. */
function orgLabel(id: string, name: string | null): string {
  return name ? `${id} (${name})` : id;
}

/**
 * The organization a command acts for (D41): the client's `--org` / `GATEWAY_ORG`, else the one the
 * credential acts for by default (`GET /v1/auth/me`: a key's own, a session's personal one).
 */
async function currentOrg(api: Gateway, signal: AbortSignal): Promise<string> {
  return api.org ?? (await api.auth.me({ signal })).org_id;
}

/** An organization as key-value rows. */
function orgRows(o: Answer<"getOrg">): [string, string | number | null][] {
  return [
    ["id", o.id],
    ["name", o.name],
    ["role", o.role],
    ["balance", usd(o.balance_usd)],
    ["tier", `${o.tier} (${o.tier_name})`],
    ["deposits", usd(o.total_deposits_usd)],
    ["created_at", o.created_at],
  ];
}

/** `gateway orgs list|create NAME|show [ID]|rename NAME|delete ID` (D41). */
async function orgs(cmd: Extract<Command, { name: "orgs-list" | "orgs-create" | "orgs-show" | "orgs-rename" | "orgs-delete" }>, ctx: CommandContext): Promise<number> {
  const { api, io, signal } = ctx;
  switch (cmd.name) {
    case "orgs-list": {
      const data = await api.orgs.list({ signal });
      if (cmd.json) {
        io.stdout.write(json(data));
        return 0;
      }
      // The organization the commands act for is marked with `*`.
      const current = await currentOrg(api, signal);
      io.stdout.write(
        table(
          ["", "ORG_ID", { header: "NAME", priority: 9, min: 10 }, { header: "ROLE", priority: 8 }, { header: "BALANCE_USD", priority: 7 }, { header: "TIER", priority: 6 }, time("CREATED", 5)],
          data.data.map((o) => [o.id === current ? "*" : " ", o.id, o.name, o.role, o.balance_usd, o.tier, o.created_at]),
          layoutOf(cmd, ctx),
        ),
      );
      return 0;
    }
    case "orgs-create": {
      const data = await api.orgs.create({ name: cmd.orgName }, { signal });
      io.stdout.write(cmd.json ? json(data) : keyValues(orgRows(data)));
      io.stderr.write(`Act for it with --org ${data.id} (or export GATEWAY_ORG=${data.id}) and your session token, or give it a key: gateway --org ${data.id} keys create\n`);
      return 0;
    }
    case "orgs-show": {
      const data = await api.orgs.get(cmd.id ?? (await currentOrg(api, signal)), { signal });
      io.stdout.write(cmd.json ? json(data) : keyValues(orgRows(data)));
      return 0;
    }
    case "orgs-rename": {
      const data = await api.orgs.update(await currentOrg(api, signal), { name: cmd.orgName }, { signal });
      io.stdout.write(cmd.json ? json(data) : keyValues(orgRows(data)));
      return 0;
    }
    case "orgs-delete": {
      const data = await api.orgs.delete(cmd.id, { signal });
      io.stdout.write(cmd.json ? json(data) : `deleted ${data.id}\n`);
      return 0;
    }
  }
}

/** `gateway orgs members|invite EMAIL|role USER_ID ROLE|remove USER_ID|invites|revoke INVITE_ID`, for the current organization (D41). */
async function members(
  cmd: Extract<Command, { name: "orgs-members" | "orgs-invite" | "orgs-role" | "orgs-remove" | "orgs-invites" | "orgs-revoke" }>,
  ctx: CommandContext,
): Promise<number> {
  const { api, io, signal } = ctx;
  const org = await currentOrg(api, signal);
  switch (cmd.name) {
    case "orgs-members": {
      const data = await api.orgs.members.list(org, { signal });
      io.stdout.write(
        cmd.json
          ? json(data)
          : table(
              ["USER_ID", { header: "EMAIL", priority: 9, min: 12 }, { header: "ROLE", priority: 8 }, time("JOINED", 5)],
              data.data.map((m) => [m.user_id, m.email, m.role, m.created_at]),
              layoutOf(cmd, ctx),
            ),
      );
      return 0;
    }
    case "orgs-invite": {
      const data = await api.orgs.invites.create(org, { email: cmd.email, role: cmd.role }, { signal });
      io.stdout.write(
        cmd.json
          ? json(data)
          : keyValues([["invite_id", data.id], ["org_id", data.org_id], ["email", data.email], ["role", data.role], ["expires_at", data.expires_at], ["token", data.token]]),
      );
      io.stderr.write(`The token is shown only this once: send it to ${data.email}, who accepts with 'gateway invites accept TOKEN' signed in as that email (a session token) within 7 days.\n`);
      return 0;
    }
    case "orgs-role": {
      const data = await api.orgs.members.update(org, cmd.userId, { role: cmd.role }, { signal });
      io.stdout.write(cmd.json ? json(data) : `${data.user_id} (${data.email}) is now ${data.role} in ${data.org_id}\n`);
      return 0;
    }
    case "orgs-remove": {
      const data = await api.orgs.members.remove(org, cmd.userId, { signal });
      io.stdout.write(cmd.json ? json(data) : `removed ${data.user_id} from ${data.org_id}\n`);
      return 0;
    }
    case "orgs-invites": {
      const data = await api.orgs.invites.list(org, { signal });
      io.stdout.write(
        cmd.json
          ? json(data)
          : table(
              ["INVITE_ID", { header: "EMAIL", priority: 9, min: 12 }, { header: "ROLE", priority: 8 }, { header: "STATUS", priority: 7 }, time("EXPIRES", 6), time("CREATED", 5)],
              data.data.map((i) => [i.id, i.email, i.role, i.expired ? "expired" : "pending", i.expires_at, i.created_at]),
              layoutOf(cmd, ctx),
            ),
      );
      return 0;
    }
    case "orgs-revoke": {
      const data = await api.orgs.invites.revoke(org, cmd.inviteId, { signal });
      io.stdout.write(cmd.json ? json(data) : `revoked ${data.id}\n`);
      return 0;
    }
  }
}

/** `gateway invites accept TOKEN`: joins the invite's organization (a session token of the invited email, D41). */
async function acceptInvite(cmd: Extract<Command, { name: "invites-accept" }>, { api, io, signal }: CommandContext): Promise<number> {
  const data = await api.invites.accept(cmd.token, { signal });
  io.stdout.write(cmd.json ? json(data) : `joined ${data.org_id} as ${data.role} (${data.email})\n`);
  io.stderr.write(`Act for it with --org ${data.org_id} (or export GATEWAY_ORG=${data.org_id}).\n`);
  return 0;
}

/**
 * `gateway voices`: the voice library, which the API answers whole (thousands of voices, no paging): the
 * first `--limit` (default 50) are shown and a note on stderr says how many there are and how to see more.
 * `--json` prints the whole answer, or its first `--limit` voices when `--limit` or `--all` was given.
 */
async function voices(cmd: Extract<Command, { name: "voices" }>, ctx: CommandContext): Promise<number> {
  const { api, io, signal } = ctx;
  const data = await api.voices.list(cmd.provider ? { provider: cmd.provider } : {}, { signal });
  const shown = cmd.limit === null ? data.data : data.data.slice(0, cmd.limit);
  if (cmd.json) {
    io.stdout.write(json(cmd.limitGiven ? { ...data, data: shown } : data));
    return 0;
  }
  const about = (v: (typeof data.data)[number]) => (Array.isArray(v.description) ? v.description.join(", ") : (v.category ?? null));
  io.stdout.write(
    table(
      ["VOICE_ID", { header: "PROVIDER", priority: 5 }, { header: "NAME", priority: 9, min: 10 }, { header: "ABOUT", priority: 4, min: 10 }],
      shown.map((v) => [v.voice_id, v.provider, v.name, about(v)]),
      layoutOf(cmd, ctx),
    ),
  );
  if (shown.length < data.data.length) {
    io.stderr.write(`${shown.length} of ${data.data.length} voices: --limit N shows more, --all every one, --json all as JSON\n`);
  }
  return 0;
}
