import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { run } from '../helpers/process.js'
import type { Spawned } from '../helpers/process.js'

// scripts/build.mjs (the first step of `npm start`) on a copy of the checkout: this checkout's
// dist/ serves the servers other test files start meanwhile.
const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const started: Spawned[] = []
const dirs: string[] = []
afterAll(() => {
  for (const spawned of started) spawned.kill()
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})

function copyOfCheckout() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crm-build-'))
  dirs.push(dir)
  for (const entry of ['package.json', 'tsconfig.json', 'scripts', 'src', 'migrations', 'widget']) {
    fs.cpSync(path.join(ROOT, entry), path.join(dir, entry), { recursive: true })
  }
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'))
  return dir
}

const build = async (dir: string) => {
  const spawned = run(process.execPath, [path.join(dir, 'scripts', 'build.mjs')], {})
  started.push(spawned)
  const code = await spawned.exited
  expect(spawned.output().stderr).toBe('')
  return code
}

const filesUnder = (dir: string) =>
  fs
    .readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((file) => fs.statSync(path.join(dir, file)).isFile())
    .sort()

/**
 * What dist/ must hold: a module and its source map for every TypeScript file of src/ and
 * migrations/, and the web-chat widget bundled from widget/ into one script.
 */
const expectedOutput = (dir: string) =>
  ['src', 'migrations']
    .flatMap((source) => filesUnder(path.join(dir, source)).map((file) => path.join(source, file.replace(/\.ts$/, '.js'))))
    .flatMap((module) => [module, `${module}.map`])
    .concat('webchat-widget.js')
    .sort()

describe.concurrent('the build of dist/', () => {
  it('when the build runs, then dist/ holds a module and a source map for every TypeScript file of src/ and migrations/, in the same layout', async () => {
    const dir = copyOfCheckout()
    expect(await build(dir)).toBe(0)
    expect(filesUnder(path.join(dir, 'dist'))).toEqual(expectedOutput(dir))
    expect(fs.readFileSync(path.join(dir, 'dist/src/index.js'), 'utf8')).toMatch(/^import cluster from "node:cluster";$/m)
  }, 60_000)

  it('when a source was deleted and dist/ holds leftovers, then the next build removes them and leaves unchanged modules untouched', async () => {
    const dir = copyOfCheckout()
    expect(await build(dir)).toBe(0)
    const unchanged = fs.statSync(path.join(dir, 'dist/src/db.js'))
    fs.rmSync(path.join(dir, 'src/mcp/stdio.ts'))
    fs.mkdirSync(path.join(dir, 'dist/src/gone'))
    fs.writeFileSync(path.join(dir, 'dist/src/gone/old.js'), 'export {}\n')
    // A build killed between writing a module and renaming it into place.
    fs.writeFileSync(path.join(dir, 'dist/src/.app.js.999999999.tmp'), 'export {}\n')

    expect(await build(dir)).toBe(0)
    const files = filesUnder(path.join(dir, 'dist'))
    expect(files).toEqual(expectedOutput(dir))
    expect(files).not.toContain('src/mcp/stdio.js')
    expect(fs.existsSync(path.join(dir, 'dist/src/gone'))).toBe(false)
    const after = fs.statSync(path.join(dir, 'dist/src/db.js'))
    expect([after.ino, after.mtimeMs]).toEqual([unchanged.ino, unchanged.mtimeMs])
  }, 60_000)

  it('when three builds run at once on an empty dist/, then each succeeds and dist/ ends complete, without temporary files', async () => {
    const dir = copyOfCheckout()
    expect(await Promise.all([build(dir), build(dir), build(dir)])).toEqual([0, 0, 0])
    expect(filesUnder(path.join(dir, 'dist'))).toEqual(expectedOutput(dir))
  }, 60_000)
})
