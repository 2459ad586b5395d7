/** The path prefix ingest serves the console under (Vite's `base`, console.vite.config.ts). */
export const BASE = '/console';
