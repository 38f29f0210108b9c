/**
 * An invite link (D41): `/console/invites/<token>`, made on the Members page. Signed out, the page offers
 * to sign in or register (both come back here with `next`); signed in, it names the account and accepts
 * (`POST /v1/invites/{token}/accept`), then selects the organization joined (org.ts) and goes to the
 * overview. The refusals say what to do: unknown, used or expired (404 `invite_not_found`: ask for a new
 * link), another email (403 `invite_email_mismatch`: sign out and sign in as the invited email), already
 * a member (409 `already_member`).
 */
import { useMutation, useQuery } from "@tanstack/react-query";
import { Link, useNavigate, useParams } from "react-router";
import { api, GatewayError, unwrap } from "../api.ts";
import { ErrorNotice } from "../components/states.tsx";
import { selectOrg } from "../org.ts";
import type { PageMeta } from "../pages.ts";
import { endSession, useSession } from "../session.ts";

export const page: PageMeta = { path: "/invites/:token", title: "Join an organization", group: "public", order: 95, nav: false };

/** What to do after a refused accept, by the D1 code; null: the message alone. */
function nextStep(err: unknown): string | null {
  if (!(err instanceof GatewayError)) return null;
  if (err.code === "invite_not_found") return "Ask the person who invited you for a new link.";
  if (err.code === "invite_email_mismatch") return "Sign out, then sign in or register with the email the invite was sent to.";
  if (err.code === "already_member") return "Choose the organization in the switcher of the sidebar.";
  return null;
}

function SignedOut({ here }: { here: string }) {
  const next = encodeURIComponent(here);
  return (
    <article className="narrow">
      <p>You were invited to join an organization on this gateway: its members share one balance, keys and usage.</p>
      <p>Sign in with the email the invite was sent to, or register with it if you have no account yet. You come back here to accept.</p>
      <p className="card-actions">
        <Link to={`/sign-in?next=${next}`} role="button">
          Sign in to accept
        </Link>
        <Link to={`/register?next=${next}`} role="button" className="secondary outline">
          Register to accept
        </Link>
      </p>
    </article>
  );
}

function Accept({ token }: { token: string }) {
  const navigate = useNavigate();
  const me = useQuery({ queryKey: ["me"], queryFn: () => unwrap(api.GET("/v1/auth/me")) });
  const accept = useMutation({
    mutationFn: () => unwrap(api.POST("/v1/invites/{token}/accept", { params: { path: { token } } })),
    onSuccess: (member) => {
      selectOrg(member.org_id);
      void navigate("/", { replace: true });
    },
  });
  const step = accept.isError ? nextStep(accept.error) : null;
  const mismatch = accept.error instanceof GatewayError && accept.error.code === "invite_email_mismatch";
  return (
    <article className="narrow">
      <p>
        You were invited to join an organization. You are signed in as <strong className="wrap-anywhere">{me.data?.email ?? "…"}</strong>: the invite
        must have been sent to this email.
      </p>
      {accept.isError && (
        <>
          <ErrorNotice error={accept.error} />
          {step && <p>{step}</p>}
        </>
      )}
      <p className="card-actions">
        {!mismatch && (
          <button type="button" aria-busy={accept.isPending} disabled={accept.isPending} onClick={() => accept.mutate()}>
            Accept and join
          </button>
        )}
        <button type="button" className={mismatch ? undefined : "secondary outline"} onClick={() => endSession("signed-out")}>
          Sign out to use another account
        </button>
      </p>
    </article>
  );
}

export default function InviteAccept() {
  const token = useParams().token ?? "";
  const session = useSession();
  if (session.token === null) return <SignedOut here={`/invites/${encodeURIComponent(token)}`} />;
  return <Accept token={token} />;
}
