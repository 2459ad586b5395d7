import preact from '@preact/preset-vite';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';
import { BASE } from './src/console/base.js';

// The web console's bundle (scripts/console/build.ts runs it; `npm run build` runs that): served by
// ingest under /console/, every asset from the service itself with a hashed name (cached for long),
// no inline script or style, so the strict Content-Security-Policy of the console's pages holds.
export default defineConfig({
  root: fileURLToPath(new URL('./src/console', import.meta.url)),
  base: `${BASE}/`,
  plugins: [preact({ devToolsEnabled: false, prefreshEnabled: false })],
  build: {
    outDir: fileURLToPath(new URL('./dist/console', import.meta.url)),
    emptyOutDir: true,
    // the manifest tells the build script which chunks a first load fetches (their gzipped size)
    manifest: true,
    // no data: URIs for small assets: the CSP's img-src/font-src stay 'self'
    assetsInlineLimit: 0,
    sourcemap: false,
    target: 'es2022',
  },
});
