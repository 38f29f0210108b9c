/**
 * The frame of every page: a skip link, the header with the navigation built from the page registry
 * (pages.ts), grouped as customer / public / operator and shown by who is signed in, the account menu
 * (sign in and register, or sign out), and the page itself in `<main>`.
 */
import { Link, NavLink, Outlet, useNavigate } from "react-router";
import { navPages, type NavGroup } from "../pages.ts";
import { endSession, setOperatorToken, useSession } from "../session.ts";

const GROUP_LABEL: Record<NavGroup, string> = { customer: "Account", public: "Catalog", operator: "Operator" };

function NavGroupList({ group }: { group: NavGroup }) {
  const pages = navPages(group);
  if (pages.length === 0) return null;
  return (
    <li className="nav-group">
      <span className="nav-group-label">{GROUP_LABEL[group]}</span>
      <ul>
        {pages.map((p) => (
          <li key={p.path}>
            <NavLink to={p.path} end={p.path === "/"}>
              {p.navLabel ?? p.title}
            </NavLink>
          </li>
        ))}
      </ul>
    </li>
  );
}

/** The layout route: header, navigation, `<main>` with the current page. */
export function Layout() {
  const session = useSession();
  const navigate = useNavigate();
  const signOut = () => {
    endSession("signed-out");
    setOperatorToken(null);
    void navigate("/sign-in");
  };
  const signedIn = session.token !== null || session.operatorToken !== null;
  return (
    <>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="container site-header">
        <Link to="/" className="brand">
          Media Gateway <span>console</span>
        </Link>
        <nav aria-label="Main">
          <ul className="nav-groups">
            {session.token !== null && <NavGroupList group="customer" />}
            <NavGroupList group="public" />
            {session.operatorToken !== null && <NavGroupList group="operator" />}
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
              <Link to="/register">Register</Link>
            </>
          )}
        </div>
      </header>
      <main id="main" className="container" tabIndex={-1}>
        <Outlet />
      </main>
      <footer className="container site-footer">
        <small>
          API reference: <a href="/docs">/docs</a>
        </small>
      </footer>
    </>
  );
}
