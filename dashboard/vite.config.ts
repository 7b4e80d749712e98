import { defineConfig } from "vite";

// `npm run dev` serves the dashboard with hot reload and forwards the API to a running broker
// (REGINA_URL, default http://127.0.0.1:6632, e.g. the one `make run` starts).
const broker = process.env.REGINA_URL ?? "http://127.0.0.1:6632";

export default defineConfig({
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  server: {
    proxy: {
      "/api": broker,
      "/health": broker,
      "/metrics": broker,
    },
  },
  build: {
    target: "es2022",
    sourcemap: false,
  },
});
