/**
 * Register (`POST /v1/auth/register`, spec "Accounts"): the answer holds a session token, which signs the
 * user in, and the account's first API key, shown here once with a copy button. With `?next=<console
 * path>` (an invite link, D41) "Continue" goes there instead of the overview.
 */
import { useMutation } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { Link, useNavigate, useSearchParams } from "react-router";
import { api, unwrap } from "../api.ts";
import { SecretReveal } from "../components/CopyButton.tsx";
import { ErrorNotice } from "../components/states.tsx";
import type { PageMeta } from "../pages.ts";
import { startSession } from "../session.ts";
import { safeNext } from "./sign-in.tsx";

export const page: PageMeta = { path: "/register", title: "Register", group: "public", order: 91, nav: false };

/** The shortest password the gateway accepts. */
const MIN_PASSWORD = 8;

export default function Register() {
  const navigate = useNavigate();
  const [params] = useSearchParams();
  const next = params.get("next");
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const register = useMutation({
    mutationFn: () => unwrap(api.POST("/v1/auth/register", { body: { email, password } })),
    onSuccess: (data) => startSession(data.session_token, data.user_id),
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    register.mutate();
  };

  if (register.isSuccess) {
    return (
      <div className="narrow">
        <p role="status" className="notice success">
          Your account is ready and you are signed in.
        </p>
        <SecretReveal label="Your first API key" secret={register.data.api_key}>
          <p>
            Send it as <code>Authorization: Bearer &lt;key&gt;</code>. You can create more keys, and revoke this one, on the Keys page.
          </p>
        </SecretReveal>
        <button type="button" onClick={() => void navigate(safeNext(next))}>
          {next ? "Continue" : "Continue to the overview"}
        </button>
      </div>
    );
  }
  return (
    <div className="narrow">
      <form onSubmit={submit}>
        <label htmlFor="register-email">Email</label>
        <input id="register-email" type="email" autoComplete="email" required maxLength={254} value={email} onChange={(e) => setEmail(e.target.value)} />
        <label htmlFor="register-password">Password</label>
        <input
          id="register-password"
          type="password"
          autoComplete="new-password"
          required
          minLength={MIN_PASSWORD}
          maxLength={1024}
          aria-describedby="register-password-hint"
          value={password}
          onChange={(e) => setPassword(e.target.value)}
        />
        <small id="register-password-hint">At least {MIN_PASSWORD} characters.</small>
        {register.isError && <ErrorNotice error={register.error} />}
        <button type="submit" aria-busy={register.isPending} disabled={register.isPending}>
          Create account
        </button>
      </form>
      <p>
        Already registered? <Link to={next ? `/sign-in?next=${encodeURIComponent(next)}` : "/sign-in"}>Sign in</Link>.
      </p>
    </div>
  );
}
