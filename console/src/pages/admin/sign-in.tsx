/**
 * The operator's sign-in (docs/operator-api.md): the operator pastes `GATEWAY_ADMIN_TOKEN`; it is checked
 * with one operator call (`GET /v1/admin/upstreams`), then kept in sessionStorage (this tab only, never in
 * the URL) and the operator returns to `next`, by default the account search.
 */
import { useMutation } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { useNavigate, useSearchParams } from "react-router";
import { api } from "../../api.ts";
import { ErrorNotice } from "../../components/states.tsx";
import type { PageMeta } from "../../pages.ts";
import { setOperatorToken } from "../../session.ts";
import { safeNext } from "../sign-in.tsx";
import { operatorHeaders, operatorUnwrap } from "./operator-api.ts";

export const page: PageMeta = { path: "/operator/sign-in", title: "Operator sign-in", group: "public", order: 91, nav: false };

export default function OperatorSignIn() {
  const navigate = useNavigate();
  const [params] = useSearchParams();
  const [token, setToken] = useState("");
  const signIn = useMutation({
    mutationFn: (t: string) => operatorUnwrap(api.GET("/v1/admin/upstreams", { headers: operatorHeaders(t) })),
    onSuccess: (_data, t) => {
      setOperatorToken(t);
      const next = safeNext(params.get("next"));
      void navigate(next === "/" ? "/operator/accounts" : next, { replace: true });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    signIn.mutate(token.trim());
  };
  return (
    <div className="narrow">
      <p>
        The operator pages need the gateway's operator token (<code>GATEWAY_ADMIN_TOKEN</code>). It stays in this tab only and is forgotten
        when the tab closes or you sign out.
      </p>
      <form onSubmit={submit}>
        <label htmlFor="operator-token">Operator token</label>
        <input
          id="operator-token"
          type="password"
          autoComplete="off"
          spellCheck={false}
          required
          value={token}
          onChange={(e) => setToken(e.target.value)}
        />
        {signIn.isError && <ErrorNotice error={signIn.error} />}
        <button type="submit" aria-busy={signIn.isPending} disabled={signIn.isPending}>
          Sign in as operator
        </button>
      </form>
    </div>
  );
}
