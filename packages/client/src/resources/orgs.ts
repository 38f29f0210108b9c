/**
 * Organizations (D41): `client.orgs` lists, makes, renames and deletes the caller's organizations, with
 * their members (`client.orgs.members`) and invites (`client.orgs.invites`); `client.invites.accept`
 * joins one. An organization is the billing entity (balance, ledger, tier, limits, keys); users are its
 * members in a role: `owner` (everything), `admin` (keys, members below admin, webhooks, alerts,
 * top-ups), `member` (calls, own keys, reads), `viewer` (reads).
 *
 * The role is checked in the organization of the path (not the one the client's `org` names): an action
 * the caller's role does not allow throws `PermissionDeniedError` (403 `forbidden_role`); an
 * organization the caller does not belong to, or an API key's other than its own, `NotFoundError` (404
 * `org_not_found`, never 403). A session token reaches every organization of its user, an API key its
 * own only (acting at most as `admin`); invites are accepted with a session of the invited email.
 *
 * ```ts
 * const team = await client.orgs.create({ name: "Acme Studio" });                 // the caller owns it
 * const invite = await client.orgs.invites.create(team.id, { email: "bob@example.com", role: "member" });
 * await bob.invites.accept(invite.token);                                         // bob: a session client
 * const acme = client.withOrg(team.id);                                           // X-Svc-Org: team.id
 * await acme.keys.create({ name: "ci" });                                         // a key of the team
 * ```
 */
import { type APIClient, type RequestOptions, unwrap } from "../core.ts";
import type { Answer, JsonBody } from "../types.ts";

/** `client.orgs`: the caller's organizations. */
export class Orgs {
  private readonly client: APIClient;
  /** `client.orgs.members`: who belongs to an organization, in which role. */
  readonly members: OrgMembers;
  /** `client.orgs.invites`: invites by email, not accepted yet. */
  readonly invites: OrgInvites;

  constructor(client: APIClient) {
    this.client = client;
    this.members = new OrgMembers(client);
    this.invites = new OrgInvites(client);
  }

  /**
   * `GET /v1/orgs`: `{object: "list", data}` of organizations (`id`, `name`, the caller's `role`,
   * `balance_usd` in USD, `tier`, `tier_name`, `total_deposits_usd`, `created_at`). A session lists every
   * organization of its user, oldest membership first; an API key only its own. Not paginated.
   */
  list(options: RequestOptions = {}): Promise<Answer<"listOrgs">> {
    return unwrap(this.client.raw.GET("/v1/orgs", this.client.requestInit(options)));
  }

  /**
   * `POST /v1/orgs {name}`: a new organization (1 to 100 characters of name) owned by the caller (a
   * session's user, or the user who made the API key), balance 0: only personal organizations get the
   * signup credit. Throws `BadRequestError` (400 `invalid_request`, name), `PermissionDeniedError` (403
   * `forbidden_role`, a key without a member behind it). Not retried.
   */
  create(body: JsonBody<"createOrg">, options: RequestOptions = {}): Promise<Answer<"createOrg">> {
    return unwrap(this.client.raw.POST("/v1/orgs", { body, ...this.client.requestInit(options) }));
  }

  /** `GET /v1/orgs/{org_id}`: one organization with the caller's role. Throws `NotFoundError` (404 `org_not_found`). */
  get(orgId: string, options: RequestOptions = {}): Promise<Answer<"getOrg">> {
    return unwrap(this.client.raw.GET("/v1/orgs/{org_id}", { params: { path: { org_id: orgId } }, ...this.client.requestInit(options) }));
  }

  /**
   * `PATCH /v1/orgs/{org_id} {name?, retention?}`: renames the organization (admins and owners) and/or sets
   * its own retention windows (`{prompts_days, outputs_days}`: days from 0 up to the operator's, null for the
   * operator's; owners' sessions only). Throws `PermissionDeniedError` (403 `forbidden_role`),
   * `NotFoundError` (404 `org_not_found`), `BadRequestError` (400: name, a window). Not retried.
   */
  update(orgId: string, body: JsonBody<"updateOrg">, options: RequestOptions = {}): Promise<Answer<"updateOrg">> {
    return unwrap(this.client.raw.PATCH("/v1/orgs/{org_id}", { params: { path: { org_id: orgId } }, body, ...this.client.requestInit(options) }));
  }

  /**
   * `DELETE /v1/orgs/{org_id}`: deletes an empty organization (owners only, so a session: API keys act as
   * admin at most). Its members, invites and keys go (the keys stop at once); its ledger, usage and jobs
   * stay for the operator. Throws `PermissionDeniedError` (403 `forbidden_role`), `NotFoundError` (404
   * `org_not_found`), `ConflictError` (409 `personal_org`; `org_not_empty`: a balance, or calls or jobs in
   * progress).
   */
  delete(orgId: string, options: RequestOptions = {}): Promise<Answer<"deleteOrg">> {
    return unwrap(this.client.raw.DELETE("/v1/orgs/{org_id}", { params: { path: { org_id: orgId } }, ...this.client.requestInit(options) }));
  }
}

/** `client.orgs.members`. */
export class OrgMembers {
  private readonly client: APIClient;

  constructor(client: APIClient) {
    this.client = client;
  }

  /**
   * `GET /v1/orgs/{org_id}/members`: `{object: "list", data}` of members (`user_id`, `email`, `role`,
   * `created_at`: when they joined), oldest first; every member may list them. Throws `NotFoundError`
   * (404 `org_not_found`).
   */
  list(orgId: string, options: RequestOptions = {}): Promise<Answer<"listOrgMembers">> {
    return unwrap(this.client.raw.GET("/v1/orgs/{org_id}/members", { params: { path: { org_id: orgId } }, ...this.client.requestInit(options) }));
  }

  /**
   * `PATCH /v1/orgs/{org_id}/members/{user_id} {role}`: changes a member's role. Admins move members and
   * viewers between those two roles, owners anyone to any role. Throws `PermissionDeniedError` (403
   * `forbidden_role`), `NotFoundError` (404 `org_not_found`, `member_not_found`), `ConflictError` (409
   * `last_owner`: the only owner cannot be demoted). Not retried.
   */
  update(orgId: string, userId: string, body: JsonBody<"updateOrgMember">, options: RequestOptions = {}): Promise<Answer<"updateOrgMember">> {
    return unwrap(
      this.client.raw.PATCH("/v1/orgs/{org_id}/members/{user_id}", { params: { path: { org_id: orgId, user_id: userId } }, body, ...this.client.requestInit(options) }),
    );
  }

  /**
   * `DELETE /v1/orgs/{org_id}/members/{user_id}`: removes a member, or leaves (a session's own user id).
   * Admins remove members and viewers, owners anyone; the keys the member made stay the organization's
   * and keep working. Throws `PermissionDeniedError` (403 `forbidden_role`), `NotFoundError` (404
   * `org_not_found`, `member_not_found`), `ConflictError` (409 `last_owner`).
   */
  remove(orgId: string, userId: string, options: RequestOptions = {}): Promise<Answer<"removeOrgMember">> {
    return unwrap(this.client.raw.DELETE("/v1/orgs/{org_id}/members/{user_id}", { params: { path: { org_id: orgId, user_id: userId } }, ...this.client.requestInit(options) }));
  }
}

/** `client.orgs.invites`. */
export class OrgInvites {
  private readonly client: APIClient;

  constructor(client: APIClient) {
    this.client = client;
  }

  /**
   * `POST /v1/orgs/{org_id}/invites {email, role}`: an invite the invited person accepts within 7 days
   * (`client.invites.accept`, with a session of that email). The answer's `token` is shown only here.
   * Admins invite members and viewers, owners any role. Throws `PermissionDeniedError` (403
   * `forbidden_role`), `NotFoundError` (404 `org_not_found`), `BadRequestError` (400, email or role),
   * `ConflictError` (409 `already_member`). Not retried.
   */
  create(orgId: string, body: JsonBody<"createOrgInvite">, options: RequestOptions = {}): Promise<Answer<"createOrgInvite">> {
    return unwrap(this.client.raw.POST("/v1/orgs/{org_id}/invites", { params: { path: { org_id: orgId } }, body, ...this.client.requestInit(options) }));
  }

  /**
   * `GET /v1/orgs/{org_id}/invites`: `{object: "list", data}` of invites not accepted yet, newest first,
   * expired ones included (`expired`), never their tokens (admins and owners). Throws
   * `PermissionDeniedError` (403 `forbidden_role`), `NotFoundError` (404 `org_not_found`).
   */
  list(orgId: string, options: RequestOptions = {}): Promise<Answer<"listOrgInvites">> {
    return unwrap(this.client.raw.GET("/v1/orgs/{org_id}/invites", { params: { path: { org_id: orgId } }, ...this.client.requestInit(options) }));
  }

  /**
   * `DELETE /v1/orgs/{org_id}/invites/{invite_id}`: the invite can no longer be accepted (admins and
   * owners). Throws `PermissionDeniedError` (403 `forbidden_role`), `NotFoundError` (404 `org_not_found`,
   * `invite_not_found`: unknown or already accepted).
   */
  revoke(orgId: string, inviteId: string, options: RequestOptions = {}): Promise<Answer<"revokeOrgInvite">> {
    return unwrap(
      this.client.raw.DELETE("/v1/orgs/{org_id}/invites/{invite_id}", { params: { path: { org_id: orgId, invite_id: inviteId } }, ...this.client.requestInit(options) }),
    );
  }
}

/** `client.invites`: invites received. */
export class Invites {
  private readonly client: APIClient;

  constructor(client: APIClient) {
    this.client = client;
  }

  /**
   * `POST /v1/invites/{token}/accept`: with a session token of the invited email's user, joins the
   * organization in the invite's role; resolves to the new membership (`org_id`, `user_id`, `email`,
   * `role`). An invite is accepted once, within 7 days. Throws `PermissionDeniedError` (403
   * `invite_email_mismatch`; `forbidden_role` with an API key), `NotFoundError` (404 `invite_not_found`:
   * unknown, used or expired), `ConflictError` (409 `already_member`). Not retried.
   */
  accept(token: string, options: RequestOptions = {}): Promise<Answer<"acceptOrgInvite">> {
    return unwrap(this.client.raw.POST("/v1/invites/{token}/accept", { params: { path: { token } }, ...this.client.requestInit(options) }));
  }
}
