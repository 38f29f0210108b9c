/**
 * Fixtures of the OpenAI dialect's tests: a small real PNG (the simulator's placeholder encoder), to upload
 * as a reference image; the SDK error of a call that must fail; an account's balance checked against its
 * ledger; a funded account with the `openai` SDK pointed at the dialect.
 */
import assert from "node:assert/strict";
import type { Kysely } from "kysely";
import OpenAI, { APIError } from "openai";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import type { Database } from "../../src/storage/schema.ts";
import { renderPlaceholderPng } from "../../src/upstreams/simulator/images/png.ts";
import { ADMIN_TOKEN, type TestGateway } from "../helpers/gateway.ts";

/** A 64x64 PNG. */
export function tinyPng(): Buffer {
  return Buffer.from(renderPlaceholderPng(64, 64));
}

/** The error a call fails with (an APIError of the SDK); fails the test when the call succeeds. */
export async function failure(call: Promise<unknown>): Promise<APIError> {
  try {
    await call;
  } catch (err) {
    assert.ok(err instanceof APIError, `an APIError: ${String(err)}`);
    return err;
  }
  assert.fail("the call succeeded");
}

/** The account's balance (micro-USD), asserting first that it equals the sum of its ledger entries. */
export async function checkedBalance(db: Kysely<Database>, accountId: string): Promise<number> {
  const b = await getBalance(db, accountId);
  assert.equal(b, await ledgerSum(db, accountId), "balance == ledger sum");
  return b ?? -1;
}

/**
 * A new account on `gw` with 20 USD deposited and per-minute limits lifted (a suite makes more calls than
 * Tier 1 allows), and the `openai` SDK at `<gw>/openai/v1` with its key (no retries).
 */
export async function fundedClient(gw: TestGateway): Promise<{ user: Awaited<ReturnType<TestGateway["register"]>>; client: OpenAI }> {
  const user = await gw.register();
  await gw.deposit(user.user_id, 20);
  await gw.request("PUT", `/v1/admin/users/${user.user_id}/limits`, { token: ADMIN_TOKEN, body: { rpm: 10_000, per_model_rpm: 10_000 } });
  return { user, client: new OpenAI({ apiKey: user.api_key, baseURL: `${gw.url}/openai/v1`, maxRetries: 0 }) };
}
