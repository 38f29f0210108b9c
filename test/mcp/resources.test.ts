/**
 * The MCP server's resources, read with the official MCP SDK's own client (`Client` over
 * `StreamableHTTPClientTransport`) against a real gateway on loopback: without a key no JSON-RPC at all;
 * with one, `resources/list` names `gateway://llms.txt` and `gateway://dialects` (Markdown), the first reads
 * as exactly what `GET /llms.txt` answers, the second lists every vendor dialect with its base URL on this
 * gateway (the Replicate one at `/replicate/v1`) and the same setup lines llms.txt shows (one source:
 * vendor-dialects.ts); reading is free; an unknown URI is a JSON-RPC error. On both databases.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { buildDialectsGuide, vendorDialects } from "../../src/http/dialects/mcp/vendor-dialects.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";

const MCP_HEADERS = { accept: "application/json, text/event-stream" };

describe("the dialects guide (pure)", () => {
  test("every URL on the public address given, a trailing slash dropped; the four vendors in order", () => {
    const text = buildDialectsGuide("https://media.example.com/");
    assert.deepEqual(
      vendorDialects("https://media.example.com").map((d) => [d.name, d.baseUrl]),
      [
        ["ElevenLabs", "https://media.example.com/elevenlabs"],
        ["OpenAI", "https://media.example.com/openai/v1"],
        ["fal", "https://media.example.com/fal/proxy"],
        ["Replicate", "https://media.example.com/replicate/v1"],
      ],
    );
    assert.ok(text.includes('new Replicate({ auth: apiKey, baseUrl: "https://media.example.com/replicate/v1" })'));
    assert.ok(text.includes('import Replicate from "replicate";'));
    assert.ok(text.includes("wss://media.example.com/elevenlabs/v1/speech-to-text/realtime"), "sockets on wss:// behind TLS");
    assert.ok(!text.includes("example.com//"), "no double slash");
  });
});

for (const backend of BACKENDS) {
  describe(`the MCP server's resources through the official MCP SDK client on ${backend.name}`, { skip: backend.skip }, () => {
    let gw: TestGateway;
    let user: { api_key: string };
    let mcp: Client;

    before(async () => {
      gw = await startGateway(backend.name);
      user = await gw.register();
      mcp = new Client({ name: "gateway-test", version: "1.0.0" });
      await mcp.connect(new StreamableHTTPClientTransport(new URL(`${gw.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${user.api_key}` } } }));
    });
    after(async () => {
      await mcp?.close().catch(() => {});
      await gw?.close();
    });

    test("without a valid key: 401 auth_error before any JSON-RPC, for resources as for tools", async () => {
      for (const body of [
        { jsonrpc: "2.0", id: 1, method: "resources/list" },
        { jsonrpc: "2.0", id: 2, method: "resources/read", params: { uri: "gateway://dialects" } },
      ]) {
        const r = await gw.request("POST", "/mcp", { body, headers: MCP_HEADERS });
        assert.equal(r.status, 401);
        assert.equal(r.json.error.code, "auth_error");
        assert.equal(r.json.jsonrpc, undefined, "not a JSON-RPC answer");
      }
    });

    test("the server announces resources; resources/list names the two Markdown resources", async () => {
      assert.ok(mcp.getServerCapabilities()?.resources, "the resources capability");
      const { resources } = await mcp.listResources();
      assert.deepEqual(
        resources.map((r) => r.uri),
        ["gateway://llms.txt", "gateway://dialects"],
      );
      for (const r of resources) {
        assert.equal(r.mimeType, "text/markdown", r.uri);
        assert.ok((r.description ?? "").length > 40, r.uri);
        assert.ok((r.title ?? "").length > 0, r.uri);
      }
    });

    test("gateway://llms.txt reads as exactly what GET /llms.txt answers", async () => {
      const read = await mcp.readResource({ uri: "gateway://llms.txt" });
      assert.equal(read.contents.length, 1);
      const [item] = read.contents;
      assert.equal(item.uri, "gateway://llms.txt");
      assert.equal(item.mimeType, "text/markdown");
      const served = await gw.request("GET", "/llms.txt");
      assert.equal(served.status, 200);
      assert.equal("text" in item ? item.text : undefined, Buffer.from(served.bytes).toString("utf8"));
    });

    test("gateway://dialects: every dialect's base URL on this gateway and its setup, the same setup lines as llms.txt", async () => {
      const read = await mcp.readResource({ uri: "gateway://dialects" });
      assert.equal(read.contents.length, 1);
      const [item] = read.contents;
      assert.equal(item.uri, "gateway://dialects");
      assert.equal(item.mimeType, "text/markdown");
      const text = "text" in item ? item.text : "";
      assert.match(text, /^# Vendor dialects\n/);
      for (const path of ["/elevenlabs", "/openai/v1", "/fal/proxy", "/replicate/v1"]) assert.ok(text.includes(`Base URL: \`${gw.url}${path}\``), path);
      assert.ok(text.includes(`new Replicate({ auth: apiKey, baseUrl: "${gw.url}/replicate/v1" })`), "the Replicate client's setup");
      assert.match(text, /`gateway\/<catalog id>`/);
      const llms = Buffer.from((await gw.request("GET", "/llms.txt")).bytes).toString("utf8");
      for (const d of vendorDialects(gw.services.config.publicBaseUrl)) {
        assert.ok(text.includes(`## ${d.name}\n`), d.name);
        assert.ok(text.includes(d.setup), `${d.name}: its setup in the resource`);
        assert.ok(llms.includes(d.setup), `${d.name}: the same setup in llms.txt`);
      }
    });

    test("reading is free; an unknown URI is a JSON-RPC error (invalid params)", async () => {
      const balance = async () => (await gw.request("GET", "/v1/auth/me", { token: user.api_key })).json.balance_usd;
      const before = await balance();
      await mcp.readResource({ uri: "gateway://dialects" });
      await mcp.readResource({ uri: "gateway://llms.txt" });
      assert.equal(await balance(), before);
      await assert.rejects(mcp.readResource({ uri: "gateway://nothing-here" }), (err: unknown) => err instanceof McpError && err.code === ErrorCode.InvalidParams);
    });
  });
}
