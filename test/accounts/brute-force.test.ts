/**
 * Brute force is slowed (issue "Hardening" 5): failed logins are limited per email and per client
 * address, registrations per client address; over the limit 429 `rate_limited` with `Retry-After`, in the
 * D1 body. On both limit stores (in-process and Redis, shared by processes).
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, test } from "node:test";
import { REDIS_SKIP, REDIS_TEST_URL } from "../helpers/backends.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";

/** Each gateway gets its own Redis key prefix, so no counter carries over between tests. */
const stores: { name: string; env: () => Record<string, string>; skip: string | false }[] = [
  { name: "in-process", env: () => ({}), skip: false },
  { name: "Redis", env: () => ({ REDIS_URL: REDIS_TEST_URL, REDIS_PREFIX: `bf-${randomBytes(4).toString("hex")}` }), skip: REDIS_SKIP },
];

const PASSWORD = "correct horse battery";

async function login(gw: TestGateway, email: string, password: string, address?: string) {
  // The client address is the socket's; with trustProxy off, X-Forwarded-For is ignored (it must not
  // let a client choose its own counter).
  return gw.request("POST", "/v1/auth/login", { body: { email, password }, headers: address ? { "x-forwarded-for": address } : {} });
}

for (const store of stores) {
  describe(`brute-force limits (${store.name} store)`, { skip: store.skip }, () => {
    test("the 4th failed login of an email answers 429 with Retry-After, even with the right password; other emails are unaffected", async () => {
      const gw = await startGateway("sqlite", { ...store.env(), LOGIN_FAILURES_PER_EMAIL: "3", LOGIN_FAILURES_PER_ADDRESS: "100" });
      try {
        const victim = await gw.register();
        const other = await gw.register();
        for (let i = 0; i < 3; i++) assert.equal((await login(gw, victim.email, "wrong password!")).status, 401);
        for (const password of ["wrong password!", PASSWORD]) {
          const r = await login(gw, victim.email, password);
          assert.equal(r.status, 429, password);
          assert.equal(r.json.error.code, "rate_limited");
          assert.equal(r.json.error.type, "rate_limit_error");
          const retry = Number(r.headers.get("retry-after"));
          assert.ok(retry >= 1 && retry <= 900, `Retry-After ${retry}`);
        }
        // The email is matched case-insensitively; another account logs in normally.
        assert.equal((await login(gw, victim.email.toUpperCase(), PASSWORD)).status, 429);
        assert.equal((await login(gw, other.email, PASSWORD)).status, 200);
      } finally {
        await gw.close();
      }
    });

    test("failed logins are limited per client address across emails", async () => {
      const gw = await startGateway("sqlite", { ...store.env(), LOGIN_FAILURES_PER_EMAIL: "100", LOGIN_FAILURES_PER_ADDRESS: "4" });
      try {
        const u = await gw.register();
        for (let i = 0; i < 4; i++) assert.equal((await login(gw, `nobody${i}@example.com`, "wrong password!")).status, 401);
        const r = await login(gw, u.email, PASSWORD, "203.0.113.9");
        assert.equal(r.status, 429, "a forged X-Forwarded-For does not escape the address limit");
        assert.ok(Number(r.headers.get("retry-after")) >= 1);
      } finally {
        await gw.close();
      }
    });

    test("a successful login clears the email's failures", async () => {
      const gw = await startGateway("sqlite", { ...store.env(), LOGIN_FAILURES_PER_EMAIL: "3", LOGIN_FAILURES_PER_ADDRESS: "100" });
      try {
        const u = await gw.register();
        for (let i = 0; i < 2; i++) assert.equal((await login(gw, u.email, "wrong password!")).status, 401);
        assert.equal((await login(gw, u.email, PASSWORD)).status, 200);
        for (let i = 0; i < 2; i++) assert.equal((await login(gw, u.email, "wrong password!")).status, 401);
        assert.equal((await login(gw, u.email, PASSWORD)).status, 200);
      } finally {
        await gw.close();
      }
    });

    test("registrations are limited per client address: the 3rd of 2 allowed answers 429 and creates nothing", async () => {
      const gw = await startGateway("sqlite", { ...store.env(), REGISTRATIONS_PER_ADDRESS: "2" });
      try {
        const email = (i: number) => `reg${i}-${randomBytes(4).toString("hex")}@example.com`;
        for (let i = 0; i < 2; i++) assert.equal((await gw.request("POST", "/v1/auth/register", { body: { email: email(i), password: PASSWORD } })).status, 200);
        const third = email(3);
        const r = await gw.request("POST", "/v1/auth/register", { body: { email: third, password: PASSWORD } });
        assert.equal(r.status, 429);
        assert.equal(r.json.error.code, "rate_limited");
        assert.ok(Number(r.headers.get("retry-after")) >= 1);
        const rows = await gw.services.db.kysely.selectFrom("users").select("id").where("email", "=", third).execute();
        assert.equal(rows.length, 0);
      } finally {
        await gw.close();
      }
    });
  });
}

test("the defaults: 10 failed logins per email and 30 per address in 15 minutes, 10 registrations per address per hour", async () => {
  const { loadConfig } = await import("../../src/config.ts");
  assert.deepEqual(loadConfig({}).authLimits, {
    loginFailuresPerEmail: 10,
    loginFailuresPerAddress: 30,
    loginWindowS: 900,
    registrationsPerAddress: 10,
    registrationWindowS: 3600,
  });
});

test("behind a trusted proxy (TRUST_PROXY) the address limit counts the forwarded client, not the proxy", async () => {
  const gw = await startGateway("sqlite", { LOGIN_FAILURES_PER_EMAIL: "100", LOGIN_FAILURES_PER_ADDRESS: "2", TRUST_PROXY: "loopback" });
  try {
    const u = await gw.register();
    for (let i = 0; i < 2; i++) assert.equal((await login(gw, `x${i}@example.com`, "wrong password!", "198.51.100.7")).status, 401);
    assert.equal((await login(gw, u.email, PASSWORD, "198.51.100.7")).status, 429);
    assert.equal((await login(gw, u.email, PASSWORD, "198.51.100.8")).status, 200, "another client behind the same proxy");
  } finally {
    await gw.close();
  }
});

test("with the limit store unreachable, even in closed mode, login and registration still work (the limits fail open)", async () => {
  const gw = await startGateway("sqlite", { REDIS_URL: "redis://127.0.0.1:1", LIMITS_ON_STORE_ERROR: "closed", REGISTRATIONS_PER_ADDRESS: "5" });
  try {
    const u = await gw.register();
    assert.equal((await login(gw, u.email, "wrong password!")).status, 401);
    assert.equal((await login(gw, u.email, PASSWORD)).status, 200);
  } finally {
    await gw.close();
  }
});
