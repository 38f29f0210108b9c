/**
 * Wraps every registered page: applies its access rule (a customer page without a session goes to the
 * sign-in page, an operator page without the operator token to `/operator/sign-in`, both with `next` so
 * the user comes back), sets the document title, and renders the page's `<h1>`, which takes the focus
 * after a navigation so screen readers announce the new page.
 */
import { useEffect, useRef } from "react";
import { Link, Navigate, useLocation } from "react-router";
import type { Page } from "../pages.ts";
import { useSession } from "../session.ts";

/** True until the first page has rendered: the first load keeps the browser's own focus. */
let firstLoad = true;

export function PageFrame({ page }: { page: Page }) {
  const session = useSession();
  const location = useLocation();
  const heading = useRef<HTMLHeadingElement>(null);

  useEffect(() => {
    document.title = `${page.title} · Media Gateway console`;
    // Not on the first load: the browser starts at the top of the document, as it should.
    if (firstLoad) firstLoad = false;
    else heading.current?.focus();
  }, [page.title, location.pathname]);

  const next = encodeURIComponent(location.pathname + location.search);
  if (page.group === "customer" && session.token === null) return <Navigate to={`/sign-in?next=${next}`} replace />;
  if (page.group === "operator" && session.operatorToken === null) return <Navigate to={`/operator/sign-in?next=${next}`} replace />;
  return (
    <>
      <h1 ref={heading} tabIndex={-1}>
        {page.title}
      </h1>
      <page.Component />
    </>
  );
}

/** The page of an unknown route. */
export function NotFound() {
  return (
    <>
      <h1>Page not found</h1>
      <p>
        There is no console page here. Go to the <Link to="/">overview</Link>.
      </p>
    </>
  );
}
