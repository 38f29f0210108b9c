/**
 * The page registry: every file under `src/pages/` is a page. It exports `page` (its {@link PageMeta}) and
 * a default React component; the router (app.tsx) and the navigation (components/Layout.tsx) are built
 * from this list, so adding a page means adding one file. See console/README.md.
 */
import type { ComponentType } from "react";

/**
 * Who a page is for, which is also its navigation group:
 * - `public`: anyone (pricing, tiers, sign-in);
 * - `customer`: a signed-in account (session token); others are sent to the sign-in page;
 * - `operator`: the operator (`GATEWAY_ADMIN_TOKEN`); others are sent to `/operator/sign-in`.
 */
export type NavGroup = "public" | "customer" | "operator";

/**
 * The navigation section a page is listed under, by purpose: `build` (overview, playground, keys),
 * `observe` (usage, jobs, gallery), `billing` (billing, ledger), `integrate` (webhooks), `organization`
 * (members, D41), `reference` (pricing, tiers), `operator` (the operator's pages). Pages without one are listed by their group:
 * customer pages under `build`, public ones under `reference`, operator ones under `operator`.
 */
export type NavSection = "build" | "observe" | "billing" | "integrate" | "organization" | "reference" | "operator";

/** What a page file exports as `page`. */
export interface PageMeta {
  /** The route under `/console`, react-router syntax: `/keys`, `/jobs/:id`. `/` is the overview. */
  path: string;
  /** The page's title: its `<h1>`, the document title and the navigation label. */
  title: string;
  /** Navigation group and access rule. */
  group: NavGroup;
  /** Position in its navigation group, ascending. */
  order: number;
  /** False keeps the page out of the navigation (detail pages, sign-in); default true. */
  nav?: boolean;
  /** A shorter navigation label than the title. */
  navLabel?: string;
  /** The navigation section (see {@link NavSection}); default by `group`. */
  section?: NavSection;
}

/** The shape of a module under `src/pages/`. */
export interface PageModule {
  page: PageMeta;
  default: ComponentType;
}

/** A registered page: its metadata, component and source file. */
export interface Page extends PageMeta {
  Component: ComponentType;
  file: string;
}

const GROUP_ORDER: Record<NavGroup, number> = { customer: 0, public: 1, operator: 2 };

/**
 * The pages of `modules` (a glob of page files), checked and sorted by group then order. A file without
 * `page` or a default export, or two pages on one path, throws: a broken page must fail the build's
 * smoke test, not vanish from the navigation.
 */
export function collectPages(modules: Record<string, Partial<PageModule>>): Page[] {
  const pages: Page[] = [];
  const paths = new Map<string, string>();
  for (const [file, mod] of Object.entries(modules)) {
    if (!mod.page || typeof mod.default !== "function") throw new Error(`${file}: a page file exports \`page\` (PageMeta) and a default component`);
    const other = paths.get(mod.page.path);
    if (other) throw new Error(`${file}: path ${mod.page.path} is already ${other}'s`);
    paths.set(mod.page.path, file);
    pages.push({ ...mod.page, Component: mod.default, file });
  }
  return pages.sort((a, b) => GROUP_ORDER[a.group] - GROUP_ORDER[b.group] || a.order - b.order || a.title.localeCompare(b.title));
}

/** Every page of the console. */
export const PAGES: Page[] = collectPages(import.meta.glob<PageModule>("./pages/**/*.tsx", { eager: true }));

/** The pages shown in the navigation, by group. */
export function navPages(group: NavGroup): Page[] {
  return PAGES.filter((p) => p.group === group && p.nav !== false);
}

const DEFAULT_SECTION: Record<NavGroup, NavSection> = { customer: "build", public: "reference", operator: "operator" };

/** The navigation section of `page`: its own, else its group's default. */
export function sectionOf(page: PageMeta): NavSection {
  return page.section ?? DEFAULT_SECTION[page.group];
}

/** The pages of `groups` shown in the navigation under `section`, in registry order. */
export function sectionPages(section: NavSection, groups: readonly NavGroup[]): Page[] {
  return PAGES.filter((p) => p.nav !== false && groups.includes(p.group) && sectionOf(p) === section);
}
