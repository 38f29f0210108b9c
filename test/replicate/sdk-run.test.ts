/**
 * The Replicate dialect (D47) proven with the `replicate` npm client itself (1.4.0, unchanged) against a
 * real gateway on loopback behind a TLS front (so every URL the gateway hands out is `https:`, and `run`
 * answers `FileOutput`s, as the client does only for `https:` URLs): `run` of an image model under
 * `gateway/` (a list of one file) and under a provider's name (one file), of a video and of a speech model,
 * whose `FileOutput.blob()` bytes are a real PNG, MP4 and MP3, each charged exactly the native price;
 * `run` of `owner/name:<version>` as `models.get` answers it; `models.list` and versions; the prediction's
 * `input` echoed as sent; `files.create` of a PNG whose `urls.get` is then an edit's `image_url`, a `data:`
 * URL as `image_url`, and a `Blob` in a `run`'s input, which the client uploads by itself. Exact
 * money after each: the balance, the balance equal to the ledger's sum, the usage record (kind, cost,
 * status) and its ledger entries. On SQLite and PostgreSQL. Then, on plain http without the front, `run`
 * answers the URLs as strings (the client's documented behaviour for non-https outputs).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { FileOutput, Prediction } from "replicate";
import { BACKENDS } from "../helpers/backends.ts";
import {
  type Account,
  assertCharged,
  checkedBalance,
  fundedAccount,
  magicOf,
  micros,
  type ReplicateGateway,
  replicateClient,
  startReplicateGateway,
  tinyPng,
} from "./fixtures.ts";

/** A catalog model's entry of `GET /v1/pricing` (the fields read here). */
interface MediaPrice {
  id: string;
  usd_per_call: number;
  detail: { provider_cost_per_sec?: number; provider_cost_per_kchar?: number; markup?: number };
}

/** Whether a value is a `FileOutput` of the client: a ReadableStream with `blob()` and `url()`. */
function isFileOutput(v: unknown): v is FileOutput {
  return v instanceof ReadableStream && typeof (v as FileOutput).blob === "function" && typeof (v as FileOutput).url === "function";
}

/** The bytes and content type of a `FileOutput`, read with its own `blob()`. */
async function bytesOf(out: FileOutput): Promise<{ type: string; bytes: Uint8Array }> {
  const blob = await out.blob();
  return { type: blob.type, bytes: new Uint8Array(await blob.arrayBuffer()) };
}

for (const backend of BACKENDS) {
  describe(`the replicate client's run and files on ${backend.name} (D47)`, { skip: backend.skip }, () => {
    let rg: ReplicateGateway;
    let user: Account;
    let prices: Map<string, MediaPrice>;
    let voiceId: string;

    const gw = () => rg.gw;
    const client = () => replicateClient(rg.publicUrl, user.api_key);
    const balance = () => checkedBalance(gw(), user);
    /** The one prediction of the account created last (`predictions.list` is newest first). */
    const lastPrediction = async (): Promise<Prediction> => (await client().predictions.list()).results[0];
    /** The reference images of a job's native request (its stored `request_json`). */
    const jobImageUrls = async (id: string): Promise<string[]> => {
      const job = await gw().services.db.kysely.selectFrom("jobs").select("request_json").where("id", "=", id).executeTakeFirstOrThrow();
      return (JSON.parse(job.request_json) as { imageUrls: string[] }).imageUrls;
    };
    const price = (id: string): MediaPrice => {
      const p = prices.get(id);
      assert.ok(p !== undefined, `priced: ${id}`);
      return p;
    };

    before(async () => {
      rg = await startReplicateGateway(backend.name);
      user = await fundedAccount(rg.gw);
      const pricing = await rg.gw.request("GET", "/v1/pricing");
      assert.equal(pricing.status, 200);
      prices = new Map((pricing.json.media as MediaPrice[]).map((m) => [m.id, m]));
      const voices = await rg.gw.request("GET", "/v1/audio/voices?provider=alpha", { token: user.api_key });
      assert.equal(voices.status, 200);
      voiceId = voices.json.data[0].voice_id as string;
    });
    after(async () => {
      await rg?.close();
    });

    test("run gateway/imgB-2-pro: a list of one FileOutput, a real PNG on the https front, charged the native price", async () => {
      const start = await balance();
      const output = await client().run("gateway/imgB-2-pro", { input: { prompt: "a red fox in fresh snow" } });
      assert.ok(Array.isArray(output), `a list: ${String(output)}`);
      assert.equal(output.length, 1);
      const [file] = output as unknown[];
      assert.ok(isFileOutput(file), "a FileOutput");
      assert.equal(file.url().protocol, "https:");
      assert.equal(file.url().origin, rg.publicUrl);
      const { type, bytes } = await bytesOf(file);
      assert.equal(type, "image/png");
      assert.equal(magicOf(bytes), "png");

      const prediction = await lastPrediction();
      assert.equal(prediction.model, "gateway/imgB-2-pro");
      assert.equal(prediction.status, "succeeded");
      assert.deepEqual(prediction.output, [file.toString()]);
      const cost = micros(price("imgB-2-pro").usd_per_call);
      assert.equal(cost, 41_000, "the default 1 MP image of imgB-2-pro");
      assert.equal(await balance(), start - cost);
      await assertCharged(gw(), user.api_key, prediction.id, "image", cost);
    });

    test("run black-forest-labs/flux-2-pro: ONE FileOutput (Replicate's shape of that model), the same price as gateway/imgB-2-pro", async () => {
      const start = await balance();
      const output = await client().run("black-forest-labs/flux-2-pro", { input: { prompt: "a lighthouse at dusk", aspect_ratio: "1:1" } });
      assert.ok(!Array.isArray(output), "not a list");
      assert.ok(isFileOutput(output), "a FileOutput");
      const { type, bytes } = await bytesOf(output);
      assert.equal(type, "image/png");
      assert.equal(magicOf(bytes), "png");

      const prediction = await lastPrediction();
      assert.equal(prediction.model, "black-forest-labs/flux-2-pro");
      assert.equal(prediction.output, output.toString());
      const cost = micros(price("imgB-2-pro").usd_per_call);
      assert.equal(await balance(), start - cost);
      await assertCharged(gw(), user.api_key, prediction.id, "image", cost);
    });

    test("a prediction echoes its input as sent: a provider name's own field names, not the native body", async () => {
      // Replicate answers `input` as the caller sent it; D47's prediction keeps "the input as sent"
      // (prediction.ts PredictionNames.input). flux-2-pro's `aspect_ratio` maps to the native `size`, and an
      // unmapped `seed` goes into the native `parameters`: the echo must still read as sent.
      const input = { prompt: "a lighthouse at dusk", aspect_ratio: "1:1", seed: 3 };
      const created = await client().predictions.create({ model: "black-forest-labs/flux-2-pro", input, wait: true });
      assert.equal(created.status, "succeeded");
      assert.deepEqual(created.input, input, "the create's answer");
      assert.deepEqual((await client().predictions.get(created.id)).input, input, "predictions.get");
    });

    test("run gateway/vidD-3-fast for 4 s: one FileOutput of a real MP4, charged 4 s at the native rate", async () => {
      const start = await balance();
      const output = await client().run("gateway/vidD-3-fast", { input: { prompt: "waves rolling onto a beach at dusk", duration: 4 } });
      assert.ok(isFileOutput(output), `a FileOutput: ${String(output)}`);
      assert.equal(output.url().origin, rg.publicUrl);
      const { type, bytes } = await bytesOf(output);
      assert.equal(type, "video/mp4");
      assert.equal(magicOf(bytes), "mp4");
      assert.ok(bytes.byteLength > 1000);

      const prediction = await lastPrediction();
      assert.equal(prediction.model, "gateway/vidD-3-fast");
      assert.equal(prediction.status, "succeeded");
      const p = price("vidD-3-fast");
      const cost = micros(4 * (p.detail.provider_cost_per_sec ?? Number.NaN) * (p.detail.markup ?? 1));
      assert.equal(cost, 4 * 135_000);
      assert.equal(await balance(), start - cost);
      await assertCharged(gw(), user.api_key, prediction.id, "video", cost);
    });

    test("run gateway/alpha-multilingual-v2 with a library voice: one FileOutput of a real MP3, charged what the native route charges", async () => {
      const text = "Hello from the Replicate dialect of the gateway.";
      // The native route's price of the same input, from its X-Svc-Cost-USD.
      const native = await gw().request("POST", "/v1/audio/speech", { token: user.api_key, body: { model: "alpha-multilingual-v2", input: text, voice_id: voiceId } });
      assert.equal(native.status, 200);
      const nativeCost = micros(native.headers.get("x-svc-cost-usd") ?? "");
      const perKchar = price("alpha-multilingual-v2").detail.provider_cost_per_kchar ?? Number.NaN;
      assert.equal(nativeCost, Math.round(text.length * perKchar * 1000), "the catalog's per-character price");

      const start = await balance();
      const output = await client().run("gateway/alpha-multilingual-v2", { input: { text, voice_id: voiceId } });
      assert.ok(isFileOutput(output), `a FileOutput: ${String(output)}`);
      assert.equal(output.url().origin, rg.publicUrl);
      const { type, bytes } = await bytesOf(output);
      assert.equal(type, "audio/mpeg");
      assert.equal(magicOf(bytes), "mp3");

      const prediction = await lastPrediction();
      assert.equal(prediction.model, "gateway/alpha-multilingual-v2");
      assert.equal(prediction.status, "succeeded");
      assert.equal(await balance(), start - nativeCost);
      const record = await assertCharged(gw(), user.api_key, prediction.id, "speech", nativeCost);
      assert.equal(record.units.characters, text.length);
    });

    test("run owner/name:<version> with the version models.get answers", async () => {
      const model = await client().models.get("gateway", "imgB-2-pro");
      assert.equal(model.owner, "gateway");
      assert.equal(model.name, "imgB-2-pro");
      const version = model.latest_version?.id ?? "";
      assert.match(version, /^[0-9a-f]{64}$/);
      const start = await balance();
      const output = await client().run(`gateway/imgB-2-pro:${version}`, { input: { prompt: "a paper boat on a pond" } });
      assert.ok(Array.isArray(output) && isFileOutput(output[0]));
      const prediction = await lastPrediction();
      assert.equal(prediction.version, version);
      assert.equal(prediction.model, "gateway/imgB-2-pro");
      const cost = micros(price("imgB-2-pro").usd_per_call);
      assert.equal(await balance(), start - cost);
      await assertCharged(gw(), user.api_key, prediction.id, "image", cost);
    });

    test("models.list pages through every name once; versions.list and versions.get name the one version", async () => {
      const names: string[] = [];
      for await (const page of client().paginate(() => client().models.list())) names.push(...page.map((m) => `${m.owner}/${m.name}`));
      assert.equal(new Set(names).size, names.length, "each once");
      for (const n of ["gateway/imgB-2-pro", "gateway/vidD-3-fast", "gateway/alpha-multilingual-v2", "black-forest-labs/flux-2-pro", "google/veo-3.1-fast"]) assert.ok(names.includes(n), n);
      const model = await client().models.get("black-forest-labs", "flux-2-pro");
      const versions = await client().models.versions.list("black-forest-labs", "flux-2-pro");
      assert.deepEqual(versions.results.map((v) => v.id), [model.latest_version?.id]);
      const version = await client().models.versions.get("black-forest-labs", "flux-2-pro", model.latest_version?.id ?? "");
      assert.deepEqual(version.openapi_schema, model.latest_version?.openapi_schema);
    });

    test("files.create(buffer) of a PNG: urls.get serves it on the front and is the image_url of gateway/imgB-edit-pro", async () => {
      const png = tinyPng();
      const start = await balance();
      const file = await client().files.create(png, { purpose: "edit" });
      assert.equal(file.content_type, "image/png");
      assert.equal(file.size, png.byteLength);
      assert.deepEqual(file.metadata, { purpose: "edit" });
      assert.ok(file.urls.get.startsWith(`${rg.publicUrl}/v1/files/uploads/`), file.urls.get);
      const served = await fetch(file.urls.get);
      assert.equal(served.status, 200);
      assert.deepEqual(Buffer.from(await served.arrayBuffer()), png);
      assert.equal(await balance(), start, "an upload costs nothing");

      const output = await client().run("gateway/imgB-edit-pro", { input: { prompt: "make it a watercolor", image_url: file.urls.get } });
      assert.ok(Array.isArray(output) && isFileOutput(output[0]), String(output));
      assert.equal(magicOf((await bytesOf(output[0] as FileOutput)).bytes), "png");
      const prediction = await lastPrediction();
      assert.equal(prediction.model, "gateway/imgB-edit-pro");
      assert.deepEqual(prediction.input, { prompt: "make it a watercolor", image_url: file.urls.get });
      assert.deepEqual(await jobImageUrls(prediction.id), [file.urls.get], "the job edits the uploaded file");
      const cost = micros(price("imgB-edit-pro").usd_per_call);
      assert.equal(await balance(), start - cost);
      await assertCharged(gw(), user.api_key, prediction.id, "image", cost);
    });

    test("a data: URL as image_url is stored on the gateway and edited from there", async () => {
      const png = tinyPng();
      const start = await balance();
      const output = await client().run("gateway/imgB-edit-pro", { input: { prompt: "pencil sketch", image_url: `data:image/png;base64,${png.toString("base64")}` } });
      assert.ok(Array.isArray(output) && isFileOutput(output[0]), String(output));
      const prediction = await lastPrediction();
      const [stored] = await jobImageUrls(prediction.id);
      assert.ok(stored.startsWith(`${rg.publicUrl}/v1/files/uploads/`), stored);
      assert.deepEqual(Buffer.from(await (await fetch(stored)).arrayBuffer()), png);
      const cost = micros(price("imgB-edit-pro").usd_per_call);
      assert.equal(await balance(), start - cost);
      await assertCharged(gw(), user.api_key, prediction.id, "image", cost);
    });

    test("a Blob in run's input: the client uploads it through files.create and passes its URL", async () => {
      const png = tinyPng();
      const start = await balance();
      const uploads: string[] = [];
      // The same client, its fetch observed (not changed) to see the upload it makes by itself.
      const watched = replicateClient(rg.publicUrl, user.api_key);
      const own = watched.fetch;
      watched.fetch = (input, init) => {
        uploads.push(`${init?.method ?? "GET"} ${new URL(String(input)).pathname}`);
        return own(input, init);
      };
      const output = await watched.run("black-forest-labs/flux-kontext-pro", { input: { prompt: "the same scene at night", input_image: new Blob([png], { type: "image/png" }) } });
      assert.ok(isFileOutput(output), `one FileOutput: ${String(output)}`);
      assert.equal(magicOf((await bytesOf(output)).bytes), "png");
      assert.deepEqual(uploads.slice(0, 2), ["POST /replicate/v1/files", "POST /replicate/v1/models/black-forest-labs/flux-kontext-pro/predictions"]);

      const prediction = await lastPrediction();
      assert.equal(prediction.model, "black-forest-labs/flux-kontext-pro");
      const [sent] = await jobImageUrls(prediction.id);
      assert.ok(sent.startsWith(`${rg.publicUrl}/v1/files/uploads/`), `the job edits the uploaded file: ${sent}`);
      assert.deepEqual(Buffer.from(await (await fetch(sent)).arrayBuffer()), png, "the Blob's bytes");
      const cost = micros(price("imgB-edit-pro").usd_per_call);
      assert.equal(await balance(), start - cost);
      await assertCharged(gw(), user.api_key, prediction.id, "image", cost);
    });
  });
}

describe("the replicate client on plain http (no TLS front): run answers URL strings, not FileOutputs", () => {
  let rg: ReplicateGateway;
  let user: Account;
  before(async () => {
    rg = await startReplicateGateway("sqlite", {}, { tls: false });
    user = await fundedAccount(rg.gw);
  });
  after(async () => {
    await rg?.close();
  });

  test("an image model's list and a provider name's one output are http URL strings that serve a PNG", async () => {
    const client = replicateClient(rg.publicUrl, user.api_key);
    const start = await checkedBalance(rg.gw, user);
    const list = await client.run("gateway/imgB-2-pro", { input: { prompt: "a kite over a hill" } });
    assert.ok(Array.isArray(list) && list.length === 1 && typeof list[0] === "string", JSON.stringify(list));
    const one = await client.run("black-forest-labs/flux-2-pro", { input: { prompt: "a kite over a hill" } });
    assert.equal(typeof one, "string");
    for (const url of [list[0] as string, one as unknown as string]) {
      assert.ok(url.startsWith(`${rg.publicUrl}/v1/files/`), url);
      const res = await fetch(url);
      assert.equal(res.status, 200);
      assert.equal(magicOf(new Uint8Array(await res.arrayBuffer())), "png");
    }
    assert.equal(await checkedBalance(rg.gw, user), start - 2 * 41_000);
  });
});
