// `npm run build`, and the first step of `npm start`: src/**/*.ts and migrations/*.ts compiled
// file by file to dist/ (dist/src/..., dist/migrations/...), so that plain node runs the service
// without tsx's loader and the heap of its thread.
//
// Several starts may build at once from one checkout (a second instance, the tests) while another
// instance runs from dist/ and still loads from it (cluster workers, modules imported on first
// use): a file is written only when its content changed, through a rename, and stale files are
// removed instead of emptying dist/ first, so that no process finds a module missing or half
// written.
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { build } from 'esbuild'
import { widgetBuildOptions } from '../widget/build-options.mjs'

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)))
const outdir = path.join(root, 'dist')
const TEMPORARY = /^\.(.+)\.(\d+)\.tmp$/

const typescriptFiles = (dir) =>
  fs
    .readdirSync(path.join(root, dir), { recursive: true })
    .filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'))
    .map((file) => path.join(root, dir, file))

const processAlive = (pid) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return error.code === 'EPERM'
  }
}

function writeIfChanged(file, contents) {
  const current = fs.existsSync(file) ? fs.readFileSync(file) : undefined
  if (current && Buffer.compare(current, contents) === 0) return false
  fs.mkdirSync(path.dirname(file), { recursive: true })
  const temporary = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`)
  fs.writeFileSync(temporary, contents)
  fs.renameSync(temporary, file)
  return true
}

function removeIfEmpty(dir) {
  try {
    fs.rmdirSync(dir)
  } catch (error) {
    if (error.code !== 'ENOTEMPTY' && error.code !== 'ENOENT') throw error
  }
}

/** Removes what this build did not produce: files of deleted sources, leftovers of killed builds. */
function removeStale(dir, produced) {
  let removed = 0
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name)
    if (entry.isDirectory()) {
      removed += removeStale(file, produced)
      removeIfEmpty(file)
      continue
    }
    const temporary = TEMPORARY.exec(entry.name)
    if (produced.has(file) || (temporary && processAlive(Number(temporary[2])))) continue
    fs.rmSync(file, { force: true })
    removed++
  }
  return removed
}

// `npm start` passes --start: the refusals a person can fix (a port in use, a locked data
// directory, a bad DATABASE_URL, no AUTH_SECRET in production, a setting the configuration's schema
// refuses) come before the build, in one line. src/preflight.ts is bundled with the few sources it
// imports (the configuration's schema and its messages; the packages stay outside) and run.
const preflightFile = path.join(outdir, 'preflight.js')
if (process.argv.includes('--start')) {
  const { outputFiles: [bundle] } = await build({
    absWorkingDir: root,
    entryPoints: [path.join(root, 'src/preflight.ts')],
    outfile: preflightFile,
    bundle: true,
    packages: 'external',
    format: 'esm',
    platform: 'node',
    target: 'node20',
    write: false,
    logLevel: 'warning'
  })
  writeIfChanged(preflightFile, bundle.contents)
  const { runPreflight } = await import(pathToFileURL(preflightFile).href)
  await runPreflight()
}

const started = performance.now()
const { outputFiles } = await build({
  absWorkingDir: root,
  entryPoints: [...typescriptFiles('src'), ...typescriptFiles('migrations')],
  outbase: root,
  outdir,
  bundle: false,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  keepNames: true,
  sourcemap: true,
  write: false,
  logLevel: 'warning'
})
// The web-chat widget: one browser script bundled from widget/ (served as /public/webchat/widget.js).
const widget = await build(widgetBuildOptions(root))
outputFiles.push(...widget.outputFiles)
const written = outputFiles.filter((output) => writeIfChanged(output.path, output.contents)).length
const removed = removeStale(outdir, new Set([...outputFiles.map((output) => output.path), preflightFile]))
if (process.argv.includes('--verbose')) {
  const ms = Math.round(performance.now() - started)
  console.error(`built ${outputFiles.length} files to dist/ in ${ms} ms (${written} written, ${removed} stale removed)`)
}
