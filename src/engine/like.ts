/** A user's search text as a LIKE pattern that matches it anywhere, with wildcards escaped. */
export const containsPattern = (term: string) => `%${term.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`
