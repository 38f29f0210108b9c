/**
 * `npm run fake-upstreams` starts the fal fake and prints the UPSTREAMS value that points a gateway at
 * it; that value is a valid configuration and the fake answers a submit in fal's shape.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { test } from "node:test";
import { loadConfig } from "../../src/config.ts";
import { loadUpstreams } from "../../src/upstreams/config.ts";

test("fake-upstreams prints a working UPSTREAMS value", async () => {
  const child = spawn(process.execPath, ["scripts/fake-upstreams.ts"], { env: { ...process.env, FAKE_FAL_PORT: "0", FAKE_KEY: "k-123" }, stdio: ["ignore", "pipe", "pipe"] });
  try {
    let out = "";
    await new Promise<void>((resolve, reject) => {
      child.stdout.on("data", (d: Buffer) => {
        out += d.toString();
        if (out.includes("npm start")) resolve();
      });
      child.on("exit", (code) => reject(new Error(`exited ${code}: ${out}`)));
    });
    const upstreams = /UPSTREAMS='([^']+)'/.exec(out)?.[1];
    assert.ok(upstreams, out);
    const sources = loadUpstreams(loadConfig({ UPSTREAMS: upstreams, FAKE_KEY: "k-123" }));
    assert.equal(sources[0].protocol, "fal");
    const url = sources[0].baseUrl;
    const submit = await fetch(`${url}/fal-ai/recraft/v3/text-to-image`, { method: "POST", headers: { authorization: "Key k-123", "content-type": "application/json" }, body: JSON.stringify({ prompt: "x" }) });
    assert.equal(submit.status, 200);
    const body = (await submit.json()) as { request_id?: string; status?: string };
    assert.equal(body.status, "IN_QUEUE");
    assert.ok(body.request_id);
  } finally {
    child.kill("SIGTERM");
  }
});
