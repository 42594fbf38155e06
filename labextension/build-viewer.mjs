// The standalone viewer (src/standalone/index.ts) as one minified script with Graphviz's
// WebAssembly inlined: ../jaxviz/static/viewer.js, shipped in the wheel. See
// jaxviz/render/embed.py for how the kernel puts it into a page.
import { build } from 'esbuild';
import { readFileSync, statSync } from 'node:fs';

const pkg = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8'));
const outfile = '../jaxviz/static/viewer.js';

await build({
  entryPoints: ['src/standalone/index.ts'],
  outfile,
  bundle: true,
  minify: true,
  format: 'iife',
  target: 'es2020',
  platform: 'browser',
  legalComments: 'none',
  // Graphviz's WebAssembly is a string of raw bytes: as UTF-8 it is 10 % smaller than
  // escaped to ASCII (the kernel gzips the script anyway: see embed.py).
  charset: 'utf8',
  loader: { '.css': 'text' },
  define: { JAXVIZ_VERSION: JSON.stringify(pkg.version) },
  // The JupyterLab worker chunk's URL (layoutsvg.ts) is not used here: the viewer is its
  // own worker (setWorkerSpawn).
  logOverride: { 'empty-import-meta': 'silent' },
  logLevel: 'warning'
});
console.log(`jaxviz viewer: ${outfile} (${statSync(outfile).size} bytes)`);
