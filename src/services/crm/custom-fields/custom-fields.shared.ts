import type { ClientApplication } from '../../../client.js'
import type { CustomField, CustomFieldData, CustomFieldPatch, CustomFieldQuery, CustomFieldService } from './custom-fields.class.js'

export type { CustomField, CustomFieldData, CustomFieldPatch, CustomFieldQuery }
export type CustomFieldClientService = Pick<CustomFieldService, (typeof customFieldMethods)[number]>

export const customFieldPath = 'custom-fields'
export const customFieldMethods: Array<keyof CustomFieldService> = ['find', 'get', 'create', 'patch', 'remove']

export const customFieldClient = (client: ClientApplication) => {
  const connection = client.get('connection')
  client.use(customFieldPath, connection.service(customFieldPath), { methods: customFieldMethods })
}

declare module '../../../client.js' {
  interface ServiceTypes {
    [customFieldPath]: CustomFieldClientService
  }
}
