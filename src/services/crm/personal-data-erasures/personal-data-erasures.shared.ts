import type { ClientApplication } from '../../../client.js'
import type { PersonalDataErasure, PersonalDataErasureQuery, PersonalDataErasureService } from './personal-data-erasures.class.js'

export type { PersonalDataErasure, PersonalDataErasureQuery }
export type PersonalDataErasureClientService = Pick<PersonalDataErasureService, (typeof personalDataErasureMethods)[number]>

export const personalDataErasurePath = 'personal-data-erasures'
export const personalDataErasureMethods = ['find', 'get'] as const

export const personalDataErasureClient = (client: ClientApplication) => {
  const connection = client.get('connection')
  client.use(personalDataErasurePath, connection.service(personalDataErasurePath), { methods: [...personalDataErasureMethods] })
}

declare module '../../../client.js' {
  interface ServiceTypes {
    [personalDataErasurePath]: PersonalDataErasureClientService
  }
}
