import type { ClientApplication } from '../../../client.js'
import type { ActivityType, ActivityTypeData, ActivityTypePatch, ActivityTypeQuery, ActivityTypeService } from './activity-types.class.js'

export type { ActivityType, ActivityTypeData, ActivityTypePatch, ActivityTypeQuery }
export type ActivityTypeClientService = Pick<ActivityTypeService, (typeof activityTypeMethods)[number]>

export const activityTypePath = 'activity-types'
export const activityTypeMethods: Array<keyof ActivityTypeService> = ['find', 'get', 'create', 'patch', 'remove']

export const activityTypeClient = (client: ClientApplication) => {
  const connection = client.get('connection')
  client.use(activityTypePath, connection.service(activityTypePath), { methods: activityTypeMethods })
}

declare module '../../../client.js' {
  interface ServiceTypes {
    [activityTypePath]: ActivityTypeClientService
  }
}
