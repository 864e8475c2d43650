const PLACEHOLDER = /\{\{\s*([a-z_]+\.[a-z_]+)\s*\}\}/g

/**
 * Fills {{contact.first_name}}-style placeholders from values; a placeholder with no entry in
 * values stays as typed, so a typo shows in the sent text instead of vanishing. A known value
 * that is empty (a contact without a last name) renders as nothing.
 */
export function renderPlaceholders(text: string, values: Record<string, string | null | undefined>): string {
  return text.replace(PLACEHOLDER, (placeholder, name: string) =>
    Object.prototype.hasOwnProperty.call(values, name) ? values[name] ?? '' : placeholder
  )
}
