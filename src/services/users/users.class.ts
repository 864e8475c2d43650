import type { Params } from '@feathersjs/feathers'
import type { KnexAdapterParams } from '@feathersjs/knex'
import { RecordService } from '../record-service.js'
import type { Application } from '../../declarations.js'
import type { User, UserData, UserPatch, UserQuery } from './users.schema.js'

export type { User, UserData, UserPatch, UserQuery }

export type UserParams = KnexAdapterParams<UserQuery>

/** Accounts are global (not tenant records); a caller only ever reaches their own. */
export class UserService<ServiceParams extends Params = UserParams> extends RecordService<
  User,
  UserData,
  UserParams,
  UserPatch
> {}

export const getOptions = (app: Application) => ({
  paginate: app.get('paginate'),
  Model: app.get('knex'),
  name: 'users',
  softDelete: false
})
