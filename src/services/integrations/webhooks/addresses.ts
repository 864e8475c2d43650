import dns from 'node:dns'
import net from 'node:net'
import ipaddr from 'ipaddr.js'

/**
 * Which IP addresses an outbound webhook may not reach: any that ipaddr.js does not classify as
 * ordinary unicast (loopback, unspecified, private, shared (CGNAT), link-local, benchmarking,
 * documentation, multicast, reserved, …), in IPv4 and IPv6; an IPv6 address that carries an IPv4
 * one (mapped, compatible, translated, NAT64, 6to4, Teredo) is judged by the IPv4 it carries.
 * Anything that is not an IP address in its standard spelling is refused.
 */
export function isPrivateAddress(address: string): boolean {
  if (net.isIP(address) === 0) return true
  const parsed = ipaddr.parse(address)
  if (parsed.kind() === 'ipv4') return parsed.range() !== 'unicast'
  const carried = carriedIPv4(parsed as ipaddr.IPv6)
  if (carried === 'refused') return true
  if (carried.length > 0) return carried.some((ipv4) => ipv4.range() !== 'unicast')
  return parsed.range() !== 'unicast'
}

const ipv4Of = (high: number, low: number) => new ipaddr.IPv4([high >> 8, high & 255, low >> 8, low & 255])

/** The IPv4 addresses an IPv6 address carries, by the prefix it starts with ('refused': a local-use NAT64 prefix, private by definition). */
function carriedIPv4(address: ipaddr.IPv6): ipaddr.IPv4[] | 'refused' {
  const p = address.parts
  switch (address.range()) {
    case 'ipv4Mapped':
    case 'rfc6145':
      return [ipv4Of(p[6], p[7])]
    case 'rfc6052':
      // 64:ff9b::/96 is the well-known NAT64 prefix; 64:ff9b:1::/48 is for a network's own use.
      return p[2] === 0 ? [ipv4Of(p[6], p[7])] : 'refused'
    case '6to4':
      return [ipv4Of(p[1], p[2])]
    case 'teredo':
      return [ipv4Of(p[2], p[3]), ipv4Of(p[6] ^ 0xffff, p[7] ^ 0xffff)]
    default:
      // ::a.b.c.d, the deprecated IPv4-compatible form (:: and ::1 themselves are judged as IPv6).
      return p.slice(0, 6).every((part) => part === 0) && (p[6] !== 0 || p[7] > 1) ? [ipv4Of(p[6], p[7])] : []
  }
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
