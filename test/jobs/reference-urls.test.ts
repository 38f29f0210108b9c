/**
 * Reference image URLs fail closed (issue "Hardening" 3): at submit, every `image_url` / `image_urls[i]`
 * host must resolve, in time, to public addresses only; anything else is 400 `invalid_image_url` and
 * nothing is held. The resolver is injected: the tests never depend on the machine's DNS.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";

const PUBLIC = "93.184.215.14";
/** A resolver with a few fixed names; any other name does not resolve (as `.invalid` never does). */
async function resolveHost(host: string): Promise<string[]> {
  const table: Record<string, string[]> = {
    "cdn.example.com": [PUBLIC],
    "localhost": ["127.0.0.1", "::1"],
    "mixed.example.com": [PUBLIC, "10.1.2.3"],
    "empty.example.com": [],
    "metadata.example.com": ["169.254.169.254"],
  };
  if (host === "slow.example.com") return new Promise(() => {});
  const found = table[host];
  if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: "ENOTFOUND" });
  return found;
}

describe("reference URLs fail closed", () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway("sqlite", {}, { overrides: { resolveHost }, runner: false });
  });
  after(() => gw?.close());

  const cases: [string, Record<string, unknown>, string, RegExp][] = [
    ["a host that does not resolve", { image_url: "https://nothing-here.invalid/a.png" }, "image_url", /could not be resolved/],
    ["localhost with a trailing dot", { image_url: "https://localhost.:18291/a.png" }, "image_url", /non-public address \(127\.0\.0\.1\)/],
    ["a name with one private address among public ones", { image_url: "https://mixed.example.com/a.png" }, "image_url", /non-public address \(10\.1\.2\.3\)/],
    ["a name with no address", { image_url: "https://empty.example.com/a.png" }, "image_url", /has no address/],
    ["a name resolving to the metadata address", { image_url: "https://metadata.example.com/a.png" }, "image_url", /169\.254\.169\.254/],
    ["a resolver that never answers", { image_url: "https://slow.example.com/a.png" }, "image_url", /could not be resolved/],
    ["a private IP literal", { image_url: "https://10.0.0.7/a.png" }, "image_url", /non-public address \(10\.0\.0\.7\)/],
    ["a loopback IPv6 literal", { image_url: "https://[::1]/a.png" }, "image_url", /non-public address \(::1\)/],
    ["the second of several URLs", { image_urls: ["https://cdn.example.com/a.png", "https://nothing-here.invalid/b.png"] }, "image_urls[1]", /could not be resolved/],
  ];

  for (const [name, refs, param, message] of cases) {
    test(`${name}: 400 invalid_image_url, nothing held`, async () => {
      const u = await gw.register();
      const model = "image_urls" in refs ? "imgB-2-pro" : "imgB-edit-pro";
      const r = await gw.request("POST", "/v1/images/generations", { token: u.api_key, body: { model, prompt: "p", ...refs } });
      assert.equal(r.status, 400, JSON.stringify(r.json));
      assert.equal(r.json.error.code, "invalid_image_url");
      assert.equal(r.json.error.param, param);
      assert.match(r.json.error.message, message);
      const db = gw.services.db.kysely;
      assert.equal(await getBalance(db, u.org_id), 500_000);
      assert.equal(await ledgerSum(db, u.org_id), 500_000);
    });
  }

  test("the same rules on a video's image_url (vidC image-to-video)", async () => {
    const u = await gw.register();
    for (const path of ["/v1/videos/generations"]) {
      const r = await gw.request("POST", path, { token: u.api_key, body: { model: "vidC-02-512p", prompt: "p", image_url: "https://nothing-here.invalid/f.png" } });
      assert.equal(r.status, 400, JSON.stringify(r.json));
      assert.equal(r.json.error.code, "invalid_image_url");
    }
    assert.equal(await getBalance(gw.services.db.kysely, u.org_id), 500_000);
  });

  test("a host resolving to public addresses only is accepted", async () => {
    const u = await gw.register();
    const r = await gw.request("POST", "/v1/images/generations", { token: u.api_key, body: { model: "imgB-edit-pro", prompt: "p", image_url: "https://cdn.example.com/a.png" } });
    assert.equal(r.status, 202, JSON.stringify(r.json));
  });
});
