/** Sign in with email and password (`POST /v1/auth/login`, D8): starts a session and returns to `next`. */
import { useMutation } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { Link, useNavigate, useSearchParams } from "react-router";
import { api, unwrap } from "../api.ts";
import { ErrorNotice } from "../components/states.tsx";
import type { PageMeta } from "../pages.ts";
import { startSession, useSession } from "../session.ts";

export const page: PageMeta = { path: "/sign-in", title: "Sign in", group: "public", order: 90, nav: false };

/** `next` when it is a path of this console (never another site), else the overview. */
export function safeNext(next: string | null): string {
  return next && next.startsWith("/") && !next.startsWith("//") ? next : "/";
}

export default function SignIn() {
  const session = useSession();
  const navigate = useNavigate();
  const [params] = useSearchParams();
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const login = useMutation({
    mutationFn: () => unwrap(api.POST("/v1/auth/login", { body: { email, password } })),
    onSuccess: (data) => {
      startSession(data.session_token, data.user_id);
      void navigate(safeNext(params.get("next")), { replace: true });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    login.mutate();
  };
  return (
    <div className="auth-layout">
      <section className="auth-intro" aria-labelledby="about-title">
        <h2 id="about-title">One API for generated media</h2>
        <p>
          Media Gateway is a paid HTTP API in front of several generative-media providers: speech, music and sound effects, images, video and
          chat, behind one key and billed per call from a prepaid balance.
        </p>
        <p>Signed in, you can:</p>
        <ul>
          <li>create API keys (live, or test keys that move no money);</li>
          <li>try every model in the playground;</li>
          <li>follow your jobs, usage and spend, and browse the gallery of what you made;</li>
          <li>top up, set a low-balance alert and connect webhooks.</li>
        </ul>
        <p>
          <small>
            See the <Link to="/pricing">pricing</Link> and the <a href="/docs">API reference</a> without an account.
          </small>
        </p>
      </section>
      <article className="auth-card">
        {session.ended === "expired" && (
          <p role="status" className="notice">
            Your session has ended. Sign in again to continue.
          </p>
        )}
        <form onSubmit={submit}>
          <label htmlFor="signin-email">Email</label>
          <input id="signin-email" type="email" autoComplete="email" required value={email} onChange={(e) => setEmail(e.target.value)} />
          <label htmlFor="signin-password">Password</label>
          <input
            id="signin-password"
            type="password"
            autoComplete="current-password"
            required
            value={password}
            onChange={(e) => setPassword(e.target.value)}
          />
          {login.isError && <ErrorNotice error={login.error} />}
          <button type="submit" aria-busy={login.isPending} disabled={login.isPending}>
            Sign in
          </button>
        </form>
        <p>
          <small>
            No account yet? <Link to={params.get("next") ? `/register?next=${encodeURIComponent(params.get("next") ?? "")}` : "/register"}>Register</Link>: it comes
            with a signup credit.
          </small>
        </p>
      </article>
    </div>
  );
}
