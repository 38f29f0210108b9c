/**
 * A WebSocket client for the realtime socket tests (D42, D43), on `ws` (the package the ElevenLabs SDK and
 * LiveKit's plugin use): connects, records every JSON message and the close, and waits for either.
 */
import assert from "node:assert/strict";
import WebSocket from "ws";
import { ADMIN_TOKEN, type TestGateway } from "./gateway.ts";

/** A connected test socket: what it received, and how it ended. */
export interface TestSocket {
  ws: WebSocket;
  /** Every JSON message received, in order. */
  messages: Record<string, unknown>[];
  /** The close code and reason once closed, else null. */
  closed: { code: number; reason: string } | null;
  /** The headers of the `101 Switching Protocols` answer. */
  upgradeHeaders: Record<string, string | string[] | undefined>;
  send(message: unknown): void;
  /** Resolves with the close (rejects after `timeoutMs`). */
  waitClose(timeoutMs?: number): Promise<{ code: number; reason: string }>;
  /** Resolves once a message matching `pred` arrived (rejects at the close or after `timeoutMs`). */
  waitFor(pred: (m: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** The decoded `audio` of every audio message (of `contextId` when given), concatenated. */
  audio(contextId?: string): Buffer;
}

/** The answer to an upgrade the server refused: its status and JSON body. */
export interface RefusedUpgrade {
  status: number;
  body: unknown;
}

/**
 * Connects to `url` (`ws://...`) with `headers`. Resolves once open, or with the HTTP refusal when the
 * server answered the upgrade with a plain HTTP answer.
 */
export function connect(url: string, headers: Record<string, string> = {}): Promise<TestSocket | RefusedUpgrade> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    const messages: Record<string, unknown>[] = [];
    const waiters: (() => void)[] = [];
    const wake = () => {
      for (const w of waiters.splice(0)) w();
    };
    const socket: TestSocket = {
      ws,
      messages,
      closed: null,
      upgradeHeaders: {},
      send: (m) => ws.send(typeof m === "string" ? m : JSON.stringify(m)),
      waitClose: (timeoutMs = 30_000) =>
        new Promise((res, rej) => {
          if (socket.closed !== null) return res(socket.closed);
          const t = setTimeout(() => rej(new Error(`socket not closed after ${timeoutMs} ms; messages: ${JSON.stringify(messages.slice(-3)).slice(0, 500)}`)), timeoutMs);
          ws.once("close", (code, reason) => {
            clearTimeout(t);
            res({ code, reason: reason.toString() });
          });
        }),
      waitFor: (pred, timeoutMs = 30_000) =>
        new Promise((res, rej) => {
          const check = (): boolean => {
            const found = messages.find(pred);
            if (found) {
              res(found);
              return true;
            }
            if (socket.closed !== null) {
              rej(new Error(`closed (${socket.closed.code} ${socket.closed.reason}) before the message; got ${JSON.stringify(messages.slice(-3)).slice(0, 500)}`));
              return true;
            }
            return false;
          };
          if (check()) return;
          const t = setTimeout(() => rej(new Error(`no such message after ${timeoutMs} ms; got ${JSON.stringify(messages.slice(-3)).slice(0, 500)}`)), timeoutMs);
          const loop = () => {
            if (check()) clearTimeout(t);
            else waiters.push(loop);
          };
          waiters.push(loop);
        }),
      audio: (contextId) =>
        Buffer.concat(
          messages
            .filter((m) => typeof m.audio === "string" && (contextId === undefined || m.contextId === contextId))
            .map((m) => Buffer.from(m.audio as string, "base64")),
        ),
    };
    ws.on("message", (data) => {
      messages.push(JSON.parse(data.toString()) as Record<string, unknown>);
      wake();
    });
    ws.on("close", (code, reason) => {
      socket.closed = { code, reason: reason.toString() };
      wake();
    });
    ws.once("upgrade", (res) => {
      socket.upgradeHeaders = res.headers;
    });
    ws.once("open", () => resolve(socket));
    ws.once("unexpected-response", (_req, res) => {
      let body = "";
      res.on("data", (d: Buffer) => (body += d.toString()));
      res.on("end", () => {
        let json: unknown = body;
        try {
          json = JSON.parse(body);
        } catch {
          // not JSON
        }
        resolve({ status: res.statusCode ?? 0, body: json });
      });
    });
    ws.once("error", (err) => {
      if (ws.readyState === WebSocket.CLOSED && socket.closed === null) reject(err);
    });
  });
}

/** `connect` for a test that expects the socket to open. @throws when the server refused the upgrade. */
export async function open(url: string, headers: Record<string, string> = {}): Promise<TestSocket> {
  const s = await connect(url, headers);
  if ("status" in s) throw new Error(`upgrade refused: ${s.status} ${JSON.stringify(s.body)}`);
  return s;
}

/** `connect` for a test that expects a refusal. @throws when the socket opened. */
export async function refused(url: string, headers: Record<string, string> = {}): Promise<RefusedUpgrade> {
  const s = await connect(url, headers);
  if (!("status" in s)) {
    s.ws.close();
    throw new Error("the upgrade was accepted");
  }
  return s;
}

/** The `ws://` form of an `http://` base URL. */
export function wsUrl(httpUrl: string, path: string): string {
  return `${httpUrl.replace(/^http/, "ws")}${path}`;
}

/** A fresh organization of a new user, funded with `usd` by the operator (D41, D9), and an API key of it. */
export async function fundedOrg(gw: TestGateway, usd: number): Promise<{ org_id: string; api_key: string; session_token: string }> {
  const u = await gw.register();
  const org = await gw.request("POST", "/v1/orgs", { token: u.session_token, body: { name: `realtime-${Date.now()}` } });
  assert.equal(org.status, 201, JSON.stringify(org.json));
  const orgId = org.json.id as string;
  if (usd > 0) {
    const dep = await gw.request("POST", `/v1/admin/orgs/${orgId}/deposits`, { token: ADMIN_TOKEN, body: { amount_usd: usd } });
    assert.equal(dep.status, 200, JSON.stringify(dep.json));
  }
  const key = await gw.request("POST", "/v1/auth/keys", { token: u.session_token, headers: { "x-svc-org": orgId }, body: { name: "realtime" } });
  assert.equal(key.status, 201, JSON.stringify(key.json));
  return { org_id: orgId, api_key: key.json.api_key as string, session_token: u.session_token };
}
