/**
 * `gateway speak --stream` without a text: standard input spoken through the realtime speech socket (D42,
 * docs/realtime-speech.md) as it arrives. Each line is sent when it is read, with `flush` (a line is a
 * natural chunk: it is spoken at once rather than waiting for the chunk schedule), and the audio is written
 * to the output (`-o FILE`, or standard output when it is not a terminal) as it comes. At the end the
 * socket's usage record (`GET /v1/requests/{id}`, the id the `101` answer gave; one record per socket) gives
 * the characters billed and the cost, printed on stderr with the balance.
 *
 * The socket is a `ws` WebSocket (the `ws` package, the key as `Authorization: Bearer`), through the SDK's
 * `client.realtime.speech`. While standard input is quiet the socket is kept open (a keep-alive before the
 * gateway's inactivity timeout); the session time limit (`REALTIME_MAX_SESSION_S`) still ends it.
 */
import { createWriteStream } from "node:fs";
import { rm } from "node:fs/promises";
import { createInterface } from "node:readline";
import type { Readable } from "node:stream";
import { once } from "node:events";
import WebSocket from "ws";
import type { Answer, Gateway, SpeechSocketFormat } from "../../client/src/index.ts";
import { extensionOfFormat, usd } from "./format.ts";

/** Idle time of standard input after which a keep-alive is sent, ms (the socket's inactivity timeout is 20 s). */
export const KEEPALIVE_AFTER_MS = 10_000;

/**
 * Characters sent and not yet spoken (by the audio's alignment) past which standard input waits: a fast
 * writer (`cat book.txt`, `yes`) is read at the pace of the speech instead of piling text up in the
 * socket's buffers.
 */
export const MAX_UNSPOKEN_CHARS = 2000;

/** How long standard input waits for audio before reading on anyway (a source without alignment), ms. */
const STALL_MS = 15_000;

/** Where the audio goes: a file, or the process's standard output. */
export interface AudioSink {
  /** Whether it is a terminal (audio is then not written there). */
  isTTY: boolean;
  /** Writes bytes; resolves once they were taken (back-pressure). */
  write(bytes: Uint8Array): Promise<void>;
}

/** What the command reads and writes. */
export interface StreamIo {
  stdout: { write(text: string): void };
  stderr: { write(text: string): void };
  /** Standard input, read line by line. */
  stdin?: Readable;
  /** Standard output for bytes (the audio, without `-o`). */
  audioOut?: AudioSink;
}

/** The options of `speak --stream` that matter here. */
export interface SpeakStreamOptions {
  voice: string;
  model: string | null;
  format: string | null;
  output: string | null;
  json: boolean;
  /** `X-Svc-Simulate` for the simulator (D10). */
  headers?: Record<string, string>;
}

/** A usage record of `GET /v1/requests`. */
type UsageRecord = Answer<"listRequests">["data"][number];

/** A file written as the audio comes. */
async function fileSink(path: string): Promise<AudioSink & { close(): Promise<void> }> {
  const out = createWriteStream(path);
  await once(out, "open");
  return {
    isTTY: false,
    write: async (bytes) => {
      if (!out.write(bytes)) await once(out, "drain");
    },
    close: () => new Promise((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve()))),
  };
}

/**
 * The socket's usage record once settled: by its id (`X-Svc-Request-Id` of the `101`, `request_id` of the
 * final message) when the gateway named it, else the newest realtime speech record; null when none shows
 * within about 2 s.
 */
async function socketRecord(api: Gateway, requestId: string | null, signal: AbortSignal): Promise<UsageRecord | null> {
  for (let i = 0; i < 20; i++) {
    const rec = requestId !== null ? await api.requests.get(requestId, { signal }) : (await api.requests.list({ limit: 5 }, { signal })).data.find((r) => r.realtime === true && r.kind === "speech");
    if (rec !== undefined && rec.status !== "processing") return rec;
    await new Promise((r) => setTimeout(r, 100));
  }
  return null;
}

/**
 * Runs `speak --stream` reading standard input: resolves with the exit status (0, or 2 for a usage
 * mistake). Throws the SDK's `APIError` of a refusal before the socket opens (the model, the voice, the
 * balance, the limits), and its `RealtimeError` when the socket ended with an error (after the summary of
 * what was billed is printed).
 */
export async function speakStream(opts: SpeakStreamOptions, api: Gateway, io: StreamIo, signal: AbortSignal): Promise<number> {
  const stdin = io.stdin;
  if (stdin === undefined) {
    io.stderr.write("error: speak --stream without a text reads standard input, and there is none here\n");
    return 2;
  }
  const toStdout = opts.output === null && io.audioOut !== undefined && !io.audioOut.isTTY;
  if (toStdout && opts.json) {
    io.stderr.write("error: --json with speak --stream needs -o FILE: without it the audio goes to standard output\n");
    return 2;
  }
  const path = toStdout ? null : (opts.output ?? `speech.${extensionOfFormat(opts.format)}`);
  // The socket opens first: a refusal (model, voice, balance, limits) leaves no file behind.
  const socket = await api.realtime.speech(
    { voiceId: opts.voice, ...(opts.model ? { modelId: opts.model } : {}), ...(opts.format ? { outputFormat: opts.format as SpeechSocketFormat } : {}) },
    { WebSocket, signal, ...(opts.headers ? { headers: opts.headers } : {}) },
  );
  const file = path === null ? null : await fileSink(path);
  const sink: AudioSink = file ?? (io.audioOut as AudioSink);

  // Standard input, line by line, as it arrives; a keep-alive while it is quiet.
  const lines = createInterface({ input: stdin, crlfDelay: Infinity });
  let lastSent = Date.now();
  const keepAlive = setInterval(() => {
    if (Date.now() - lastSent < KEEPALIVE_AFTER_MS) return;
    socket.keepAlive();
    lastSent = Date.now();
  }, 1000);
  const stopReading = () => {
    clearInterval(keepAlive);
    lines.close();
    // A pipe left open by the writer must not keep the process alive once the socket is over.
    stdin.pause();
    (stdin as Readable & { unref?: () => void }).unref?.();
  };
  // Back-pressure: characters sent, characters the audio's alignment says were spoken, when audio last came.
  let sentChars = 0;
  let spokenChars = 0;
  let lastAudio = Date.now();
  const reading = (async () => {
    try {
      for await (const line of lines) {
        if (socket.isClosed) break;
        const text = line.trim().normalize("NFC");
        if (text === "") continue;
        // Waiting here pauses standard input (readline stops reading past its small queue).
        while (!socket.isClosed && sentChars - spokenChars > MAX_UNSPOKEN_CHARS && Date.now() - lastAudio < STALL_MS) await new Promise((r) => setTimeout(r, 50));
        if (socket.isClosed) break;
        // The trailing space keeps the words of consecutive lines apart (and is billed, one character).
        socket.send(`${text} `, { flush: true });
        sentChars += Array.from(text).length + 1;
        lastSent = Date.now();
      }
      socket.end();
    } finally {
      clearInterval(keepAlive);
    }
  })();
  void socket.closed.then(stopReading);

  let bytes = 0;
  let failure: unknown = null;
  try {
    for await (const ev of socket) {
      if (ev.type !== "audio") continue;
      spokenChars += ev.alignment?.chars.length ?? 0;
      lastAudio = Date.now();
      await sink.write(ev.audio);
      bytes += ev.audio.length;
    }
  } catch (err) {
    failure = err;
  } finally {
    stopReading();
    await reading.catch(() => {});
    await file?.close();
    // A socket that failed before any audio leaves no empty file behind.
    if (failure !== null && bytes === 0 && path !== null) await rm(path, { force: true });
  }
  if (signal.aborted) throw signal.reason;

  const record = await socketRecord(api, socket.requestId, signal).catch(() => null);
  const me = await api.auth.me({ signal }).catch(() => null);
  const result = {
    files: path === null ? [] : [path],
    bytes,
    request_id: record?.id ?? null,
    model: record?.model ?? opts.model,
    characters: record?.units?.characters ?? null,
    cost_usd: record?.cost_usd ?? null,
    balance_usd: me?.balance_usd ?? null,
    close_code: (await socket.closed).code,
  };
  if (opts.json) {
    io.stdout.write(JSON.stringify(result, null, 2) + "\n");
  } else {
    if (path !== null) io.stdout.write(`${path}\n`);
    io.stderr.write(`${result.model ?? "speech"}, ${result.characters ?? "?"} characters: cost ${usd(result.cost_usd)}, balance ${usd(result.balance_usd)}\n`);
  }
  if (failure !== null) throw failure;
  return 0;
}
