import { describe, expect, it } from 'vitest'
import { Thread } from '../../widget/thread.js'
import type { ChatMessage } from '../../widget/thread.js'
import { apiBase, retryDelay, safeUrl, socketOrigin, socketUrl, storageKey, textColorOn } from '../../widget/helpers.js'

const message = (id: number, created_at: string, content = `m${id}`): ChatMessage =>
  ({ id, conversation_id: 1, direction: 'outbound', sender_type: 'user', content, content_type: 'text', files: [], created_at })

/** The widget's pure parts, without a browser. */
describe('web chat widget parts', () => {
  it('when the same message arrives several ways, then the thread holds it once, in time order, and says where each new one goes', () => {
    const thread = new Thread()
    expect(thread.add(message(2, '2026-01-01T10:00:02.000Z'))).toEqual({ added: true, before: null })
    expect(thread.add(message(4, '2026-01-01T10:00:04.000Z'))).toEqual({ added: true, before: null })
    // Late (a catch-up read after a reconnect): it goes before the newer one.
    expect(thread.add(message(3, '2026-01-01T10:00:03.000Z'))).toEqual({ added: true, before: 4 })
    expect(thread.add(message(1, '2026-01-01T10:00:02.000Z'))).toEqual({ added: true, before: 2 })
    // The socket's copy of one already shown (or an edit): replaced, not added.
    expect(thread.add(message(3, '2026-01-01T10:00:03.000Z', 'edited'))).toEqual({ added: false })
    expect(thread.size).toBe(4)
    expect(thread.lastId()).toBe(4)
    expect(thread.remove(4)).toBe(true)
    expect(thread.remove(4)).toBe(false)
    expect(thread.lastId()).toBe(3)
    expect(new Thread().lastId()).toBe(0)
  })

  it('when the script is loaded from a URL, then the API base, the socket URL and the storage key follow from it', () => {
    expect(apiBase('https://crm.example.com/public/webchat/widget.js')).toBe('https://crm.example.com')
    expect(apiBase('https://example.com/crm/public/webchat/widget.js?v=2')).toBe('https://example.com/crm')
    expect(socketUrl('https://example.com/crm')).toBe('wss://example.com/crm/socket.io/?EIO=4&transport=websocket')
    expect(socketUrl('http://127.0.0.1:3030')).toBe('ws://127.0.0.1:3030/socket.io/?EIO=4&transport=websocket')
    expect(socketOrigin('https://example.com/crm')).toBe('wss://example.com')
    expect(storageKey('abc')).toBe('crm-webchat:abc')
  })

  it('when a colour is light or dark, then the text on it is black or white', () => {
    expect(textColorOn('#ffffff')).toBe('#111111')
    expect(textColorOn('#f4b400')).toBe('#111111')
    expect(textColorOn('#000000')).toBe('#ffffff')
    expect(textColorOn('#1f5fbf')).toBe('#ffffff')
  })

  it('when a file URL is not http(s), then the widget does not link it', () => {
    expect(safeUrl('https://files.example.com/a.png')).toBe('https://files.example.com/a.png')
    expect(safeUrl('javascript:alert(1)')).toBeUndefined()
    expect(safeUrl('data:text/html,<script>alert(1)</script>')).toBeUndefined()
    expect(safeUrl('not a url')).toBeUndefined()
  })

  it('when reconnecting, then the delay doubles from half a second up to 15 s, with jitter', () => {
    expect(retryDelay(0, () => 0.5)).toBe(500)
    expect(retryDelay(3, () => 0.5)).toBe(4_000)
    expect(retryDelay(10, () => 0.5)).toBe(15_000)
    expect(retryDelay(0, () => 0)).toBe(375)
    expect(retryDelay(0, () => 1)).toBe(625)
  })
})
