import type { ClientApplication } from '../../../client.js'
import type { Invitation, InvitationAccept, InvitationData, InvitationQuery, InvitationService } from './organizations-users-invites.class.js'

export type { Invitation, InvitationAccept, InvitationData, InvitationQuery }
export type InvitationClientService = Pick<InvitationService, (typeof invitationMethods)[number]>

export const invitationPath = 'organizations-users-invites'
export const invitationMethods: Array<keyof InvitationService> = ['find', 'get', 'create', 'patch', 'remove']

export const invitationClient = (client: ClientApplication) => {
  const connection = client.get('connection')
  client.use(invitationPath, connection.service(invitationPath), { methods: invitationMethods })
}

declare module '../../../client.js' {
  interface ServiceTypes {
    [invitationPath]: InvitationClientService
  }
}
