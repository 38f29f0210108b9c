/**
 * Who may call the job API (D30, D8): the reads (list, get, event stream) and cancel accept an API key or a
 * session token, so the web console signed in with a session shows and cancels the account's jobs; the
 * submits stay API-key only. The runner is off, so a submitted job stays `pending` until cancelled.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { BACKENDS } from "../helpers/backends.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";

for (const backend of BACKENDS) {
  describe(`job API with a session token on ${backend.name}`, { skip: backend.skip }, () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startGateway(backend.name, {}, { runner: false });
    });
    after(async () => {
      await gw?.close();
    });

    test("a session token lists, reads, streams and cancels the account's jobs; it cannot submit one", async () => {
      const u = await gw.register();
      const submitted = await gw.request("POST", "/v1/images/generations", {
        token: u.api_key,
        body: { model: "imgA-v4", prompt: `session access ${backend.name}` },
      });
      assert.equal(submitted.status, 202, JSON.stringify(submitted.json));
      const id: string = submitted.json.id;

      const list = await gw.request("GET", "/v1/jobs?limit=5", { token: u.session_token });
      assert.equal(list.status, 200, JSON.stringify(list.json));
      assert.deepEqual(list.json.data.map((j: { id: string }) => j.id), [id]);

      const read = await gw.request("GET", `/v1/jobs/${id}`, { token: u.session_token });
      assert.equal(read.status, 200, JSON.stringify(read.json));
      assert.equal(read.json.status, "pending");

      // The event stream answers at once with the job; the first event is enough here.
      const ctl = new AbortController();
      const events = await fetch(`${gw.url}/v1/jobs/${id}/events`, { headers: { authorization: `Bearer ${u.session_token}` }, signal: ctl.signal });
      assert.equal(events.status, 200);
      assert.match(events.headers.get("content-type") ?? "", /text\/event-stream/);
      const reader = events.body!.getReader();
      let text = "";
      while (!text.includes("\n\n")) {
        const chunk = await reader.read();
        if (chunk.done) break;
        text += new TextDecoder().decode(chunk.value);
      }
      ctl.abort();
      assert.match(text, new RegExp(`event: job\\ndata: .*"id":"${id}"`));

      const canceled = await gw.request("POST", `/v1/jobs/${id}/cancel`, { token: u.session_token });
      assert.equal(canceled.status, 200, JSON.stringify(canceled.json));
      assert.equal(canceled.json.status, "failed");
      assert.equal(canceled.json.error.code, "canceled");

      const bySession = await gw.request("POST", "/v1/images/generations", {
        token: u.session_token,
        body: { model: "imgA-v4", prompt: "a session may not submit" },
      });
      assert.equal(bySession.status, 401, JSON.stringify(bySession.json));
      assert.equal(bySession.json.error.code, "auth_error");
    });

    test("another account's session sees none of them", async () => {
      const owner = await gw.register();
      const other = await gw.register();
      const submitted = await gw.request("POST", "/v1/images/generations", { token: owner.api_key, body: { model: "imgA-v4", prompt: "private" } });
      assert.equal(submitted.status, 202);
      const list = await gw.request("GET", "/v1/jobs", { token: other.session_token });
      assert.deepEqual(list.json.data, []);
      const read = await gw.request("GET", `/v1/jobs/${submitted.json.id}`, { token: other.session_token });
      assert.equal(read.status, 404);
      assert.equal(read.json.error.code, "job_not_found");
    });
  });
}
