/**
 * The console application: the router under `/console`, built from the page registry (pages.ts): one route
 * per page file, each inside the layout and its access rule (components/PageFrame.tsx).
 */
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { useEffect, useRef } from "react";
import { BrowserRouter, Route, Routes } from "react-router";
import { GatewayError } from "./api.ts";
import { Layout } from "./components/Layout.tsx";
import { NotFound, PageFrame } from "./components/PageFrame.tsx";
import { useSelectedOrg } from "./org.ts";
import { PAGES } from "./pages.ts";
import { useSession } from "./session.ts";

/** Where the gateway serves the console (src/http/routes/console.ts; vite.config.ts `base`). */
export const BASENAME = "/console";

/** Query defaults: a refused call (4xx) is not retried; a network failure or 5xx once. */
export function makeQueryClient(): QueryClient {
  return new QueryClient({
    defaultOptions: {
      queries: {
        staleTime: 15_000,
        retry: (count, err) => count < 1 && !(err instanceof GatewayError && err.status >= 400 && err.status < 500),
        refetchOnWindowFocus: false,
      },
    },
  });
}

/**
 * Forgets every cached answer when the signed-in account or the selected organization changes (sign-in,
 * sign-out, an expired session, a sign-out in another tab, the organization switcher, D41): one account's
 * or organization's data never shows for the next, and every page on screen reads the new one's.
 */
function ForgetOnSessionChange({ queryClient }: { queryClient: QueryClient }) {
  const { token, operatorToken } = useSession();
  const org = useSelectedOrg();
  const last = useRef({ token, operatorToken, org });
  useEffect(() => {
    // Reset, not clear: the queries of the pages on screen refetch with the new credentials at once.
    const l = last.current;
    if (l.token !== token || l.operatorToken !== operatorToken || l.org !== org) void queryClient.resetQueries();
    last.current = { token, operatorToken, org };
  }, [queryClient, token, operatorToken, org]);
  return null;
}

export function App({ queryClient }: { queryClient: QueryClient }) {
  return (
    <QueryClientProvider client={queryClient}>
      <ForgetOnSessionChange queryClient={queryClient} />
      <BrowserRouter basename={BASENAME}>
        <Routes>
          <Route element={<Layout />}>
            {PAGES.map((p) => (
              <Route key={p.path} path={p.path} element={<PageFrame page={p} />} />
            ))}
            <Route path="*" element={<NotFound />} />
          </Route>
        </Routes>
      </BrowserRouter>
    </QueryClientProvider>
  );
}
