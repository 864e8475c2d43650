import { describe, expect, it } from 'vitest'
import { Type } from '@feathersjs/typebox'
import { BadRequest } from '@feathersjs/errors'
import { validateQuery } from '@feathersjs/schema'
import type { Ajv } from '@feathersjs/schema'
import { dataValidator, getValidator, queryValidator } from '../../src/validators.js'
import '../../src/services/crm/deals/deals.schema.js'

describe('schema validators', () => {
  const schema = Type.Object({ limit: Type.Integer({ minimum: 1 }), name: Type.Optional(Type.String()) }, { $id: 'ValidatorsTestQuery', additionalProperties: false })
  const validate = getValidator(schema, queryValidator)

  it('when the data is valid, then it resolves to the same object, coerced in place like a query string', async () => {
    const data = { limit: '20' }
    await expect(validate(data)).resolves.toBe(data)
    expect(data).toEqual({ limit: 20 })
  })

  it('when the data is invalid, then it rejects with every error, which the validate hooks answer as a 400', async () => {
    const rejected = await validate({ limit: 0, colour: 'red' }).catch((error) => error)
    expect(rejected.ajv).toBe(true)
    expect(rejected.errors.map((error: { keyword: string }) => error.keyword).sort()).toEqual(['additionalProperties', 'minimum'])
    const hook = validateQuery(validate)
    await expect(hook({ params: { query: { limit: 'x' } } } as any)).rejects.toBeInstanceOf(BadRequest)
  })

  it('compiles schemas as synchronous Ajv code (an async validator allocates its registers on every call)', () => {
    // Ajv marks an async validator with `$async: true`.
    const isAsync = (validator: Ajv, id: string) => {
      const compiled = validator.getSchema(id) as { $async?: boolean } | undefined
      expect(compiled).toBeDefined()
      return compiled?.$async === true || compiled?.toString().startsWith('async ')
    }
    expect(isAsync(queryValidator, 'ValidatorsTestQuery')).toBe(false)
    expect(isAsync(queryValidator, 'DealQuery')).toBe(false)
    expect(isAsync(dataValidator, 'DealData')).toBe(false)
  })
})
