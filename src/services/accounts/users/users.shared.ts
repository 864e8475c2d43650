import type { ClientApplication } from '../../../client.js'
import type { User, UserData, UserPatch, UserQuery, UserService } from './users.class.js'

export type { User, UserData, UserPatch, UserQuery }
export type UserClientService = Pick<UserService, (typeof userMethods)[number]>

export const userPath = 'users'
export const userMethods: Array<keyof UserService> = ['find', 'get', 'create', 'patch', 'verifyEmail', 'request-password-reset', 'reset-password']

export const userClient = (client: ClientApplication) => {
  const connection = client.get('connection')
  client.use(userPath, connection.service(userPath), { methods: userMethods })
}

declare module '../../../client.js' {
  interface ServiceTypes {
    [userPath]: UserClientService
  }
}
