/** APP_URL + a link path, with {token} in the path replaced by the token (appended as ?token= when absent). */
export function tokenLink(appUrl: string, linkPath: string, token: string) {
  const base = appUrl.replace(/\/+$/, '')
  const path = linkPath.startsWith('/') ? linkPath : `/${linkPath}`
  const encoded = encodeURIComponent(token)
  if (path.includes('{token}')) return `${base}${path.replaceAll('{token}', encoded)}`
  return `${base}${path}${path.includes('?') ? '&' : '?'}token=${encoded}`
}
