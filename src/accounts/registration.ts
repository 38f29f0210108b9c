/**
 * Registration and login (spec "Authentication", D2, D8, D9, D41): a user with a personal organization
 * (its owner), the signup credit on that organization, a first API key and a session; a login opens a new
 * session of the user. Secrets are returned once, at creation, and stored only as SHA-256 hashes
 * (passwords as scrypt hashes).
 */
import type { LoginBody, RegisterBody } from "../contracts/auth.ts";
import { credit, type Executor, inTransaction } from "../billing/ledger.ts";
import type { Micros } from "../money.ts";
import { errors } from "../errors.ts";
import { newId } from "../ids.ts";
import { isUniqueViolation } from "../storage/db.ts";
import { credentialsByEmail, insertAccount, insertSession, insertUser } from "./accounts.repository.ts";
import { insertApiKey } from "./keys.repository.ts";
import { insertMembership } from "./orgs.repository.ts";
import { keyRoleFor } from "./roles.ts";
import { hashPassword, hashSecret, newApiKeySecret, newSessionToken, verifyPassword } from "./secrets.ts";

/** Signup credit, micro-USD (spec: 0.50 USD). */
export const SIGNUP_CREDIT_MICROS: Micros = 500_000;
/** Session lifetime, ms (30 days). */
const SESSION_TTL_MS = 30 * 24 * 3600 * 1000;
const EMAIL_RE = /^[^\s@]{1,64}@[^\s@]{1,189}\.[^\s@]{1,63}$/;

function validateCredentials(email: unknown, password: unknown): { email: string; password: string } {
  if (typeof email !== "string" || !EMAIL_RE.test(email.trim()) || email.length > 254) {
    throw errors.invalidRequest("email must be a valid email address.", "email");
  }
  if (typeof password !== "string" || password.length < 8) {
    throw errors.invalidRequest("password must be at least 8 characters.", "password");
  }
  if (password.length > 1024) throw errors.invalidRequest("password is too long (max 1024).", "password");
  return { email: email.trim().toLowerCase(), password };
}

/**
 * Registers a user (`usr_...`) with a personal organization (`org_...`, D41) it owns, the signup credit
 * on that organization (ledger kind `signup_credit`; only personal organizations get one), a first API key
 * of the organization and a session. Returns the secrets (shown only here).
 * @throws AppError 400 invalid_request (bad email, password under 8), 409 email_taken.
 */
export async function register(
  db: Executor,
  body: RegisterBody,
): Promise<{ user_id: string; org_id: string; api_key: string; session_token: string }> {
  const { email, password } = validateCredentials(body.email, body.password);
  const passwordHash = await hashPassword(password);
  const userId = newId("usr");
  const accountId = newId("org");
  const apiKey = newApiKeySecret();
  const session = newSessionToken();
  const now = Date.now();
  try {
    await inTransaction(db, async (trx) => {
      await insertAccount(trx, { id: accountId, name: email, createdAt: now });
      await insertUser(trx, { id: userId, email, passwordHash, personalOrgId: accountId, createdAt: now });
      await insertMembership(trx, { orgId: accountId, userId, role: "owner", createdAt: now });
      await credit(trx, {
        accountId,
        kind: "signup_credit",
        amountMicros: SIGNUP_CREDIT_MICROS,
        reference: "signup",
        userId,
      });
      await insertApiKey(trx, {
        id: newId("key"),
        account_id: accountId,
        created_by: userId,
        role: keyRoleFor("owner"),
        name: "default",
        key_hash: hashSecret(apiKey),
        prefix: apiKey.slice(0, 12),
        created_at: now,
        last_used_at: null,
      });
      await insertSession(trx, {
        id: newId("ses"),
        userId,
        tokenHash: hashSecret(session),
        createdAt: now,
        expiresAt: now + SESSION_TTL_MS,
      });
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw errors.emailTaken();
    throw err;
  }
  return { user_id: userId, org_id: accountId, api_key: apiKey, session_token: session };
}

/**
 * Logs in with email and password and opens a new session.
 * @throws AppError 401 auth_error with the same message for an unknown email and a wrong password (D2).
 */
export async function login(
  db: Executor,
  body: LoginBody,
): Promise<{ user_id: string; session_token: string }> {
  if (typeof body.email !== "string" || typeof body.password !== "string") {
    throw errors.invalidRequest(
      "email and password are required strings.",
      typeof body.email !== "string" ? "email" : "password",
    );
  }
  const email = body.email.trim().toLowerCase();
  const row = await credentialsByEmail(db, email);
  const ok = await verifyPassword(body.password, row?.passwordHash ?? null);
  if (!row || !ok) throw errors.auth("Wrong email or password.");
  const token = newSessionToken();
  const now = Date.now();
  await insertSession(db, {
    id: newId("ses"),
    userId: row.id,
    tokenHash: hashSecret(token),
    createdAt: now,
    expiresAt: now + SESSION_TTL_MS,
  });
  return { user_id: row.id, session_token: token };
}
