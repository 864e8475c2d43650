import fs from 'node:fs'
import { describe, expect, it } from 'vitest'

// The Node versions the service claims are the ones it is tested and shipped on.
const read = (file: string) => fs.readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8')
const majorsOf = (range: string) => [...range.matchAll(/\^(\d+)\./g)].map((match) => Number(match[1]))

describe('the supported Node versions', () => {
  const engines: string = JSON.parse(read('package.json')).engines.node
  const container = Number(/^FROM node:(\d+)-slim$/m.exec(read('Dockerfile'))?.[1])
  const ciSecondPass = Number(/"\$\{node24_package\}@(\d+)"/.exec(read('.ci/run'))?.[1])

  it("when package.json's engines are read, then they name the container's Node, the one CI runs a second pass on, and the one running this test", () => {
    expect(majorsOf(engines)).toEqual(expect.arrayContaining([container, ciSecondPass, Number(process.versions.node.split('.')[0])]))
    expect(container).toBe(ciSecondPass)
  })
})
