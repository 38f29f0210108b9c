/**
 * safePost (upstreams/safe-fetch.ts), the sender of webhook deliveries (D31): the address rule is applied
 * when connecting, so a name that resolves to a private address is refused at delivery time even though
 * nothing checked it before; `http:` needs `allowHttp`; `allowPrivateAddresses` (WEBHOOK_ALLOW_PRIVATE)
 * lets a loopback receiver through; a non-2xx answer is returned, a redirect is not followed.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { safePost, UnsafeUrlError } from "../../src/upstreams/safe-fetch.ts";
import { type Receiver, startReceiver } from "./receiver.ts";

let rx: Receiver;
before(async () => {
  rx = await startReceiver();
});
after(async () => {
  await rx.close();
});

const opts = { headers: { "content-type": "application/json" }, timeoutMs: 5000 };

test("a name resolving to loopback is refused when connecting; nothing reaches the receiver", async () => {
  const port = new URL(rx.url).port;
  await assert.rejects(safePost(`https://localhost:${port}/hook`, "{}", opts), (err: unknown) => err instanceof UnsafeUrlError && err.reason === "refused_address");
  await assert.rejects(safePost(`${rx.url}/hook`, "{}", opts), (err: unknown) => err instanceof UnsafeUrlError && err.reason === "scheme_not_allowed");
  await assert.rejects(safePost(`${rx.url}/hook`, "{}", { ...opts, allowHttp: true }), (err: unknown) => err instanceof UnsafeUrlError && err.reason === "refused_address");
  assert.equal(rx.received.length, 0);
});

test("with allowPrivateAddresses the loopback receiver gets the body and headers; its status is returned; redirects are not followed", async () => {
  rx.respond = ({ path }) => (path === "/moved" ? 302 : path === "/fail" ? 503 : 204);
  const ok = await safePost(`${rx.url}/hook`, '{"a":1}', { ...opts, allowHttp: true, allowPrivateAddresses: true, headers: { "content-type": "application/json", "webhook-id": "evt_x" } });
  assert.equal(ok.status, 204);
  assert.equal(rx.on("/hook")[0].body, '{"a":1}');
  assert.equal(rx.on("/hook")[0].headers["webhook-id"], "evt_x");
  assert.equal((await safePost(`${rx.url}/fail`, "{}", { ...opts, allowHttp: true, allowPrivateAddresses: true })).status, 503);
  assert.equal((await safePost(`${rx.url}/moved`, "{}", { ...opts, allowHttp: true, allowPrivateAddresses: true })).status, 302);
});
