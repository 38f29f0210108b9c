/**
 * The ways in (issue 28): `GET /` sends a browser to the console, and the "gateway ready" log line names
 * the console and API docs URLs, the database, the blob storage and the upstream sources loaded from
 * `UPSTREAMS` and `TEXT_UPSTREAMS` (names, protocols, families; never a key), as structured fields and a
 * readable `msg`; at a terminal `npm start` also prints them as a short block. The ready line is read from
 * a real `node src/main.ts serve` process.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";
import { freePort, spawnGateway } from "../helpers/process.ts";
import { databaseFacts, describeUpstreams, storageFacts } from "../../src/http/ready.ts";

describe("GET / and HEAD /", () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway("sqlite");
  });
  after(async () => {
    await gw?.close();
  });

  test("GET / redirects (302) to /console/", async () => {
    const res = await fetch(`${gw.url}/`, { redirect: "manual" });
    assert.equal(res.status, 302);
    assert.equal(res.headers.get("location"), "/console/");
    await res.arrayBuffer();
  });

  test("HEAD / answers the same redirect without a body", async () => {
    const res = await fetch(`${gw.url}/`, { method: "HEAD", redirect: "manual" });
    assert.equal(res.status, 302);
    assert.equal(res.headers.get("location"), "/console/");
    assert.equal((await res.arrayBuffer()).byteLength, 0);
  });

  test("other methods on / answer 405 naming the allowed ones, and / is not in the API document", async () => {
    const res = await fetch(`${gw.url}/`, { method: "POST", body: "{}", headers: { "content-type": "application/json" } });
    assert.equal(res.status, 405);
    await res.arrayBuffer();
    const doc = (await (await fetch(`${gw.url}/openapi.json`)).json()) as { paths: Record<string, unknown> };
    assert.equal(doc.paths["/"], undefined);
  });
});

/** The parsed "gateway ready" JSON line of a process's output. */
function readyLine(output: string): Record<string, unknown> & { msg: string } {
  const line = output.split("\n").find((l) => l.includes('"gateway ready at '));
  assert.ok(line, `no ready line in:\n${output}`);
  return JSON.parse(line) as Record<string, unknown> & { msg: string };
}

/** Waits until `output()` has a ready line (pino writes it just after `/healthz` starts answering). */
async function waitForReady(output: () => string): Promise<string> {
  for (let i = 0; i < 200 && !output().includes('"gateway ready at '); i++) await new Promise((r) => setTimeout(r, 25));
  return output();
}

describe("the ready line of `node src/main.ts serve`", () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "gw-ready-"));
  });
  after(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  test("without UPSTREAMS: console, docs, the SQLite file, the local folder, and every model on the simulator", async () => {
    const gw = await spawnGateway("serve", {
      LOG_LEVEL: "info",
      DATABASE_URL: `sqlite:${join(dir, "a.db")}`,
      STORAGE_URL: `file:${join(dir, "blobs-a")}`,
      UPSTREAMS: "",
      TEXT_UPSTREAMS: "",
      PUBLIC_BASE_URL: "",
    });
    try {
      const line = readyLine(await waitForReady(gw.output));
      assert.equal(line.console, `${gw.url}/console/`);
      assert.equal(line.api_docs, `${gw.url}/docs`);
      assert.deepEqual(line.database, { kind: "sqlite", file: join(dir, "a.db") });
      assert.deepEqual(line.storage, { kind: "local", folder: join(dir, "blobs-a") });
      assert.equal(line.upstreams_setting, "unset");
      assert.deepEqual(line.upstreams, []);
      assert.equal(line.simulator, "every model");
      assert.equal(line.admin_api, false);
      assert.equal(line.payments, "off");
      assert.equal(
        line.msg,
        `gateway ready at ${gw.url}; console ${gw.url}/console/${line.console_built ? "" : " (not built: npm run build:console)"}; ` +
          `API docs ${gw.url}/docs; database SQLite file ${join(dir, "a.db")}; storage local folder ${join(dir, "blobs-a")}; ` +
          "upstreams none: every model on the built-in simulator (UPSTREAMS not set)",
      );
      // stdout is a pipe here: JSON lines only, no block for a person.
      assert.ok(!gw.output().includes("Gateway ready at"), gw.output());
    } finally {
      await gw.stop();
    }
  });

  test("with an UPSTREAMS file and TEXT_UPSTREAMS: names, protocols, families and hosts, never a key", async () => {
    const FAL_KEY = "fal-SECRET-key-0001";
    const LITERAL_KEY = "eleven-SECRET-key-0002";
    const TEXT_KEY = "text-SECRET-key-0003";
    const file = join(dir, "upstreams.json");
    writeFileSync(
      file,
      JSON.stringify([
        { name: "fal-main", protocol: "fal", base_url: "http://127.0.0.1:9/fal", api_key: "env:FAL_KEY_FOR_TEST", families: ["imgA", "vidA"] },
        { name: "eleven", protocol: "elevenlabs", base_url: "http://127.0.0.1:9", api_key: LITERAL_KEY, families: ["alpha"] },
      ]),
    );
    const gw = await spawnGateway("serve", {
      LOG_LEVEL: "info",
      DATABASE_URL: `sqlite:${join(dir, "b.db")}`,
      STORAGE_URL: `file:${join(dir, "blobs-b")}`,
      UPSTREAMS: file,
      FAL_KEY_FOR_TEST: FAL_KEY,
      TEXT_UPSTREAMS: JSON.stringify([{ name: "text-1", baseUrl: "http://127.0.0.1:9/v1", apiKey: TEXT_KEY, families: ["txtA"] }]),
      GATEWAY_ADMIN_TOKEN: "ready-line-admin-token-0123456789",
    });
    try {
      const output = await waitForReady(gw.output);
      const line = readyLine(output);
      assert.equal(line.upstreams_setting, "set");
      assert.deepEqual(line.upstreams, [
        { name: "fal-main", protocol: "fal", families: ["imgA", "vidA"], from: "UPSTREAMS", host: "127.0.0.1:9" },
        { name: "eleven", protocol: "elevenlabs", families: ["alpha"], from: "UPSTREAMS", host: "127.0.0.1:9" },
        { name: "text-1", protocol: "openai", families: ["txtA"], from: "TEXT_UPSTREAMS", host: "127.0.0.1:9" },
      ]);
      assert.ok(Array.isArray(line.simulator));
      const simulated = line.simulator as string[];
      for (const f of ["imgA", "vidA", "alpha", "txtA"]) assert.ok(!simulated.includes(f), f);
      for (const f of ["beta", "imgB", "vidB"]) assert.ok(simulated.includes(f), f);
      assert.equal(line.admin_api, true);
      assert.match(
        line.msg,
        /; upstreams fal-main \(fal: imgA, vidA\), eleven \(elevenlabs: alpha\), text-1 \(openai, TEXT_UPSTREAMS: txtA\); simulator: .*beta/,
      );
      for (const secret of [FAL_KEY, LITERAL_KEY, TEXT_KEY, "SECRET", "ready-line-admin-token"]) {
        assert.ok(!output.includes(secret), `the output shows ${secret}`);
      }
    } finally {
      await gw.stop();
    }
  });

  test("at a terminal (a pseudo-terminal from script(1)), a short block for a person follows the JSON line", { skip: spawnSync("script", ["--version"]).status !== 0 || spawnSync("curl", ["--version"]).status !== 0 ? "needs script(1) and curl" : false }, async () => {
    const port = await freePort();
    const env = {
      ...process.env,
      LOG_LEVEL: "info",
      HOST: "127.0.0.1",
      PORT: String(port),
      DATABASE_URL: `sqlite:${join(dir, "c.db")}`,
      STORAGE_URL: `file:${join(dir, "blobs-c")}`,
      UPSTREAMS: "",
      TEXT_UPSTREAMS: "",
      PUBLIC_BASE_URL: "",
    };
    // The gateway runs under a pseudo-terminal and is stopped (SIGTERM) once it printed its block.
    const cmd = `${JSON.stringify(process.execPath)} src/main.ts serve & pid=$!; for i in $(seq 200); do sleep 0.05; curl -sf http://127.0.0.1:${port}/healthz >/dev/null && break; done; sleep 0.3; kill -TERM $pid; wait $pid`;
    const run = spawnSync("script", ["-qfec", cmd, "/dev/null"], { env, encoding: "utf8", timeout: 30_000 });
    const out = run.stdout.replaceAll("\r", "");
    const base = `http://127.0.0.1:${port}`;
    assert.match(out, /"msg":"gateway ready at /);
    assert.ok(out.includes(`Gateway ready at ${base}\n`), out);
    assert.ok(out.includes(`  Console       ${base}/console/`), out);
    assert.ok(out.includes(`  API docs      ${base}/docs\n`), out);
    assert.ok(out.indexOf('"msg":"gateway ready at ') < out.indexOf("Gateway ready at "), "the block follows the JSON line");
    assert.ok(out.includes(`  Database      SQLite file ${join(dir, "c.db")}\n`), out);
    assert.ok(out.includes(`  Storage       local folder ${join(dir, "blobs-c")}\n`), out);
    assert.ok(out.includes("  Upstreams     none: every model on the built-in simulator (UPSTREAMS not set)\n"), out);
  });
});

describe("what the ready line says about DATABASE_URL and STORAGE_URL", () => {
  test("PostgreSQL: host, database and user, never the password", () => {
    const facts = databaseFacts("postgres://gw:pa%40ss-SECRET@db.internal:5433/gateway?sslmode=require");
    assert.deepEqual(facts, { kind: "postgres", host: "db.internal:5433", database: "gateway", user: "gw" });
    assert.ok(!JSON.stringify(facts).includes("SECRET"));
  });

  test("SQLite: the file, resolved as the database opens it", () => {
    assert.deepEqual(databaseFacts("sqlite:./data/gateway.db", "/srv/gw"), { kind: "sqlite", file: "/srv/gw/data/gateway.db" });
    assert.deepEqual(databaseFacts("/var/lib/gw.db", "/srv/gw"), { kind: "sqlite", file: "/var/lib/gw.db" });
  });

  test("S3: bucket, prefix, endpoint origin and region, never credentials", () => {
    const facts = storageFacts({
      storageUrl: "s3://media-out/gw/blobs/",
      s3: { endpoint: "http://minio:9000/", region: "eu-west-1", accessKeyId: "AKIA-SECRET", secretAccessKey: "s3-SECRET" },
    });
    assert.deepEqual(facts, { kind: "s3", bucket: "media-out", prefix: "gw/blobs", endpoint: "http://minio:9000", region: "eu-west-1" });
    assert.deepEqual(storageFacts({ storageUrl: "file:./data/blobs", s3: { region: "us-east-1" } }, "/srv/gw"), { kind: "local", folder: "/srv/gw/data/blobs" });
  });

  test("UPSTREAMS set to an empty list says so", () => {
    assert.equal(describeUpstreams({ upstreams: [], upstreams_setting: "set", simulator: "every model" }), "none: every model on the built-in simulator (UPSTREAMS lists no source)");
  });
});
