import type { Application, HookContext } from './declarations.js'

export interface BackgroundTask {
  /** For the log line of a failed pass. */
  name: string
  /** The wait between passes when the last one left nothing to do. */
  intervalMs: number
  /** One pass; returns true when it stopped with work left, so the next pass starts at once. */
  pass(): Promise<boolean | unknown>
}

/** A task's passes, which start with the application; pause() waits for a pass under way. */
export interface BackgroundRunner {
  pause(): Promise<void>
  resume(): void
}

/**
 * Runs a periodic task of the application's own upkeep (not the outbox's jobs, which have their
 * own worker): from app.setup until app.teardown, which waits for a pass under way so that the
 * pool is not closed beneath it. A failed pass is logged and the next one runs on time: a lost
 * connection must not stop the task, nor the process.
 */
export function runInBackground(app: Application, task: BackgroundTask): BackgroundRunner {
  let timer: NodeJS.Timeout | undefined
  let running: Promise<void> | undefined
  let stopped = true

  const schedule = (delayMs: number) => {
    if (stopped) return
    timer = setTimeout(() => {
      running = task.pass()
        .then((more) => more === true)
        .catch((error) => {
          app.get('logger').warn({ err: error }, `${task.name} failed`)
          return false
        })
        .then((more) => {
          running = undefined
          schedule(more ? 0 : task.intervalMs)
        })
    }, delayMs)
    timer.unref()
  }

  const runner: BackgroundRunner = {
    async pause() {
      stopped = true
      clearTimeout(timer)
      await running
    },
    resume() {
      if (!stopped) return
      stopped = false
      schedule(task.intervalMs)
    }
  }

  app.hooks({
    setup: [
      async (_context: HookContext, next: () => Promise<void>) => {
        await next()
        runner.resume()
      }
    ],
    teardown: [
      async (_context: HookContext, next: () => Promise<void>) => {
        await runner.pause()
        await next()
      }
    ]
  })
  return runner
}
