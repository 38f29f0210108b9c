/**
 * Registration and login (spec "Authentication", D2, D8, D9, D41): a user with a personal organization
 * (its owner), the signup credit on that organization, a first API key and a session; a login opens a new
 * session of the user. Secrets are returned once, at creation, and stored only as SHA-256 hashes
 * (passwords as scrypt hashes). Registrations, sign-ins and failed sign-ins are in the audit log (D45:
 * `user.registered`, `session.created`, `session.failed`), never with a password or a token.
 */
import type { LoginBody, RegisterBody } from "../contracts/auth.ts";
import { credit, type Executor, inTransaction } from "../billing/ledger.ts";
import type { Micros } from "../money.ts";
import { errors } from "../errors.ts";
import { newId } from "../ids.ts";
import { isUniqueViolation } from "../storage/db.ts";
import { credentialsByEmail, insertAccount, insertSession, insertUser } from "./accounts.repository.ts";
import { type AuditRequest, recordAudit } from "./audit.ts";
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
 * of the organization and a session. Returns the secrets (shown only here). Writes `user.registered` (D45;
 * actor: the new user, with the request facts `audit`) in the same transaction.
 * @throws AppError 400 invalid_request (bad email, password under 8), 409 email_taken.
 */
export async function register(
  db: Executor,
  body: RegisterBody,
  audit: AuditRequest,
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
      await recordAudit(
        trx,
        { actor: { type: "user", id: userId, email }, ...audit },
        { orgId: accountId, action: "user.registered", target: { type: "user", id: userId }, changes: { email: [null, email] } },
      );
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw errors.emailTaken();
    throw err;
  }
  return { user_id: userId, org_id: accountId, api_key: apiKey, session_token: session };
}

/** The actor and target id of a failed sign-in whose email names no user (D45). */
export const UNKNOWN_USER = "unknown";

/**
 * Logs in with email and password and opens a new session. The audit log (D45) records the sign-in
 * (`session.created`, target the session id, organization the user's personal one) in the transaction
 * of the session, and a failed one (`session.failed`, actor the user of the email, or `unknown`, with
 * the email tried; organization the user's personal one, or null) in its own; never the password.
 * `audit` holds the request's id, address and user agent.
 * @throws AppError 401 auth_error with the same message for an unknown email and a wrong password (D2).
 */
export async function login(
  db: Executor,
  body: LoginBody,
  audit: AuditRequest,
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
  if (!row || !ok) {
    const tried = email.slice(0, 254);
    await inTransaction(db, (trx) =>
      recordAudit(
        trx,
        { actor: { type: "user", id: row?.id ?? UNKNOWN_USER, email: tried }, ...audit },
        { orgId: row?.personalOrgId ?? null, action: "session.failed", target: { type: "user", id: row?.id ?? UNKNOWN_USER } },
      ),
    );
    throw errors.auth("Wrong email or password.");
  }
  const token = newSessionToken();
  const now = Date.now();
  const sessionId = newId("ses");
  await inTransaction(db, async (trx) => {
    await insertSession(trx, {
      id: sessionId,
      userId: row.id,
      tokenHash: hashSecret(token),
      createdAt: now,
      expiresAt: now + SESSION_TTL_MS,
    });
    await recordAudit(
      trx,
      { actor: { type: "user", id: row.id, email }, ...audit },
      { orgId: row.personalOrgId, action: "session.created", target: { type: "session", id: sessionId } },
    );
  });
  return { user_id: row.id, session_token: token };
}
