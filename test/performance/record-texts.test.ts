import { describe, expect, it } from 'vitest'
import { RecordTexts, UNCONFIRMED } from '../../src/services/record-texts.js'

/** The record texts wire pages reuse (src/services/record-texts.ts), on their own. */
describe('record texts', () => {
  const bytes = (text: string) => Buffer.from(text)
  const text = (kept: Buffer | undefined) => kept?.toString()

  it('answers a text only for the version it was written from', () => {
    const texts = new RecordTexts(1)
    texts.set('deals:1:7', '900/12/-', bytes('{"id":7}'))
    expect(text(texts.get('deals:1:7', '900/12/-'))).toBe('{"id":7}')
    expect(texts.get('deals:1:7', '901/12/-')).toBeUndefined()
    expect(texts.get('deals:1:8', '900/12/-')).toBeUndefined()
    // A record without a version (a relation with no version of its own) is never kept nor answered.
    texts.set('deals:1:9', null, bytes('{"id":9}'))
    expect(texts.get('deals:1:9', null)).toBeUndefined()
    expect(texts.size).toBe(1)
    // A newer version replaces the older one.
    texts.set('deals:1:7', '901/12/-', bytes('{"id":7,"name":"new"}'))
    expect(texts.get('deals:1:7', '900/12/-')).toBeUndefined()
    expect(text(texts.get('deals:1:7', '901/12/-'))).toBe('{"id":7,"name":"new"}')
  })

  it("answers a text by its own version under the relations' mark it was last confirmed under", () => {
    const texts = new RecordTexts(1)
    // Own part 900/ (no custom values), relations 12/-; read under the mark 5:3.
    texts.set('deals:1:7', '900/|12/-', bytes('{"id":7}'), '5:3')
    expect(text(texts.marked('deals:1:7', '900/', '5:3') as Buffer)).toBe('{"id":7}')
    // Its own row changed: read again, whatever the mark.
    expect(texts.marked('deals:1:7', '901/', '5:3')).toBeUndefined()
    expect(texts.marked('deals:1:7', '90', '5:3')).toBeUndefined()
    expect(texts.marked('deals:1:8', '900/', '5:3')).toBeUndefined()
    // A relation table was written since: the relations' versions decide.
    expect(texts.marked('deals:1:7', '900/', '6:3')).toBe(UNCONFIRMED)
    expect(texts.confirm('deals:1:7', '900/|13/-', '6:3')).toBeUndefined()
    expect(texts.marked('deals:1:7', '900/', '6:3')).toBe(UNCONFIRMED)
    expect(text(texts.confirm('deals:1:7', '900/|12/-', '6:3'))).toBe('{"id":7}')
    expect(text(texts.marked('deals:1:7', '900/', '6:3') as Buffer)).toBe('{"id":7}')
    expect(texts.marked('deals:1:7', '900/', '5:3')).toBe(UNCONFIRMED)
    // A text kept without a mark is never current by mark alone.
    texts.set('deals:1:9', '950/|12/-', bytes('{"id":9}'))
    expect(texts.marked('deals:1:9', '950/', '6:3')).toBe(UNCONFIRMED)
    expect(texts.marked('deals:1:9', null, '6:3')).toBeUndefined()
  })

  it('keeps nothing with 0 MB, and no more than its size, the least recently used going first', () => {
    const none = new RecordTexts(0)
    none.set('a', '1', bytes('text'))
    expect(none.get('a', '1')).toBeUndefined()
    expect(none.size).toBe(0)

    const small = new RecordTexts(1 / 1024) // 1 KB
    const long = 'x'.repeat(300)
    small.set('a', '1', bytes(long))
    small.set('b', '1', bytes(long))
    expect(text(small.get('a', '1'))).toBe(long) // a is now the most recently used
    small.set('c', '1', bytes(long))
    expect(text(small.get('a', '1'))).toBe(long)
    expect(small.get('b', '1')).toBeUndefined()
    expect(text(small.get('c', '1'))).toBe(long)
  })

  it('forgets a text after its time to live', async () => {
    const texts = new RecordTexts(1, 30)
    texts.set('a', '1', bytes('text'))
    expect(text(texts.get('a', '1'))).toBe('text')
    await new Promise((resolve) => setTimeout(resolve, 80))
    expect(texts.get('a', '1')).toBeUndefined()
  })
})
