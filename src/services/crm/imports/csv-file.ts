import fs from 'node:fs'
import type { Readable } from 'node:stream'
import { CsvError, parse } from 'csv-parse'
import { BadRequest } from '@feathersjs/errors'

/**
 * Reading an import's CSV file with csv-parse (the csv project): quoted fields, embedded
 * newlines, a byte-order mark, `,` `;` or tab delimiters, UTF-8 or Latin-1. The file is read as
 * a stream, one row at a time, so that memory does not grow with its size.
 */

export const ENCODINGS = ['utf8', 'latin1'] as const
export type Encoding = (typeof ENCODINGS)[number]
export const DELIMITERS = [',', ';', '\t'] as const

/** One row of the file: its number (1 = the first row after the header) and its cells. */
export interface CsvRow {
  number: number
  cells: string[]
}

/** How to read a file: its encoding and delimiter. */
export interface CsvDialect {
  encoding: Encoding
  delimiter: string
}

/** How much of the file the delimiter is guessed from. */
const SNIFFED_BYTES = 64 * 1024

/**
 * The delimiter of the header line: of `,` `;` and tab, the one it holds most often outside
 * quotes (a header "Name;Company, Inc." is `;`-delimited). A comma when it holds none.
 */
export function detectDelimiter(text: string): string {
  const counts = new Map<string, number>(DELIMITERS.map((delimiter) => [delimiter, 0]))
  let quoted = false
  for (const char of text) {
    if (char === '"') quoted = !quoted
    else if (!quoted && (char === '\n' || char === '\r')) break
    else if (!quoted && counts.has(char)) counts.set(char, counts.get(char)! + 1)
  }
  let best = ','
  for (const [delimiter, count] of counts) if (count > counts.get(best)!) best = delimiter
  return best
}

/** The delimiter a local file's header uses (the upload, before it is stored). */
export async function sniffDelimiter(file: string, encoding: Encoding): Promise<string> {
  const handle = await fs.promises.open(file, 'r')
  try {
    const buffer = Buffer.alloc(SNIFFED_BYTES)
    const { bytesRead } = await handle.read(buffer, 0, SNIFFED_BYTES, 0)
    return detectDelimiter(buffer.subarray(0, bytesRead).toString(encoding).replace(/^\uFEFF/, ''))
  } finally {
    await handle.close()
  }
}

/** A file that cannot be read as CSV: a 400 naming the file and the line. */
const unreadable = (error: any) =>
  new BadRequest('The file is not a CSV file this service can read', {
    errors: { file: `${String(error?.message ?? error).replace(/^Invalid (Record|Opening Quote|Closing Quote)[^:]*: /, '')}` }
  })

/**
 * The rows of a CSV stream: the header first (number 0), then every row, numbered from 1. Rows
 * whose cells are all empty are skipped (their numbers too), as a spreadsheet's trailing lines.
 */
export async function* rowsOf(bytes: Readable, dialect: CsvDialect): AsyncIterable<CsvRow> {
  // setEncoding decodes across chunk boundaries (a UTF-8 character split between two reads).
  bytes.setEncoding(dialect.encoding)
  const parser = bytes.pipe(parse({ bom: true, delimiter: dialect.delimiter, relax_column_count: true, skip_empty_lines: true, info: true }))
  bytes.on('error', (error) => parser.destroy(error))
  let number = 0
  try {
    for await (const { record } of parser as AsyncIterable<{ record: string[] }>) {
      const cells = number === 0 ? record.map((cell) => cell.replace(/^\uFEFF/, '')) : record
      if (number > 0 && cells.every((cell) => cell.trim() === '')) continue
      yield { number: number++, cells }
    }
  } catch (error: any) {
    // Every parse error of csv-parse (its codes are not all CSV_-prefixed: INVALID_OPENING_QUOTE).
    if (error instanceof CsvError) throw unreadable(error)
    throw error
  } finally {
    bytes.destroy()
  }
}
