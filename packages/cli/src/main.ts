#!/usr/bin/env node
/**
 * `gateway`: the media gateway from the command line (issue 13). Node 24 runs this file as it is
 * (type stripping, no build step): `node_modules/.bin/gateway <command>` in the repository after `npm ci`
 * (the packages/cli workspace's bin), `gateway <command>` after `npm link` (both through
 * `packages/cli/bin/gateway.js`, which keeps the compiled modules in Node's compile cache), `npx gateway`,
 * or `node packages/cli/src/main.ts <command>`.
 *
 * Reads the credential from `GATEWAY_API_KEY` (an API key `gw_...`, or a session token `sess_...`, which
 * the account and organization commands take, D41: `gateway login EMAIL` prints one), the address from `GATEWAY_URL` (default
 * http://127.0.0.1:8080) and the organization to act for from `--org` or `GATEWAY_ORG` (sent as
 * `X-Svc-Org`: with a session, any of the user's organizations, default the personal one; an API key
 * acts for its own only, and the gateway answers 404 `org_not_found` for another). Exit status: 0 done;
 * 1 the gateway refused (its D1 code and message are printed), could not be reached, or a job did not
 * succeed; 2 a usage mistake; 130 interrupted. The key is never printed: any text that would contain it
 * shows `[GATEWAY_API_KEY]` instead. Tables fit `COLUMNS` or the terminal's width (issue 42; format.ts),
 * and are not cut in a pipe.
 */
import { createInterface } from "node:readline/promises";
import { Writable } from "node:stream";
import { type Command, parseCommand, UsageError } from "./args.ts";
import type { CliIo } from "./commands.ts";
import { outputWidth } from "./format.ts";
import { helpText } from "./help.ts";

/**
 * The SDK and the commands, loaded once a command is to run (not for `--help` or a usage mistake), so that
 * nothing but the parser and the usage text is compiled before those are printed (issue 42: every command
 * starts in well under a second).
 */
async function loadCommands() {
  const [client, commands] = await Promise.all([import("../../client/src/index.ts"), import("./commands.ts")]);
  return { client, commands };
}
type Loaded = Awaited<ReturnType<typeof loadCommands>>;

/** The default address of a gateway started with `npm start` (D11). */
export const DEFAULT_URL = "http://127.0.0.1:8080";

/** The environment the CLI reads. */
export interface CliEnv {
  GATEWAY_API_KEY?: string;
  GATEWAY_URL?: string;
  /** The organization to act for when `--org` is not given (D41). */
  GATEWAY_ORG?: string;
  /** The width tables and the usage text fit, in columns (default: the terminal's; none in a pipe). */
  COLUMNS?: string;
}

/**
 * Runs one command line and resolves with the exit status; never throws. `signal` aborts a running
 * command (Ctrl-C): a followed job is left running and its id printed.
 */
export async function main(argv: readonly string[], env: CliEnv, io: CliIo, signal: AbortSignal = new AbortController().signal): Promise<number> {
  // The width tables fit (null: unbounded, in a pipe) and the usage text's (80 in a pipe).
  const width = outputWidth(env.COLUMNS, io.stdout);
  let cmd: Command;
  try {
    cmd = parseCommand(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    io.stderr.write(`error: ${err.message}\n\n${helpText(argv[0] ?? null, outputWidth(env.COLUMNS, io.stderr))}`);
    return 2;
  }
  if (cmd.name === "help") {
    io.stdout.write(helpText(cmd.topic, width));
    return 0;
  }
  if (cmd.name === "login") {
    const url = env.GATEWAY_URL?.trim() || DEFAULT_URL;
    if (!validUrl(url, io)) return 2;
    const loaded = await loadCommands();
    try {
      return await loaded.commands.login(cmd, { api: new loaded.client.Gateway({ baseUrl: url }), io, signal });
    } catch (err) {
      return report(loaded, err, io, url, signal, false);
    }
  }
  const key = env.GATEWAY_API_KEY?.trim();
  if (!key) {
    io.stderr.write("error: GATEWAY_API_KEY is not set: export the API key of your account (gw_..., from registration or 'gateway keys create') or a session token (sess_..., from 'gateway login EMAIL').\n");
    return 2;
  }
  const baseUrl = env.GATEWAY_URL?.trim() || DEFAULT_URL;
  if (!validUrl(baseUrl, io)) return 2;
  const org = cmd.org ?? (env.GATEWAY_ORG?.trim() || null);
  const safeIo = redacting(io, key);
  const loaded = await loadCommands();
  try {
    return await loaded.commands.runCommand(cmd, { api: new loaded.client.Gateway({ baseUrl, apiKey: key, org }), io: safeIo, signal, width });
  } catch (err) {
    return report(loaded, err, safeIo, baseUrl, signal, key.startsWith("sess_"));
  }
}

/** Prints a failure on stderr and gives its exit status; `session`: the credential is a session token. */
function report({ client }: Loaded, err: unknown, io: CliIo, baseUrl: string, signal: AbortSignal, session: boolean): number {
  const { APIConnectionError, APITimeoutError, GatewayError, RealtimeError } = client;
  if (signal.aborted) {
    io.stderr.write("interrupted\n");
    return 130;
  }
  if (err instanceof APIConnectionError && !(err instanceof APITimeoutError)) {
    // fetch reports an unreachable host as a TypeError whose cause carries the system code; a socket's
    // connection error (ws) carries it itself.
    const failure = err.cause instanceof Error ? err.cause : null;
    const cause = failure?.cause instanceof Error ? failure.cause : null;
    const code = (cause as { code?: string } | null)?.code ?? cause?.message ?? (failure as { code?: string } | null)?.code ?? "network error";
    io.stderr.write(`error: unreachable: cannot reach the gateway at ${shownUrl(baseUrl)} (${code})\n`);
    return 1;
  }
  if (err instanceof RealtimeError) {
    // A realtime socket that ended with an error once open (D42): its code, and the close code.
    io.stderr.write(`error: ${err.code}: ${err.message}${err.closeCode !== null ? ` (socket closed ${err.closeCode})` : ""}\n`);
    return 1;
  }
  if (err instanceof GatewayError) {
    const where = err.status > 0 ? ` (HTTP ${err.status}${err.requestId ? `, request ${err.requestId}` : ""})` : "";
    io.stderr.write(`error: ${err.code}: ${err.message}${where}\n`);
    if (err.retryAfterS !== null && err.status === 429) io.stderr.write(`retry after ${Math.ceil(err.retryAfterS)} s\n`);
    if (session && err.status === 401) io.stderr.write("A session token serves the account and organization commands only; generating needs an API key (gateway keys create).\n");
    return 1;
  }
  // A failure outside any call: a file that cannot be written, say.
  const message = err instanceof Error ? err.message : String(err);
  io.stderr.write(`error: ${(err as { code?: string }).code ?? "failed"}: ${message}\n`);
  return 1;
}

/** Whether `url` is an http(s) address; if not, says so on stderr. */
function validUrl(url: string, io: CliIo): boolean {
  if (/^https?:\/\/[^/]/i.test(url) && URL.canParse(url)) return true;
  io.stderr.write(`error: GATEWAY_URL must be an http:// or https:// address (got '${shownUrl(url)}')\n`);
  return false;
}

/** A URL as it may be shown: without user name or password. */
function shownUrl(url: string): string {
  try {
    const u = new URL(url);
    u.username = "";
    u.password = "";
    return u.toString().replace(/\/$/, "");
  } catch {
    return "(unreadable URL)";
  }
}

/** `io` with every occurrence of `secret` replaced in its text, so the key cannot reach the screen or a log (audio bytes pass as they are). */
function redacting(io: CliIo, secret: string): CliIo {
  const clean = (text: string) => text.replaceAll(secret, "[GATEWAY_API_KEY]");
  return {
    ...(io.stdin ? { stdin: io.stdin } : {}),
    ...(io.audioOut ? { audioOut: io.audioOut } : {}),
    stdout: {
      isTTY: io.stdout.isTTY,
      get columns() {
        return io.stdout.columns;
      },
      write: (text) => io.stdout.write(clean(text)),
    },
    stderr: {
      isTTY: io.stderr.isTTY,
      // Read at each redraw: the terminal may be resized while a job runs.
      get columns() {
        return io.stderr.columns;
      },
      write: (text) => io.stderr.write(clean(text)),
    },
  };
}

/**
 * A secret from the process's stdin: typed at `prompt` without echo on a terminal (Ctrl-C exits 130),
 * else all of stdin with one trailing newline dropped (a pipe, a file, or nothing: "").
 */
async function readSecret(prompt: string): Promise<string> {
  if (!process.stdin.isTTY) {
    let text = "";
    for await (const chunk of process.stdin) text += String(chunk);
    return text.replace(/\r?\n$/, "");
  }
  process.stderr.write(prompt);
  // Echo goes to a sink: what is typed is not shown.
  const rl = createInterface({ input: process.stdin, output: new Writable({ write: (_chunk, _encoding, done) => done() }), terminal: true });
  rl.on("SIGINT", () => {
    process.stderr.write("\n");
    process.exit(130);
  });
  try {
    return await rl.question("");
  } finally {
    rl.close();
    process.stderr.write("\n");
  }
}

/** The process entry: runs `process.argv` with the process's streams and sets the exit status. */
export async function runCli(): Promise<void> {
  const controller = new AbortController();
  // The first Ctrl-C stops the command cleanly (a followed job keeps running); a second one exits at once.
  process.once("SIGINT", () => {
    controller.abort(new Error("interrupted"));
    process.once("SIGINT", () => process.exit(130));
  });
  // Output into a pipe that closes early (`gateway voices | head`) ends the command quietly, as for any
  // Unix tool, instead of a stack trace for EPIPE.
  process.stdout.on("error", (err: NodeJS.ErrnoException) => {
    if (err.code !== "EPIPE") throw err;
    process.exit(process.exitCode ?? 0);
  });
  const io: CliIo = {
    stdout: {
      isTTY: process.stdout.isTTY === true,
      get columns() {
        return process.stdout.columns;
      },
      write: (text) => void process.stdout.write(text),
    },
    stderr: {
      isTTY: process.stderr.isTTY === true,
      // The terminal's width now (Node updates it on SIGWINCH), so a resized terminal gets lines that fit.
      get columns() {
        return process.stderr.columns;
      },
      write: (text) => void process.stderr.write(text),
    },
    readSecret,
    stdin: process.stdin,
    audioOut: {
      isTTY: process.stdout.isTTY === true,
      write: (bytes) =>
        new Promise<void>((resolve, reject) => {
          process.stdout.write(bytes, (err) => (err ? reject(err) : resolve()));
        }),
    },
  };
  process.exitCode = await main(process.argv.slice(2), process.env, io, controller.signal);
}

if (import.meta.main) await runCli();
