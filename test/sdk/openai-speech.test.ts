/**
 * The official `openai` package pointed at a running gateway: `audio.speech.create` returns an MP3 that
 * decodes to a positive duration (music-metadata).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { parseBuffer } from "music-metadata";
import OpenAI from "openai";
import { DEMO_ALPHA_VOICE_ID, DEMO_BETA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";

describe("openai SDK against the gateway", () => {
  let gw: TestGateway;
  let client: OpenAI;
  before(async () => {
    gw = await startGateway("sqlite");
    const u = await gw.register();
    client = new OpenAI({ apiKey: u.api_key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  });
  after(async () => {
    await gw?.close();
  });

  test("audio.speech.create returns a playable MP3", async () => {
    const response = await client.audio.speech.create({
      model: "alpha-multilingual-v2",
      voice: DEMO_ALPHA_VOICE_ID,
      input: "The quick brown fox jumps over the lazy dog.",
    });
    assert.equal(response.headers.get("content-type"), "audio/mpeg");
    assert.equal(response.headers.get("x-svc-model"), "alpha-multilingual-v2");
    const bytes = Buffer.from(await response.arrayBuffer());
    const meta = await parseBuffer(bytes, { mimeType: "audio/mpeg" });
    assert.equal(meta.format.codec, "MPEG 1 Layer 3");
    assert.ok((meta.format.duration ?? 0) > 0);
  });

  test("a beta model with a beta voice through the SDK", async () => {
    const response = await client.audio.speech.create({
      model: "beta-speech-turbo",
      voice: DEMO_BETA_VOICE_ID,
      input: "Beta voices work too.",
    });
    const meta = await parseBuffer(Buffer.from(await response.arrayBuffer()), { mimeType: "audio/mpeg" });
    assert.ok((meta.format.duration ?? 0) > 0);
  });

  test("errors surface as SDK errors with the gateway's code", async () => {
    await assert.rejects(
      client.audio.speech.create({ model: "not-a-model", voice: DEMO_ALPHA_VOICE_ID, input: "x" }),
      (err: unknown) => err instanceof OpenAI.BadRequestError && err.code === "not_a_tts_model",
    );
  });
});
