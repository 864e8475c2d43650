/**
 * Preloaded into the service by `npm run bench:profile -- --allocations` (node --import): the
 * first SIGUSR2 starts V8's sampling heap profiler, counting every allocation, the objects the
 * garbage collector has freed since included (what a request costs the collector, not what
 * stays); the second stops it and writes the profile to BENCH_ALLOCATIONS_FILE.
 */
import fs from 'node:fs'
import inspector from 'node:inspector'

const file = process.env.BENCH_ALLOCATIONS_FILE
const session = new inspector.Session()
session.connect()
const post = (method, params) =>
  new Promise((resolve, reject) => session.post(method, params, (error, result) => (error ? reject(error) : resolve(result))))

let sampling = false
process.on('SIGUSR2', () => {
  const step = sampling
    ? post('HeapProfiler.stopSampling').then(({ profile }) => {
        // Written whole, then renamed: the benchmark waits for the file to appear.
        fs.writeFileSync(`${file}.part`, JSON.stringify(profile))
        fs.renameSync(`${file}.part`, file)
      })
    : post('HeapProfiler.enable').then(() =>
        post('HeapProfiler.startSampling', { samplingInterval: 16384, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true })
      )
  sampling = !sampling
  step.catch((error) => console.error('allocation sampler:', error))
})
