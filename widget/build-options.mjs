// The web-chat widget's esbuild options, in one place: scripts/build.mjs bundles it into
// dist/webchat-widget.js at `npm start` (and in the image), and the service bundles it in memory
// when it runs from its TypeScript sources (tests, `npm run dev`), so both serve the same script.
import path from 'node:path'

export const widgetBuildOptions = (root) => ({
  absWorkingDir: root,
  entryPoints: [path.join(root, 'widget', 'index.ts')],
  outfile: path.join(root, 'dist', 'webchat-widget.js'),
  tsconfig: path.join(root, 'widget', 'tsconfig.json'),
  bundle: true,
  minify: true,
  format: 'iife',
  platform: 'browser',
  // The browsers of the last few years (shadow DOM, fetch, WebSocket, optional chaining lowered).
  target: ['es2020', 'chrome80', 'firefox78', 'safari15'],
  legalComments: 'none',
  charset: 'utf8',
  write: false,
  logLevel: 'warning'
})
