import dns from 'node:dns'
import net from 'node:net'

/**
 * Which IP addresses an outbound webhook may not reach: loopback, unspecified, private, shared
 * (CGNAT), link-local, benchmarking, documentation, multicast and reserved ranges, in IPv4 and
 * IPv6, and every IPv6 spelling that carries an IPv4 address (mapped, compatible, translated,
 * NAT64, 6to4, Teredo), which is judged by the IPv4 address it carries.
 */
const REFUSED = new net.BlockList()
for (const [address, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24],
  ['224.0.0.0', 4], ['240.0.0.0', 4]
] as const) REFUSED.addSubnet(address, prefix, 'ipv4')
for (const [address, prefix] of [
  ['::', 128], ['::1', 128], ['64:ff9b:1::', 48], ['100::', 64], ['2001:db8::', 32], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8]
] as const) REFUSED.addSubnet(address, prefix, 'ipv6')

/** The eight 16-bit groups of an IPv6 address in any spelling (zero-padded, compressed, dotted tail). */
function ipv6Groups(address: string): number[] {
  const text = address.replace(/%.*$/, '')
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)?.[1]
  const hex = dotted ? text.slice(0, -dotted.length) + ipv4Groups(dotted).map((g) => g.toString(16)).join(':') : text
  const [head, tail] = hex.split('::')
  const parts = (side: string | undefined) => (side ? side.split(':').map((group) => parseInt(group, 16)) : [])
  const [left, right] = [parts(head), parts(tail)]
  return tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill(0), ...right]
}

const ipv4Groups = (dotted: string) => {
  const [a, b, c, d] = dotted.split('.').map(Number)
  return [(a << 8) | b, (c << 8) | d]
}

const ipv4Of = (high: number, low: number) => `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`
const allZero = (groups: number[]) => groups.every((group) => group === 0)

/** The IPv4 addresses an IPv6 address carries, by the prefix it starts with. */
function embeddedIPv4(g: number[]): string[] {
  // ::a.b.c.d (compatible), ::ffff:a.b.c.d (mapped), ::ffff:0:a.b.c.d (translated), 64:ff9b::a.b.c.d (NAT64).
  if (allZero(g.slice(0, 5)) && (g[5] === 0 || g[5] === 0xffff)) return [ipv4Of(g[6], g[7])]
  if (allZero(g.slice(0, 4)) && g[4] === 0xffff && g[5] === 0) return [ipv4Of(g[6], g[7])]
  if (g[0] === 0x64 && g[1] === 0xff9b && allZero(g.slice(2, 6))) return [ipv4Of(g[6], g[7])]
  // 6to4 (2002:AABB:CCDD::/48) and Teredo (2001:0:server:…:~client).
  if (g[0] === 0x2002) return [ipv4Of(g[1], g[2])]
  if (g[0] === 0x2001 && g[1] === 0) return [ipv4Of(g[2], g[3]), ipv4Of(g[6] ^ 0xffff, g[7] ^ 0xffff)]
  return []
}

/** Whether an IP address is one a webhook must not reach; anything that is not an IP address is refused too. */
export function isPrivateAddress(address: string): boolean {
  const family = net.isIP(address)
  if (family === 4) return REFUSED.check(address, 'ipv4')
  if (family !== 6) return true
  const groups = ipv6Groups(address)
  if (groups.length !== 8 || groups.some((group) => !(group >= 0 && group <= 0xffff))) return true
  const embedded = embeddedIPv4(groups)
  if (embedded.some((ipv4) => REFUSED.check(ipv4, 'ipv4'))) return true
  return REFUSED.check(groups.map((group) => group.toString(16)).join(':'), 'ipv6')
}

/** How long a subscription's create or patch waits for its host name to resolve. */
export const ADDRESS_LOOKUP_TIMEOUT_MS = 2000

type Lookup = (hostname: string, options: dns.LookupAllOptions) => Promise<dns.LookupAddress[]>

/**
 * The loopback or private address a webhook URL's host is, or resolves to, if any: what every
 * delivery to it would refuse. An IP address or a localhost name is judged at once; another name
 * is resolved, and one that does not resolve within the time limit, or not at all, passes (it may
 * be set up later, and every delivery checks the address it connects to anyway).
 */
export async function refusedAddressOf(hostname: string, lookup: Lookup = dns.promises.lookup, timeoutMs = ADDRESS_LOOKUP_TIMEOUT_MS): Promise<string | undefined> {
  const host = hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '').toLowerCase()
  if (net.isIP(host)) return isPrivateAddress(host) ? host : undefined
  // Names under localhost are loopback by definition (RFC 6761), whatever a resolver says.
  if (host === 'localhost' || host.endsWith('.localhost')) return '127.0.0.1'
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), timeoutMs)
  })
  try {
    const addresses = await Promise.race([lookup(host, { all: true }).catch(() => undefined), timeout])
    return addresses?.map((entry) => entry.address).find(isPrivateAddress)
  } finally {
    clearTimeout(timer)
  }
}
