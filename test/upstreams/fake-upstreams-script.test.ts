/**
 * `npm run fake-upstreams` starts the fal, bfl, openai-images, elevenlabs (two accounts), minimax and
 * openai-audio fakes and writes the UPSTREAMS file that points a gateway at them; that file is a valid configuration, each fake answers a submit in its
 * provider's shape, and on SIGTERM the script reports what each fake received.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { loadConfig } from "../../src/config.ts";
import { loadUpstreams } from "../../src/upstreams/config.ts";

test("fake-upstreams writes a working UPSTREAMS file and every fake answers", async () => {
  const dir = mkdtempSync(join(tmpdir(), "gw-fakes-"));
  const file = join(dir, "upstreams.json");
  const child = spawn(process.execPath, ["scripts/fake-upstreams.ts"], {
    env: { ...process.env, FAKE_FAL_PORT: "0", FAKE_BFL_PORT: "0", FAKE_OPENAI_PORT: "0", FAKE_ELEVENLABS_PORT: "0", FAKE_ELEVENLABS_BACKUP_PORT: "0", FAKE_MINIMAX_PORT: "0", FAKE_OPENAI_AUDIO_PORT: "0", FAKE_KEY: "k-123", FAKE_UPSTREAMS_FILE: file },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout.on("data", (d: Buffer) => {
    out += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  try {
    await new Promise<void>((resolve, reject) => {
      child.stdout.on("data", () => {
        if (out.includes("npm start")) resolve();
      });
      void exited.then((code) => reject(new Error(`exited ${code}: ${out}`)));
    });
    assert.match(out, new RegExp(`UPSTREAMS=${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} npm start`));
    const sources = loadUpstreams(loadConfig({ UPSTREAMS: file, FAKE_KEY: "k-123" }));
    assert.deepEqual(sources.map((s) => [s.protocol, s.families]), [
      ["fal", ["imgA", "imgB", "vidA", "vidB", "vidC", "vidD"]],
      ["bfl", ["imgB"]],
      ["openai", ["imgC"]],
      ["elevenlabs", ["alpha"]],
      ["elevenlabs", ["alpha"]],
      ["minimax", ["beta", "vidC"]],
      ["openai", ["transcribe", "understand"]],
      ["elevenlabs", ["transcribe"]],
    ]);
    const [fal, bfl, openai, elevenlabs, , minimax, openaiAudio] = sources;
    const post = (url: string, headers: Record<string, string>, body: unknown) =>
      fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });

    const falSubmit = await post(`${fal.baseUrl}/fal-ai/recraft/v3/text-to-image`, { authorization: "Key k-123" }, { prompt: "x" });
    assert.equal(falSubmit.status, 200);
    assert.equal(((await falSubmit.json()) as { status?: string }).status, "IN_QUEUE");

    const bflSubmit = await post(`${bfl.baseUrl}/v1/flux-2-pro`, { "x-key": "k-123" }, { prompt: "x", width: 1024, height: 1024 });
    assert.equal(bflSubmit.status, 200);
    const bflBody = (await bflSubmit.json()) as { id?: string; polling_url?: string };
    assert.ok(bflBody.id && bflBody.polling_url);

    const image = await post(`${openai.baseUrl}/images/generations`, { authorization: "Bearer k-123" }, { model: "gpt-image-2", prompt: "x", quality: "low" });
    assert.equal(image.status, 200);
    const imageBody = (await image.json()) as { data?: { b64_json?: string }[] };
    assert.ok(imageBody.data?.[0]?.b64_json);

    const speech = await post(`${elevenlabs.baseUrl}/v1/text-to-speech/21m00Tcm4TlvDq8ikWAM?output_format=mp3_44100_128`, { "xi-api-key": "k-123" }, { text: "hi", model_id: "eleven_v3" });
    assert.equal(speech.status, 200);
    assert.equal(speech.headers.get("content-type"), "audio/mpeg");
    const voices = await post(`${minimax.baseUrl}/v1/get_voice`, { authorization: "Bearer k-123" }, { voice_type: "system" });
    const voicesBody = (await voices.json()) as { system_voice?: unknown[]; base_resp?: { status_code?: number } };
    assert.equal(voicesBody.base_resp?.status_code, 0);
    assert.ok((voicesBody.system_voice?.length ?? 0) > 100);
    const understood = await post(`${openaiAudio.baseUrl}/chat/completions`, { authorization: "Bearer k-123" }, {
      model: "gpt-4o-audio-preview",
      messages: [{ role: "user", content: [{ type: "text", text: "what?" }, { type: "input_audio", input_audio: { data: Buffer.from("RIFF0000WAVE").toString("base64"), format: "wav" } }] }],
    });
    assert.equal(understood.status, 200);

    child.kill("SIGTERM");
    assert.equal(await exited, 0);
    assert.match(out, /requests received: fal 1 \(1 submits\), bfl 1 \(1 submits\), openai 1 \(1 submits\)/);
    assert.match(out, /elevenlabs 1, elevenlabs backup 0, minimax 1, openai audio 1/);
  } finally {
    if (child.exitCode === null) child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
});
