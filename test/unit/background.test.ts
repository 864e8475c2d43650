import { feathers } from '@feathersjs/feathers'
import { describe, expect, it } from 'vitest'
import { runInBackground } from '../../src/background.js'
import type { Application } from '../../src/declarations.js'

/** An application with the hooks runInBackground needs and a logger that keeps its warnings. */
function applicationWithLog() {
  const warnings: string[] = []
  const app = feathers() as unknown as Application
  app.set('logger', { warn: (_fields: unknown, message: string) => warnings.push(message) } as any)
  return { app, warnings }
}

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe('background tasks', () => {
  it('when a pass fails, then it is logged and the next pass runs on time; a pass with work left is followed at once', async () => {
    const { app, warnings } = applicationWithLog()
    const passes: string[] = []
    runInBackground(app, {
      name: 'test task',
      intervalMs: 20,
      pass: async () => {
        passes.push(passes.length === 0 ? 'fails' : passes.length < 4 ? 'more' : 'idle')
        if (passes.length === 1) throw new Error('connection terminated')
        return passes.length < 4
      }
    })
    await app.setup()
    await wait(150)
    await app.teardown()
    expect(warnings).toEqual(['test task failed'])
    expect(passes.slice(0, 5)).toEqual(['fails', 'more', 'more', 'more', 'idle'])
  })

  it('when the application is torn down during a pass, then teardown waits for it and no pass starts after', async () => {
    const { app } = applicationWithLog()
    let running = 0
    let finished = 0
    runInBackground(app, {
      name: 'slow task',
      intervalMs: 5,
      pass: async () => {
        running++
        await wait(50)
        finished++
      }
    })
    await app.setup()
    await wait(20)
    await app.teardown()
    expect(finished).toBe(running)
    await wait(30)
    expect(running).toBe(finished)
  })

  it('when paused and resumed, then passes stop and start again', async () => {
    const { app } = applicationWithLog()
    let passes = 0
    const runner = runInBackground(app, { name: 'counted', intervalMs: 5, pass: async () => { passes++ } })
    await app.setup()
    await wait(40)
    await runner.pause()
    const paused = passes
    expect(paused).toBeGreaterThan(0)
    await wait(40)
    expect(passes).toBe(paused)
    runner.resume()
    await wait(40)
    expect(passes).toBeGreaterThan(paused)
    await app.teardown()
  })
})
