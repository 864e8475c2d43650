import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { isPrivateAddress, refusedAddressOf } from '../../src/services/integrations/webhooks/addresses.js'
import { postWebhook } from '../../src/services/integrations/webhooks/sender.js'

// Every spelling of an address a webhook must not reach; none of them is ever connected to.
const REFUSED = [
  '127.0.0.1', '127.255.255.254', '0.0.0.0', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254',
  '100.64.0.1', '100.127.255.255', '198.18.0.1', '224.0.0.1', '255.255.255.255', '192.0.2.10',
  '::1', '::', '0:0:0:0:0:0:0:1', '0000:0000:0000:0000:0000:0000:0000:0001', 'fe80::1', 'fe80::1%eth0', 'fc00::1', 'fd12:3456::1', 'ff02::1',
  // IPv4-mapped, dotted and hex, compressed and expanded
  '::ffff:127.0.0.1', '::FFFF:127.0.0.1', '::ffff:7f00:1', '::ffff:7f00:0001', '0:0:0:0:0:ffff:7f00:0001', '0000:0000:0000:0000:0000:ffff:7f00:0001',
  '::ffff:10.0.0.1', '::ffff:a00:1', '::ffff:169.254.169.254', '::ffff:a9fe:a9fe', '::ffff:100.64.0.1', '::ffff:0.0.0.0',
  // NAT64 (well-known prefix), dotted and hex, and the local-use prefix
  '64:ff9b::127.0.0.1', '64:ff9b::7f00:1', '64:ff9b:0:0:0:0:7f00:1', '0064:ff9b:0000:0000:0000:0000:7f00:0001', '64:ff9b::10.0.0.1',
  '64:ff9b::a9fe:a9fe', '64:ff9b:1::8.8.8.8',
  // IPv4-compatible and IPv4-translated
  '::127.0.0.1', '::7f00:1', '0:0:0:0:0:0:7f00:1', '::10.0.0.1', '::ffff:0:7f00:1', '::ffff:0:127.0.0.1', '0:0:0:0:ffff:0:a00:1',
  // 6to4 and Teredo carrying a private address
  '2002:7f00:1::1', '2002:c0a8:101::1', '2001:0:4136:e378:8000:63bf:80ff:fffe',
  // not an IP address at all
  'localhost', 'example.com', ''
]
const ALLOWED = [
  '8.8.8.8', '1.1.1.1', '93.184.216.34', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111', '2a00:1450:4001:82a::200e',
  '::ffff:8.8.8.8', '::ffff:808:808', '64:ff9b::8.8.8.8', '64:ff9b::808:808', '::ffff:0:808:808', '2002:808:808::1'
]

describe('the outbound webhook address guard', () => {
  it.each(REFUSED)('when the address is %s, then it is refused', (address) => {
    expect(isPrivateAddress(address)).toBe(true)
  })

  it.each(ALLOWED)('when the address is %s (public), then it is allowed', (address) => {
    expect(isPrivateAddress(address)).toBe(false)
  })

  describe('on a request', () => {
    let receiver: http.Server
    let port = 0
    let received = 0
    beforeAll(async () => {
      receiver = http.createServer((req, res) => {
        received += 1
        res.end()
      })
      await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
      port = (receiver.address() as AddressInfo).port
    })
    afterAll(async () => {
      await new Promise((resolve) => receiver.close(resolve))
    })
    const post = (url: string, allowPrivate = false) => postWebhook({ url, body: '{}', headers: {}, timeoutMs: 2000, allowPrivate })

    it('when the host is a name that resolves to a loopback address, then the address resolved is refused and nothing is sent', async () => {
      await expect(post(`http://localhost:${port}/hook`)).rejects.toThrow(/^refused: (127\.0\.0\.1|::1) is a loopback/)
      await expect(post(`http://[::ffff:7f00:1]:${port}/hook`)).rejects.toThrow(/^refused: ::ffff:7f00:1/)
      await expect(post(`http://2130706433:${port}/hook`)).rejects.toThrow(/^refused: 127\.0\.0\.1/)
      expect(received).toBe(0)
    })

    it('when private addresses are allowed (WEBHOOK_ALLOW_PRIVATE), then the same receiver is reached', async () => {
      expect(await post(`http://localhost:${port}/hook`, true)).toEqual({ status: 200 })
      expect(received).toBe(1)
    })
  })

  describe('the check of a subscription\'s host (refusedAddressOf)', () => {
    const resolvesTo = (...addresses: string[]) => async () => addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }))
    const never = () => new Promise<never>(() => undefined)
    const fails = async () => { throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' }) }

    it('when the host is an IP address or a localhost name, then it is judged as written, without a lookup', async () => {
      const lookup = async () => { throw new Error('no lookup expected') }
      expect(await refusedAddressOf('127.0.0.1', lookup)).toBe('127.0.0.1')
      expect(await refusedAddressOf('[::1]', lookup)).toBe('::1')
      expect(await refusedAddressOf('LocalHost.', lookup)).toBe('127.0.0.1')
      expect(await refusedAddressOf('db.localhost', lookup)).toBe('127.0.0.1')
      expect(await refusedAddressOf('8.8.8.8', lookup)).toBeUndefined()
    })

    it('when a name resolves to any private address, then that address; to public ones only, then none', async () => {
      expect(await refusedAddressOf('hooks.example.com', resolvesTo('93.184.216.34', '10.0.0.5'))).toBe('10.0.0.5')
      expect(await refusedAddressOf('hooks.example.com', resolvesTo('93.184.216.34', '2606:4700:4700::1111'))).toBeUndefined()
    })

    it('when a name does not resolve, or not within the time limit, then it passes (its deliveries are checked)', async () => {
      expect(await refusedAddressOf('hooks.example.com', fails)).toBeUndefined()
      const started = Date.now()
      expect(await refusedAddressOf('hooks.example.com', never, 100)).toBeUndefined()
      expect(Date.now() - started).toBeLessThan(1000)
    })
  })
})
