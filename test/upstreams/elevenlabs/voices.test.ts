/**
 * The voice catalog of an ElevenLabs source against the fake and against loopback servers that
 * misbehave: both listings read page by page (count, order, shape of records, de-duplication), the page
 * cap against a runaway upstream, and a failing or malformed page.
 */
import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { FAKE_ACCOUNT_VOICES, FAKE_SHARED_IN_ACCOUNT, FAKE_SHARED_VOICES, startElevenLabsFake } from "../../../fakes/elevenlabs.ts";
import type { ElevenLabsFake } from "../../../fakes/elevenlabs.ts";
import { createElevenLabsSource } from "../../../src/upstreams/elevenlabs/source.ts";
import type { ElevenLabsSource } from "../../../src/upstreams/elevenlabs/source.ts";
import { MAX_PAGES_PER_LISTING } from "../../../src/upstreams/elevenlabs/voices.ts";
import { EL_KEY, elFailure, RACHEL, seenMessages } from "./helpers.ts";

let fake: ElevenLabsFake;
let source: ElevenLabsSource;

before(async () => {
  fake = await startElevenLabsFake({ apiKey: EL_KEY });
  source = createElevenLabsSource({ name: "el-voices", baseUrl: fake.url, apiKey: EL_KEY });
});

after(async () => {
  await source.close();
  await fake.close();
  for (const message of seenMessages) assert.ok(!message.includes(EL_KEY));
});

beforeEach(() => fake.reset());

describe("listVoices against the fake", () => {
  test("every page of both listings, account first, de-duplicated by voice id", async () => {
    const voices = await source.listVoices();
    assert.equal(voices.length, FAKE_ACCOUNT_VOICES + FAKE_SHARED_VOICES - FAKE_SHARED_IN_ACCOUNT);
    assert.equal(new Set(voices.map((v) => v.voice_id)).size, voices.length, "no voice twice");
    assert.deepEqual(new Set(voices.map((v) => v.voice_id)), new Set(fake.voiceIds()));
    assert.equal(voices[0].voice_id, RACHEL);

    const paths = fake.requests.map((r) => r.path);
    assert.equal(paths[0], "/v2/voices?page_size=100");
    assert.match(paths[1], /^\/v2\/voices\?page_size=100&next_page_token=[A-Za-z0-9_-]+$/);
    const sharedPages = Math.ceil(FAKE_SHARED_VOICES / 100);
    assert.deepEqual(paths.slice(2), Array.from({ length: sharedPages }, (_, n) => `/v1/shared-voices?page_size=100&page=${n}`));
    for (const r of fake.requests) {
      assert.equal(r.method, "GET");
      assert.equal(r.headers["xi-api-key"], "[redacted]");
      assert.equal(r.body, null);
    }
  });

  test("records in the spec's shape: provider alpha, strings everywhere, labels from both listings", async () => {
    const voices = await source.listVoices();
    for (const v of voices) {
      assert.equal(v.provider, "alpha");
      if (v.provider !== "alpha") continue;
      assert.match(v.voice_id, /^[A-Za-z0-9]{20}$/);
      assert.deepEqual(Object.keys(v).sort(), ["category", "description", "labels", "name", "preview_url", "provider", "voice_id"]);
      assert.deepEqual(Object.keys(v.labels).sort(), ["accent", "age", "gender", "use_case"]);
      for (const value of [v.name, v.category, v.preview_url, v.description, ...Object.values(v.labels)]) assert.equal(typeof value, "string");
      assert.match(v.preview_url, /^https:\/\/storage\.googleapis\.com\//);
    }
    const rachel = voices[0];
    assert.equal(rachel.provider === "alpha" && rachel.category, "premade");
    assert.equal(rachel.provider === "alpha" && rachel.description, "", "ElevenLabs' null description of a premade voice");
    // Every tenth account voice of the fake has no labels at all.
    const unlabelled = voices[9];
    assert.deepEqual(unlabelled.provider === "alpha" && unlabelled.labels, { gender: "", age: "", accent: "", use_case: "" });
    const alita = voices.find((v) => v.voice_id === "sB1b5zUrxQVAFl2PhZFp");
    assert.ok(alita !== undefined && alita.provider === "alpha");
    assert.equal(alita.name, "Alita");
    assert.equal(alita.labels.gender, "Female", "a library voice's labels come from its top level");
    assert.notEqual(alita.labels.use_case, "");
  });

  test("a duplicate keeps the account's record", async () => {
    const voices = await source.listVoices();
    const lastAccount = voices[FAKE_ACCOUNT_VOICES - 1];
    assert.equal(lastAccount.provider === "alpha" && lastAccount.preview_url.includes("/premade/"), true);
    // The library voices right after the account ones are new ones (the duplicates were dropped).
    assert.ok(voices.slice(FAKE_ACCOUNT_VOICES).every((v) => v.provider === "alpha" && v.preview_url.includes("/library/")));
  });

  test("a failing listing page fails the whole listing with the mapped error", async () => {
    fake.setMarkers(["429"]);
    try {
      const err = await elFailure(source.listVoices());
      assert.equal(err.status, 429);
      assert.equal(err.retryable, true);
      assert.equal(err.voiceUnavailable, false);
      assert.match(err.message, /^el-voices: voices: HTTP 429: .*\(system_busy\)$/);
    } finally {
      fake.setMarkers([]);
    }
  });

  test("a malformed listing page (HTML with 200) is a retryable malformed answer", async () => {
    fake.setMarkers(["malformed"]);
    try {
      const err = await elFailure(source.listVoices());
      assert.equal(err.kind, "malformed");
      assert.equal(err.retryable, true);
    } finally {
      fake.setMarkers([]);
    }
  });
});

/** A loopback server answering every request with `answer(url)` as JSON; records the paths. */
async function startListing(answer: (url: URL) => unknown): Promise<{ url: string; paths: string[]; close(): Promise<void> }> {
  const paths: string[] = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    paths.push(url.pathname + url.search);
    const text = JSON.stringify(answer(url));
    res.writeHead(200, { "content-type": "application/json", "content-length": String(Buffer.byteLength(text)) });
    res.end(text);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    paths,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe("listVoices against misbehaving listings", () => {
  test("a runaway upstream (has_more forever) is read at most 50 pages per listing", async () => {
    let n = 0;
    const upstream = await startListing((url) => {
      n++;
      const voice = { voice_id: `v${String(n).padStart(19, "0")}`, name: `voice ${n}` };
      return url.pathname === "/v2/voices" ? { voices: [voice], has_more: true, total_count: 1e9, next_page_token: `t${n}` } : { voices: [voice], has_more: true };
    });
    const s = createElevenLabsSource({ name: "el-runaway", baseUrl: upstream.url, apiKey: EL_KEY });
    try {
      const voices = await s.listVoices();
      assert.equal(MAX_PAGES_PER_LISTING, 50);
      assert.equal(upstream.paths.filter((p) => p.startsWith("/v2/voices")).length, MAX_PAGES_PER_LISTING);
      assert.equal(upstream.paths.filter((p) => p.startsWith("/v1/shared-voices")).length, MAX_PAGES_PER_LISTING);
      assert.equal(voices.length, 2 * MAX_PAGES_PER_LISTING);
      assert.equal(upstream.paths[1], "/v2/voices?page_size=100&next_page_token=t1");
    } finally {
      await s.close();
      await upstream.close();
    }
  });

  test("an empty library page ends the listing whatever has_more says", async () => {
    const upstream = await startListing((url) =>
      url.pathname === "/v2/voices" ? { voices: [{ voice_id: "a1" }], has_more: false, total_count: 1 } : { voices: [], has_more: true },
    );
    const s = createElevenLabsSource({ name: "el-empty", baseUrl: upstream.url, apiKey: EL_KEY });
    try {
      assert.deepEqual((await s.listVoices()).map((v) => v.voice_id), ["a1"]);
      assert.deepEqual(upstream.paths, ["/v2/voices?page_size=100", "/v1/shared-voices?page_size=100&page=0"]);
    } finally {
      await s.close();
      await upstream.close();
    }
  });

  test("has_more without next_page_token, or no voices array: malformed, retryable", async () => {
    for (const answer of [{ voices: [], has_more: true, total_count: 5 }, { items: [] }]) {
      const upstream = await startListing(() => answer);
      const s = createElevenLabsSource({ name: "el-bad", baseUrl: upstream.url, apiKey: EL_KEY });
      try {
        const err = await elFailure(s.listVoices());
        assert.equal(err.kind, "malformed");
        assert.equal(err.retryable, true);
        assert.equal(upstream.paths.length, 1);
      } finally {
        await s.close();
        await upstream.close();
      }
    }
  });

  test("voices without a voice_id are skipped", async () => {
    const upstream = await startListing((url) =>
      url.pathname === "/v2/voices"
        ? { voices: [{ name: "no id" }, { voice_id: "ok1", name: "ok" }, null], has_more: false, total_count: 3 }
        : { voices: [{ voice_id: "", name: "empty" }, { voice_id: "ok2", name: "lib", gender: "male" }], has_more: false },
    );
    const s = createElevenLabsSource({ name: "el-skip", baseUrl: upstream.url, apiKey: EL_KEY });
    try {
      const voices = await s.listVoices();
      assert.deepEqual(voices.map((v) => v.voice_id), ["ok1", "ok2"]);
      assert.equal(voices[1].provider === "alpha" && voices[1].labels.gender, "male");
    } finally {
      await s.close();
      await upstream.close();
    }
  });
});
