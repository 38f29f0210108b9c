/**
 * The ElevenLabs dialect's voice-creation routes (D36): `POST /elevenlabs/v1/voices/add` (the SDK's
 * `voices.ivc.create`, a multipart upload) and `/elevenlabs/v1/text-to-voice/*` answer 404
 * `{"detail": {"status": "endpoint_not_supported", "message": <the native route>}}` whatever the body
 * (multipart, JSON, empty, garbage, larger than the body limit, never ending), before any of it is read or
 * held (the body budget never sees it), and charge nothing; the connection stays usable.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ElevenLabsClient, ElevenLabsError } from "@elevenlabs/elevenlabs-js";
import { usdToMicros } from "../../src/money.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../helpers/gateway.ts";

const CLONE = "POST /v1/audio/voice-clone";
const DESIGN = "POST /v1/audio/voice-design";

/** A multipart form as the SDK's `voices.ivc.create` sends it: a name and audio files. */
function cloneForm(fileBytes: number): FormData {
  const form = new FormData();
  form.append("name", "My voice");
  form.append("files", new Blob([new Uint8Array(fileBytes).fill(7)], { type: "audio/mpeg" }), "sample.mp3");
  return form;
}

for (const backend of BACKENDS) describe(`ElevenLabs dialect voice creation: 404 endpoint_not_supported whatever the body (D36), ${backend.name}`, { skip: backend.skip }, () => {
  let gw: TestGateway;
  let user: { user_id: string; org_id: string; api_key: string };
  let el: ElevenLabsClient;

  async function balanceOf(): Promise<number> {
    const r = await gw.request("GET", "/v1/auth/me", { token: user.api_key });
    const m = usdToMicros(r.json.balance_usd as string);
    assert.ok(m !== null);
    return m;
  }
  async function ledgerCount(): Promise<number> {
    return (await gw.services.db.kysely.selectFrom("ledger_entries").select("id").where("account_id", "=", user.org_id).execute()).length;
  }
  async function usageCount(): Promise<number> {
    return (await gw.services.db.kysely.selectFrom("usage_records").select("id").where("account_id", "=", user.org_id).execute()).length;
  }
  /** Asserts `r` is the D36 answer naming `native`. */
  async function assertUnsupported(r: Response, native: string, what: string): Promise<void> {
    assert.equal(r.status, 404, what);
    assert.match(r.headers.get("content-type") ?? "", /^application\/json/, what);
    const body = (await r.json()) as { detail: { status: string; message: string } };
    assert.deepEqual(Object.keys(body), ["detail"], what);
    assert.equal(body.detail.status, "endpoint_not_supported", what);
    assert.ok(body.detail.message.includes(native), `${what}: ${body.detail.message}`);
  }
  /** A raw dialect call with the key in `xi-api-key`. */
  function call(method: string, path: string, init: { headers?: Record<string, string>; body?: RequestInit["body"] } = {}): Promise<Response> {
    return fetch(`${gw.url}/elevenlabs${path}`, { method, headers: { "xi-api-key": user.api_key, ...(init.headers ?? {}) }, body: init.body ?? null });
  }

  before(async () => {
    gw = await startGateway(backend.name);
    user = await gw.register();
    await gw.deposit(user.user_id, 20);
    assert.equal((await gw.request("PUT", `/v1/admin/users/${user.user_id}/limits`, { token: ADMIN_TOKEN, body: { rpm: 100_000 } })).status, 200);
    el = new ElevenLabsClient({ baseUrl: `${gw.url}/elevenlabs`, apiKey: user.api_key });
  });
  after(async () => {
    await gw?.close();
  });

  test("the SDK's voices.ivc.create (multipart) and textToVoice.design reject with the 404, nothing charged", async () => {
    const [balance, entries, records] = [await balanceOf(), await ledgerCount(), await usageCount()];
    const sample = new File([new Uint8Array(64 * 1024).fill(1)], "sample.mp3", { type: "audio/mpeg" });
    let err: unknown = null;
    try {
      await el.voices.ivc.create({ name: "My voice", files: [sample], description: "cloned through the SDK" });
    } catch (e) {
      err = e;
    }
    assert.ok(err instanceof ElevenLabsError, `an ElevenLabsError: ${String(err)}`);
    assert.equal(err.statusCode, 404);
    const detail = (err.body as { detail: { status: string; message: string } }).detail;
    assert.equal(detail.status, "endpoint_not_supported");
    assert.ok(detail.message.includes(CLONE), detail.message);

    err = null;
    try {
      await el.textToVoice.design({ voiceDescription: "A calm narrator with a low voice, speaking slowly." });
    } catch (e) {
      err = e;
    }
    assert.ok(err instanceof ElevenLabsError, `an ElevenLabsError: ${String(err)}`);
    assert.equal(err.statusCode, 404);
    assert.equal((err.body as { detail: { status: string } }).detail.status, "endpoint_not_supported");
    assert.ok((err.body as { detail: { message: string } }).detail.message.includes(DESIGN));

    assert.equal(await balanceOf(), balance);
    assert.equal(await ledgerCount(), entries);
    assert.equal(await usageCount(), records);
  });

  test("raw calls: multipart, JSON, empty, garbage, any content type, any method; nothing charged", async () => {
    const [balance, entries, records] = [await balanceOf(), await ledgerCount(), await usageCount()];
    const bodies: { name: string; headers?: Record<string, string>; body?: () => RequestInit["body"] }[] = [
      { name: "multipart", body: () => cloneForm(10_000) },
      { name: "JSON", headers: { "content-type": "application/json" }, body: () => JSON.stringify({ name: "My voice", voice_description: "calm" }) },
      { name: "empty JSON", headers: { "content-type": "application/json" }, body: () => "" },
      { name: "no body" },
      { name: "garbage JSON", headers: { "content-type": "application/json" }, body: () => "{not json" },
      { name: "garbage, no content type", body: () => new Uint8Array([0xff, 0x00, 0x7b, 0x22]) },
      { name: "multipart without a boundary", headers: { "content-type": "multipart/form-data" }, body: () => "--x\r\nbroken" },
      { name: "multipart, truncated", headers: { "content-type": "multipart/form-data; boundary=abc" }, body: () => '--abc\r\nContent-Disposition: form-data; name="files"; filename="a.mp3"\r\n\r\nxyz' },
      { name: "an unknown content type", headers: { "content-type": "application/x-unknown" }, body: () => "whatever" },
    ];
    const paths: [string, string][] = [
      ["/v1/voices/add", CLONE],
      ["/v1/text-to-voice", DESIGN],
      ["/v1/text-to-voice/create-previews", DESIGN],
      ["/v1/text-to-voice/design", DESIGN],
      ["/v1/text-to-voice/some_generated_id/remix?output_format=mp3_44100_128", DESIGN],
    ];
    for (const [path, native] of paths) {
      for (const b of bodies) {
        await assertUnsupported(await call("POST", path, { ...(b.headers ? { headers: b.headers } : {}), body: b.body?.() ?? null }), native, `POST ${path}, ${b.name}`);
      }
    }
    for (const method of ["PUT", "PATCH", "DELETE"]) await assertUnsupported(await call(method, "/v1/voices/add", { body: cloneForm(100) }), CLONE, `${method} voices/add`);
    await assertUnsupported(await call("GET", "/v1/text-to-voice/some_generated_id/stream"), DESIGN, "GET text-to-voice stream");
    // The voice route keeps its own answer for a GET (a voice id "add" names no voice).
    const voice = await call("GET", "/v1/voices/add");
    assert.equal(voice.status, 404);
    assert.notEqual(((await voice.json()) as { detail: { status: string } }).detail.status, "endpoint_not_supported");
    // Anything else is still the dialect's plain not-found.
    const other = await call("POST", "/v1/text-to-voiceless", { headers: { "content-type": "application/json" }, body: "{}" });
    assert.equal(other.status, 404);
    assert.equal(((await other.json()) as { detail: { status: string } }).detail.status, "not_found");

    assert.equal(await balanceOf(), balance);
    assert.equal(await ledgerCount(), entries);
    assert.equal(await usageCount(), records);
  });

  test("the key is checked first: no key, 401 whatever the body", async () => {
    const r = await fetch(`${gw.url}/elevenlabs/v1/voices/add`, { method: "POST", body: cloneForm(100) });
    assert.equal(r.status, 401);
    assert.equal(((await r.json()) as { detail: { status: string } }).detail.status, "auth_error");
  });

  test("a body past the body limit, or one that never ends, is answered without being read or held", async () => {
    const budget = gw.app.bodyBudget;
    const peak = budget.peak;
    // Over the 25 MB body limit: the 404, not a 413; no byte of it counted in the body budget.
    const big = await call("POST", "/v1/voices/add", { body: cloneForm(gw.services.config.bodyLimitBytes + 1024 * 1024) });
    await assertUnsupported(big, CLONE, "a body past the limit");
    assert.equal(budget.peak, peak, "the body budget never held the body");
    assert.equal(budget.inUse, 0);

    // A chunked upload that sends one part and then stalls: the answer comes while the body is still open.
    let pull = 0;
    const upload = new AbortController();
    const stalled = new ReadableStream<Uint8Array>({
      pull(controller) {
        pull += 1;
        if (pull === 1) controller.enqueue(new TextEncoder().encode('--abc\r\nContent-Disposition: form-data; name="name"\r\n\r\nMy voice\r\n'));
        return new Promise(() => {});
      },
    });
    const r = await fetch(`${gw.url}/elevenlabs/v1/voices/add`, {
      method: "POST",
      headers: { "xi-api-key": user.api_key, "content-type": "multipart/form-data; boundary=abc" },
      body: stalled,
      duplex: "half",
      signal: AbortSignal.any([upload.signal, AbortSignal.timeout(5000)]),
    } as RequestInit);
    await assertUnsupported(r, CLONE, "a stalled chunked body");
    upload.abort();
    assert.equal(budget.peak, peak);

    // The gateway still answers (the discarded bodies left nothing behind).
    const ok = await call("GET", "/v1/models");
    assert.equal(ok.status, 200);
    await ok.arrayBuffer();
  });
});
