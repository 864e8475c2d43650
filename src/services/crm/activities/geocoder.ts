/** A resolved address: what activities store in location_geocoded. */
export interface GeoPoint {
  lat: number
  lng: number
  address: string | null
}

/**
 * Turns a free-text location into coordinates. Pluggable: the service works without one
 * (the default), and a failing or slow geocoder never fails or delays a write.
 */
export interface Geocoder {
  geocode(address: string): Promise<GeoPoint | null>
}

export interface HttpGeocoderOptions {
  timeoutMs?: number
  userAgent?: string
}

const inRange = (value: number, limit: number) => Number.isFinite(value) && Math.abs(value) <= limit

/**
 * A geocoder over a Nominatim-compatible search endpoint (GET <url>?q=...&format=jsonv2&limit=1,
 * answering [{lat, lon, display_name}]), e.g. a self-hosted Nominatim or Photon gateway.
 */
export function httpGeocoder(url: string, { timeoutMs = 5000, userAgent = 'crm-api' }: HttpGeocoderOptions = {}): Geocoder {
  return {
    async geocode(address: string) {
      const target = new URL(url)
      target.searchParams.set('q', address)
      target.searchParams.set('format', 'jsonv2')
      target.searchParams.set('limit', '1')
      const response = await fetch(target, {
        headers: { accept: 'application/json', 'user-agent': userAgent },
        signal: AbortSignal.timeout(timeoutMs)
      })
      if (!response.ok) throw new Error(`geocoder answered ${response.status}`)
      const [first] = (await response.json()) as Array<{ lat?: string | number; lon?: string | number; display_name?: string }>
      if (!first) return null
      const lat = Number(first.lat)
      const lng = Number(first.lon)
      if (!inRange(lat, 90) || !inRange(lng, 180)) return null
      return { lat, lng, address: typeof first.display_name === 'string' ? first.display_name : address }
    }
  }
}
