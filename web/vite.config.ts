import { defineConfig } from "vitest/config";
import react from "@vitejs/plugin-react";

// The build goes to dist/, which the Go package web embeds. File names
// carry a content hash, so the same sources always build the same files
// (make verify rebuilds and diffs them).
export default defineConfig({
  plugins: [react()],
  build: {
    outDir: "dist",
    emptyOutDir: true,
    // One chunk per kind is small enough here and keeps dist/ stable.
    chunkSizeWarningLimit: 1024,
    sourcemap: false,
  },
  server: {
    // npm run dev: proxy the API to a trainyard serve on :8080.
    proxy: { "/v1": "http://127.0.0.1:8080", "/console/config.json": "http://127.0.0.1:8080" },
  },
  test: {
    include: ["src/**/*.test.ts"],
  },
});
