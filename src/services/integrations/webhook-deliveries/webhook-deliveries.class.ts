import { Conflict, NotFound } from '@feathersjs/errors'
import type { KnexAdapterParams } from '@feathersjs/knex'
import type { Application } from '../../../declarations.js'
import { idOfPath } from '../../../hooks/custom-method-id.js'
import { enqueueJob } from '../../../outbox/index.js'
import { WEBHOOK_TOPIC, orderingKeyOf } from '../../../webhook-events.js'
import { RecordService } from '../../../engine/record-service.js'
import type { WebhookDelivery, WebhookDeliveryQuery } from './webhook-deliveries.schema.js'
import { databaseOf } from '../../../db.js'

export type { WebhookDelivery, WebhookDeliveryQuery }
export type WebhookDeliveryParams = KnexAdapterParams<WebhookDeliveryQuery>

/** One event for one subscription: written with the change that caused it, then posted by the outbox worker. */
export class WebhookDeliveryService extends RecordService<WebhookDelivery, never, WebhookDeliveryParams> {
  constructor(options: any, private app: Application) {
    super(options)
  }

  /**
   * POST /webhook-deliveries/:id, X-Service-Method: redeliver: the same event (same webhook-id,
   * same body) posted again, after the subscription's earlier events. 409 while it is still pending.
   */
  async redeliver(data: { organization_id?: number; id?: number }, params: WebhookDeliveryParams): Promise<WebhookDelivery> {
    const id = idOfPath(params, data)
    const db = databaseOf(params, this.knex)
    const delivery = await db.transaction(async (trx) => {
      const [row] = await trx('webhook_deliveries')
        .where({ organization_id: data.organization_id, id })
        .whereNot('status', 'pending')
        .update({ status: 'pending', next_attempt_at: trx.fn.now(), delivered_at: null, updated_at: trx.fn.now() })
        .returning('*')
      if (!row) {
        const exists = await trx('webhook_deliveries').first('id').where({ organization_id: data.organization_id, id })
        if (exists) throw new Conflict('This delivery is still pending: it will be attempted again without asking')
        throw new NotFound(`No record found for id '${id}'`)
      }
      await enqueueJob(trx, {
        topic: WEBHOOK_TOPIC,
        organizationId: row.organization_id,
        kind: row.type,
        payload: { delivery_id: row.id },
        orderingKey: orderingKeyOf(row.subscription_id)
      })
      this.app.get('outbox').kickAfterCommit(trx)
      return row
    })
    return delivery as WebhookDelivery
  }
}

export const getOptions = (app: Application) => ({
  paginate: app.get('paginate'),
  Model: app.get('knex'),
  name: 'webhook_deliveries',
  softDelete: false
})
