import type { ClientApplication } from '../../../client.js'
import type { Organization, OrganizationData, OrganizationPatch, OrganizationQuery, OrganizationService } from './organizations.class.js'

export type { Organization, OrganizationData, OrganizationPatch, OrganizationQuery }
export type OrganizationClientService = Pick<OrganizationService, (typeof organizationMethods)[number]>

export const organizationPath = 'organizations'
export const organizationMethods: Array<keyof OrganizationService> = ['find', 'get', 'create', 'patch']

export const organizationClient = (client: ClientApplication) => {
  const connection = client.get('connection')
  client.use(organizationPath, connection.service(organizationPath), { methods: organizationMethods })
}

declare module '../../../client.js' {
  interface ServiceTypes {
    [organizationPath]: OrganizationClientService
  }
}
