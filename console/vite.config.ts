/**
 * Vite configuration of the web console (issue 15). The bundle is static files under `console/dist`,
 * served by the gateway at `/console/` (src/http/routes/console.ts), so `base` is that prefix and every
 * asset name carries a content hash (cached immutable by the gateway).
 *
 * Built by `npm run build:console` (scripts/build-console.ts, also run by `npm ci` through `prepare`).
 * `npx vite console` serves it in development (http://localhost:5173/console/), proxying the API to a
 * gateway on the default port 8080 (WebSocket upgrades included). The root is this folder: the build
 * script and the CLI pass it.
 */
import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

export default defineConfig({
  base: "/console/",
  plugins: [react()],
  build: {
    outDir: "dist",
    emptyOutDir: true,
    // One core-friendly build: no compressed-size report (it gzips every chunk) and no source maps.
    reportCompressedSize: false,
    sourcemap: false,
    target: "es2022",
    chunkSizeWarningLimit: 1000,
  },
  server: {
    proxy: {
      // `ws`: the realtime sockets (D42) go through the proxy too.
      "/v1": { target: "http://127.0.0.1:8080", ws: true },
      "/share": "http://127.0.0.1:8080",
    },
  },
});
