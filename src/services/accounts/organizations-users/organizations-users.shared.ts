import type { ClientApplication } from '../../../client.js'
import type { Membership, MembershipPatch, MembershipQuery, MembershipService } from './organizations-users.class.js'

export type { Membership, MembershipPatch, MembershipQuery }
export type MembershipClientService = Pick<MembershipService, (typeof membershipMethods)[number]>

export const membershipPath = 'organizations-users'
export const membershipMethods: Array<keyof MembershipService> = ['find', 'get', 'patch', 'remove']

export const membershipClient = (client: ClientApplication) => {
  const connection = client.get('connection')
  client.use(membershipPath, connection.service(membershipPath), { methods: membershipMethods })
}

declare module '../../../client.js' {
  interface ServiceTypes {
    [membershipPath]: MembershipClientService
  }
}
