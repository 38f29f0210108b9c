/**
 * The frame of every page: a skip link, a sidebar with the navigation built from the page registry
 * (pages.ts) in sections by purpose (Build, Observe, Billing, Integrate, Reference, and Operator for the
 * operator only), shown by who is signed in, the organization switcher when signed in (OrgSwitcher.tsx,
 * D41), the account menu (sign in and register, or sign out), and the page itself in `<main>`. The sidebar is
 * one screen tall: the navigation scrolls on its own, so the account menu stays on screen, pinned at the
 * bottom, in a short window (issue 42). Under 900 px the sidebar is a top bar (Sign out in its first row) and
 * the navigation a menu opened by its "Menu" button (closed again by a navigation or Escape).
 */
import { useEffect, useState } from "react";
import { Link, NavLink, Outlet, useLocation, useNavigate } from "react-router";
import { type NavGroup, type NavSection, sectionPages } from "../pages.ts";
import { endSession, setOperatorToken, useSession } from "../session.ts";
import { OrgSwitcher } from "./OrgSwitcher.tsx";

const SECTIONS: { id: NavSection; label: string }[] = [
  { id: "build", label: "Build" },
  { id: "observe", label: "Observe" },
  { id: "billing", label: "Billing" },
  { id: "integrate", label: "Integrate" },
  { id: "organization", label: "Organization" },
  { id: "reference", label: "Reference" },
  { id: "operator", label: "Operator" },
];

/** One section of the navigation: its label and links (none shown when it has no page for `groups`). */
function NavSectionList({ section, label, groups }: { section: NavSection; label: string; groups: readonly NavGroup[] }) {
  const pages = sectionPages(section, groups);
  const extra =
    section === "reference" ? (
      <li>
        <a href="/docs">API docs</a>
      </li>
    ) : null;
  if (pages.length === 0 && !extra) return null;
  return (
    <li className="nav-section">
      {/* Text only, not a label of the list: "Reference" must not name a list (forms have fields of that name). */}
      <span className="nav-section-label">{label}</span>
      <ul>
        {pages.map((p) => (
          <li key={p.path}>
            {/* The playground's tools (/playground/media...) keep its entry marked. */}
            <NavLink to={p.path} end={p.path !== "/playground"}>
              {p.navLabel ?? p.title}
            </NavLink>
          </li>
        ))}
        {extra}
      </ul>
    </li>
  );
}

/** The layout route: sidebar (brand, navigation, account menu), `<main>` with the current page. */
export function Layout() {
  const session = useSession();
  const navigate = useNavigate();
  const location = useLocation();
  // The compact menu is open on the page where it was opened: a navigation closes it.
  const [openAt, setOpenAt] = useState<string | null>(null);
  const menuOpen = openAt === location.pathname;
  useEffect(() => {
    if (!menuOpen) return;
    const onKey = (e: KeyboardEvent) => {
      if (e.key === "Escape") setOpenAt(null);
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [menuOpen]);
  const signOut = () => {
    endSession("signed-out");
    setOperatorToken(null);
    void navigate("/sign-in");
  };
  const signedIn = session.token !== null || session.operatorToken !== null;
  const groups: NavGroup[] = ["public", ...(session.token !== null ? (["customer"] as const) : []), ...(session.operatorToken !== null ? (["operator"] as const) : [])];
  return (
    <div className="shell">
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <aside className="sidebar">
        <div className="sidebar-bar">
          <Link to="/" className="brand">
            <span className="brand-mark" aria-hidden="true">
              ◆
            </span>{" "}
            Media Gateway
          </Link>
          <button
            type="button"
            className="menu-toggle secondary outline"
            aria-expanded={menuOpen}
            aria-controls="main-nav"
            onClick={() => setOpenAt(menuOpen ? null : location.pathname)}
          >
            Menu
          </button>
        </div>
        {session.token !== null && <OrgSwitcher />}
        <nav aria-label="Main" id="main-nav" className={menuOpen ? "open" : undefined}>
          <ul className="nav-sections">
            {SECTIONS.map((s) => (
              <NavSectionList key={s.id} section={s.id} label={s.label} groups={groups} />
            ))}
          </ul>
        </nav>
        <div className="account-menu">
          {signedIn ? (
            <button type="button" className="secondary outline" onClick={signOut}>
              Sign out
            </button>
          ) : (
            <>
              <Link to="/sign-in">Sign in</Link>
              <Link to="/register" role="button" className="outline">
                Register
              </Link>
            </>
          )}
        </div>
      </aside>
      <div className="content">
        <main id="main" tabIndex={-1}>
          <Outlet />
        </main>
        <footer className="site-footer">
          <small>
            API reference: <a href="/docs">/docs</a> · OpenAPI: <a href="/openapi.json">/openapi.json</a>
          </small>
        </footer>
      </div>
    </div>
  );
}
