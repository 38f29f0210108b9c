/**
 * Members of the selected organization (D41): the list with roles (`GET /v1/orgs/{id}/members`), changing
 * a role (`PATCH .../members/{user_id}`) and removing a member (`DELETE`), inviting by email and role
 * (`POST .../invites`: the one-time link `<origin>/console/invites/<token>` shown once with a copy button),
 * the pending invites with revoke (`GET|DELETE .../invites`), and leaving the organization (not offered to
 * its only owner, whom the gateway refuses with 409 `last_owner`: the page says what to do instead). The actions
 * show only to the roles that have them (roles.ts: admins manage members and viewers, owners anyone);
 * a refusal (403 `forbidden_role`, 409 `last_owner`, 409 `already_member`) shows the gateway's message.
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, Fragment, useState } from "react";
import { useNavigate } from "react-router";
import { api, type paths, unwrap } from "../api.ts";
import { ConfirmDialog } from "../components/ConfirmDialog.tsx";
import { SecretReveal } from "../components/CopyButton.tsx";
import { type Column, DataTable } from "../components/DataTable.tsx";
import { type Org, orgLabel, useActiveOrg } from "../components/OrgSwitcher.tsx";
import { ErrorNotice, Loading, QueryView } from "../components/states.tsx";
import { DateTime } from "../components/values.tsx";
import { selectOrg } from "../org.ts";
import type { PageMeta } from "../pages.ts";
import { assignableRoles, can, canManageMember, type Role, ROLE_HELP, ROLES } from "../roles.ts";
import { useSession } from "../session.ts";

export const page: PageMeta = { path: "/members", title: "Members", group: "customer", order: 70, section: "organization" };

type Member = paths["/v1/orgs/{org_id}/members"]["get"]["responses"][200]["content"]["application/json"]["data"][number];
type Invite = paths["/v1/orgs/{org_id}/invites"]["get"]["responses"][200]["content"]["application/json"]["data"][number];

/** The link an invited person opens: the console's invite page, which signs them in and accepts. */
export function inviteLink(token: string): string {
  return `${window.location.origin}/console/invites/${encodeURIComponent(token)}`;
}

function RoleLegend() {
  return (
    <details>
      <summary>What each role may do</summary>
      <dl className="limits narrow">
        {ROLES.map((r) => (
          <Fragment key={r}>
            <dt>{r}</dt>
            <dd>{ROLE_HELP[r]}</dd>
          </Fragment>
        ))}
      </dl>
    </details>
  );
}

function MemberList({ orgId, myRole }: { orgId: string; myRole: Role }) {
  const queryClient = useQueryClient();
  const { userId } = useSession();
  const members = useQuery({ queryKey: ["members", orgId], queryFn: () => unwrap(api.GET("/v1/orgs/{org_id}/members", { params: { path: { org_id: orgId } } })) });
  const [removing, setRemoving] = useState<Member | null>(null);
  const refresh = () => void queryClient.invalidateQueries({ queryKey: ["members"] });
  const change = useMutation({
    mutationFn: ({ m, role }: { m: Member; role: Role }) =>
      unwrap(api.PATCH("/v1/orgs/{org_id}/members/{user_id}", { params: { path: { org_id: orgId, user_id: m.user_id } }, body: { role } })),
    onSuccess: refresh,
    onError: refresh,
  });
  const remove = useMutation({
    mutationFn: (m: Member) => unwrap(api.DELETE("/v1/orgs/{org_id}/members/{user_id}", { params: { path: { org_id: orgId, user_id: m.user_id } } })),
    onSuccess: () => {
      setRemoving(null);
      refresh();
    },
  });
  const choices = assignableRoles(myRole);
  const columns: Column<Member>[] = [
    { header: "Email", cell: (m) => <span className="wrap-anywhere">{m.email}{m.user_id === userId && <small> (you)</small>}</span> },
    {
      header: "Role",
      cell: (m) =>
        m.user_id !== userId && canManageMember(myRole, m.role) ? (
          <select
            className="inline-select"
            aria-label={`Role of ${m.email}`}
            value={m.role}
            disabled={change.isPending}
            onChange={(e) => (change.reset(), change.mutate({ m, role: e.target.value as Role }))}
          >
            {choices.map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        ) : (
          m.role
        ),
    },
    { header: "Joined", cell: (m) => <DateTime iso={m.created_at} /> },
    {
      header: "Actions",
      cell: (m) =>
        m.user_id !== userId && canManageMember(myRole, m.role) ? (
          <button type="button" className="danger outline small" aria-label={`Remove ${m.email}`} onClick={() => (remove.reset(), setRemoving(m))}>
            Remove
          </button>
        ) : (
          <small>—</small>
        ),
    },
  ];
  return (
    <section aria-labelledby="members-title">
      <h2 id="members-title">Members</h2>
      {change.isError && <ErrorNotice error={change.error} />}
      {change.isSuccess && (
        <p role="status" className="notice success">
          {change.data.email} is now {change.data.role}.
        </p>
      )}
      <QueryView query={members}>{(d) => <DataTable columns={columns} rows={d.data} rowKey={(m) => m.user_id} />}</QueryView>
      <RoleLegend />
      <ConfirmDialog
        open={removing !== null}
        title="Remove this member?"
        confirmLabel="Remove member"
        busy={remove.isPending}
        onCancel={() => setRemoving(null)}
        onConfirm={() => removing && remove.mutate(removing)}
      >
        <p>
          {removing && <strong>{removing.email}</strong>} loses access to this organization at once. The keys they made stay the organization's and
          keep working: revoke them on the Keys page if they should stop.
        </p>
        {remove.isError && <ErrorNotice error={remove.error} />}
      </ConfirmDialog>
    </section>
  );
}

function InviteForm({ orgId, myRole }: { orgId: string; myRole: Role }) {
  const queryClient = useQueryClient();
  const choices = assignableRoles(myRole);
  const [email, setEmail] = useState("");
  const [role, setRole] = useState<Role>("member");
  const invite = useMutation({
    mutationFn: () => unwrap(api.POST("/v1/orgs/{org_id}/invites", { params: { path: { org_id: orgId } }, body: { email: email.trim(), role } })),
    onSuccess: () => {
      setEmail("");
      void queryClient.invalidateQueries({ queryKey: ["invites"] });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    invite.mutate();
  };
  return (
    <section aria-labelledby="invite-title">
      <h2 id="invite-title">Invite someone</h2>
      {invite.isSuccess && (
        <SecretReveal label={`Invite link for ${invite.data.email}`} secret={inviteLink(invite.data.token)}>
          <p>
            Send it to {invite.data.email}: it works once, until <DateTime iso={invite.data.expires_at} />, for someone signed in (or registering) with
            that email, who joins as {invite.data.role}.
          </p>
          <button type="button" className="secondary outline" onClick={() => invite.reset()}>
            Done, hide it
          </button>
        </SecretReveal>
      )}
      <form onSubmit={submit} className="invite-form">
        <div>
          <label htmlFor="invite-email">Email</label>
          <input id="invite-email" type="email" required maxLength={254} autoComplete="off" value={email} onChange={(e) => setEmail(e.target.value)} />
        </div>
        <div>
          <label htmlFor="invite-role">Role</label>
          <select id="invite-role" value={role} onChange={(e) => setRole(e.target.value as Role)}>
            {choices.map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        </div>
        <button type="submit" aria-busy={invite.isPending} disabled={invite.isPending}>
          Create invite link
        </button>
      </form>
      {invite.isError && <ErrorNotice error={invite.error} />}
    </section>
  );
}

function PendingInvites({ orgId }: { orgId: string }) {
  const queryClient = useQueryClient();
  const invites = useQuery({ queryKey: ["invites", orgId], queryFn: () => unwrap(api.GET("/v1/orgs/{org_id}/invites", { params: { path: { org_id: orgId } } })) });
  const [revoking, setRevoking] = useState<Invite | null>(null);
  const revoke = useMutation({
    mutationFn: (i: Invite) => unwrap(api.DELETE("/v1/orgs/{org_id}/invites/{invite_id}", { params: { path: { org_id: orgId, invite_id: i.id } } })),
    onSuccess: () => {
      setRevoking(null);
      void queryClient.invalidateQueries({ queryKey: ["invites"] });
    },
  });
  const columns: Column<Invite>[] = [
    { header: "Email", cell: (i) => <span className="wrap-anywhere">{i.email}</span> },
    { header: "Role", cell: (i) => i.role },
    {
      header: "Expires",
      cell: (i) =>
        i.expired ? (
          <span className="status status-expired">expired</span>
        ) : (
          <DateTime iso={i.expires_at} />
        ),
    },
    {
      header: "Actions",
      cell: (i) => (
        <button type="button" className="danger outline small" aria-label={`Revoke the invite of ${i.email}`} onClick={() => (revoke.reset(), setRevoking(i))}>
          Revoke
        </button>
      ),
    },
  ];
  return (
    <section aria-labelledby="invites-title">
      <h2 id="invites-title">Pending invites</h2>
      <QueryView query={invites} isEmpty={(d) => d.data.length === 0} empty="No pending invites.">
        {(d) => <DataTable columns={columns} rows={d.data} rowKey={(i) => i.id} />}
      </QueryView>
      <ConfirmDialog
        open={revoking !== null}
        title="Revoke this invite?"
        confirmLabel="Revoke invite"
        busy={revoke.isPending}
        onCancel={() => setRevoking(null)}
        onConfirm={() => revoking && revoke.mutate(revoking)}
      >
        <p>The link sent to {revoking && <strong>{revoking.email}</strong>} stops working. You can invite them again later.</p>
        {revoke.isError && <ErrorNotice error={revoke.error} />}
      </ConfirmDialog>
    </section>
  );
}

/**
 * Leaving the organization, offered only when the gateway would allow it (issue 42): its last owner cannot
 * leave (409 `last_owner`, src/accounts/orgs.ts `removeMember`), so an only owner (of a personal
 * organization too) is told what to do instead of being offered a refusal.
 */
function Leave({ org, name }: { org: Org; name: string }) {
  const { userId } = useSession();
  const navigate = useNavigate();
  const [asking, setAsking] = useState(false);
  const members = useQuery({ queryKey: ["members", org.id], queryFn: () => unwrap(api.GET("/v1/orgs/{org_id}/members", { params: { path: { org_id: org.id } } })) });
  const orgId = org.id;
  const leave = useMutation({
    mutationFn: () => unwrap(api.DELETE("/v1/orgs/{org_id}/members/{user_id}", { params: { path: { org_id: orgId, user_id: userId ?? "" } } })),
    onSuccess: () => {
      setAsking(false);
      // Back to the personal organization; the cache is reset (app.tsx).
      selectOrg(null);
      void navigate("/");
    },
  });
  // Until the members are known, nothing is offered; an only owner is told why there is no button.
  const owners = members.data?.data.filter((m) => m.role === "owner").length;
  const onlyOwner = org.role === "owner" && owners !== undefined && owners <= 1;
  return (
    <section aria-labelledby="leave-title">
      <h2 id="leave-title">Leave the organization</h2>
      {owners === undefined ? null : onlyOwner ? (
        <p>
          {org.personal
            ? `${name} is your personal organization and you are its only owner: it stays yours. To leave it, give another member the owner role first.`
            : `You are the only owner of ${name}, so you cannot leave it: give another member the owner role first.`}
        </p>
      ) : (
        <>
          <p>You lose access to {name} at once; the keys you made stay its own.</p>
          <button type="button" className="danger outline page-action" onClick={() => (leave.reset(), setAsking(true))}>
            Leave {name}
          </button>
        </>
      )}
      <ConfirmDialog open={asking} title={`Leave ${name}?`} confirmLabel="Leave" busy={leave.isPending} onCancel={() => setAsking(false)} onConfirm={() => leave.mutate()}>
        <p>To come back you need a new invite.</p>
        {leave.isError && <ErrorNotice error={leave.error} />}
      </ConfirmDialog>
    </section>
  );
}

export default function Members() {
  const org = useActiveOrg();
  if (!org) return <Loading label="Loading the organization…" />;
  const name = orgLabel(org);
  return (
    <>
      <p className="lead">
        Who shares <strong>{name}</strong>: its balance, keys and usage. Your role: <strong>{org.role}</strong>.
      </p>
      <MemberList orgId={org.id} myRole={org.role} />
      {can(org.role, "members") && (
        <>
          <InviteForm orgId={org.id} myRole={org.role} />
          <PendingInvites orgId={org.id} />
        </>
      )}
      <Leave org={org} name={name} />
    </>
  );
}
