import { BadRequest, Forbidden } from '@feathersjs/errors'
import type { NullableId } from '@feathersjs/feathers'
import type { KnexAdapterParams } from '@feathersjs/knex'
import type { Application } from '../../../declarations.js'
import { FORBIDDEN_MESSAGE } from '../../../hooks/tenant-scope.js'
import { RecordService } from '../../../engine/record-service.js'
import type { Membership, MembershipPatch, MembershipQuery } from './organizations-users.schema.js'
import { databaseOf } from '../../../db.js'

export type { Membership, MembershipPatch, MembershipQuery }
export type MembershipParams = KnexAdapterParams<MembershipQuery>

export const USER_JOIN = [{ from: 'user_id', as: 'user', table: 'users', columns: ['id', 'first_name', 'last_name', 'email'], tenant: false }]

/**
 * Members of an organization and their roles. Only owners grant or take away ownership,
 * and an organization always keeps at least one owner.
 */
export class MembershipService extends RecordService<Membership, never, MembershipParams, MembershipPatch> {
  async patch(id: NullableId, data: MembershipPatch, params: MembershipParams = {}): Promise<any> {
    return this.changeMembership(id, params, async (trx, current) => {
      if (data.role === current.role) return (await this.rendered([current], { transaction: { trx } }))[0]
      const [updated] = await this.written(trx, trx('organizations_users')
        .where({ organization_id: current.organization_id, id: current.id })
        .update({ role: data.role, updated_at: trx.fn.now() })
        .returning('*'))
      return updated
    }, data.role)
  }

  async remove(id: NullableId, params: MembershipParams = {}): Promise<any> {
    return this.changeMembership(id, params, async (trx, current) => {
      const [removed] = await this.written(trx, trx('organizations_users').where({ organization_id: current.organization_id, id: current.id }).delete().returning('*'))
      return removed
    })
  }

  /**
   * Locks the organization's memberships so that two concurrent changes cannot both remove
   * the last owner, then applies the change.
   */
  private async changeMembership(
    id: NullableId,
    params: MembershipParams,
    change: (trx: any, current: Membership) => Promise<Membership>,
    newRole?: string
  ) {
    const current = params.before as Membership ?? (await this.storedRow(id!, params))
    const callerRole = params.caller?.roles.get(current.organization_id)
    if ((current.role === 'owner' || newRole === 'owner') && callerRole !== 'owner' && !params.system) {
      throw new Forbidden(FORBIDDEN_MESSAGE)
    }
    return databaseOf(params, this.knex).transaction(async (trx) => {
      const owners = await trx('organizations_users')
        .where({ organization_id: current.organization_id, role: 'owner' })
        .forUpdate()
        .select('id')
      const losesOwner = current.role === 'owner' && newRole !== 'owner'
      if (losesOwner && owners.length <= 1) {
        throw new BadRequest('An organization must keep at least one owner')
      }
      return change(trx, current)
    })
  }
}

export const getOptions = (app: Application) => ({
  paginate: app.get('paginate'),
  Model: app.get('knex'),
  name: 'organizations_users',
  softDelete: false
})
