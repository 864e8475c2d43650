import { BadRequest } from '@feathersjs/errors'
import { Type } from '@feathersjs/typebox'
import type { TSchema } from '@feathersjs/typebox'
import { getDispatch } from '@feathersjs/schema'
import type { Params } from '@feathersjs/feathers'
import type { Application } from '../../../declarations.js'
import { RecordId } from '../../../schemas.js'
import { reservationDataSchema, reservationPatchSchema, reservationQuerySchema } from '../reservations/reservations.schema.js'
import { reservationServiceQuerySchema } from '../reservation-services/reservation-services.schema.js'
import { availableSlotsQuerySchema } from '../reservation-available-slots/reservation-available-slots.schema.js'

export const TOOL_KEYS = ['find_reservations', 'create_reservation', 'update_reservation', 'get_reservation_services', 'get_available_slots'] as const
export type ToolKey = (typeof TOOL_KEYS)[number]

export interface AssistantTool {
  description: string
  /** The endpoint the tool maps to (spec table). */
  endpoint: string
  /** JSON Schema of the tool's arguments, as offered to a model. */
  arguments: TSchema
  /** Runs the endpoint's service method with the caller's params: same tenant rules, same validation. */
  run: (app: Application, args: Record<string, any>, params: Params) => Promise<unknown>
}

/** A schema offered as a tool's arguments: its own $id left out. */
export const withoutId = (schema: TSchema) => ({ ...schema, $id: undefined })

export const ASSISTANT_TOOLS: Record<ToolKey, AssistantTool> = {
  find_reservations: {
    description: 'List and search reservations (filters: status, service_id, resource_id, contact_id, start_datetime {$gte, $lte}, searchTerm).',
    endpoint: 'GET /reservations',
    arguments: withoutId(reservationQuerySchema),
    run: (app, args, params) => app.service('reservations').find({ ...params, query: args })
  },
  create_reservation: {
    description: 'Book a reservation at a start offered by get_available_slots.',
    endpoint: 'POST /reservations',
    arguments: withoutId(reservationDataSchema),
    run: (app, args, params) => app.service('reservations').create(args as any, { ...params, reservationSource: 'assistant' })
  },
  update_reservation: {
    description: 'Reschedule a reservation, change its notes or move its status (id names the reservation).',
    endpoint: 'PATCH /reservations/:id',
    arguments: Type.Object({ id: RecordId, ...reservationPatchSchema.properties }, { additionalProperties: false }),
    run: (app, { id, ...changes }, params) => app.service('reservations').patch(id, changes as any, params)
  },
  get_reservation_services: {
    description: 'List the reservation services (filters: is_active, name).',
    endpoint: 'GET /reservation-services',
    arguments: withoutId(reservationServiceQuerySchema),
    run: (app, args, params) => app.service('reservation-services').find({ ...params, query: args })
  },
  get_available_slots: {
    description: "Available starts of a service on a date (YYYY-MM-DD in the service's time zone).",
    endpoint: 'GET /reservation-available-slots',
    arguments: withoutId(availableSlotsQuerySchema),
    run: (app, args, params) => app.service('reservation-available-slots').find({ ...params, query: args as any })
  }
}

export const isToolKey = (key: string): key is ToolKey => (TOOL_KEYS as readonly string[]).includes(key)

/** The live assistant of an organization, or a 400 naming field `field`. */
export async function assistantOf(app: Application, organizationId: number, assistantId: number, field = 'assistant_id') {
  const assistant = await app.get('knex')('ai_assistants')
    .where({ organization_id: organizationId, id: assistantId }).whereNull('deleted_at').first()
  if (!assistant) throw new BadRequest('Invalid reference', { errors: { [field]: 'must be an ai assistant of this organization' } })
  return assistant as { id: number; organization_id: number; internal_tools?: { tools?: Record<string, { enabled?: boolean }> } }
}

/** The reservation tools an assistant's internal_tools enables. */
export const enabledTools = (assistant: Awaited<ReturnType<typeof assistantOf>>): ToolKey[] =>
  TOOL_KEYS.filter((key) => assistant.internal_tools?.tools?.[key]?.enabled === true)

/** What a tool returned, as its endpoint would have sent it (external resolvers applied). */
export const asSent = (result: unknown) => getDispatch(result) ?? result
