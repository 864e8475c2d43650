import type { ClientApplication } from '../../../client.js'
import type {
  Activity, ActivityCompletion, ActivityCompletionResult, ActivityData, ActivityPatch, ActivityQuery, ActivityService
} from './activities.class.js'

export type { Activity, ActivityCompletion, ActivityCompletionResult, ActivityData, ActivityPatch, ActivityQuery }
export type ActivityClientService = Pick<ActivityService, (typeof activityMethods)[number]>

export const activityPath = 'activities'
export const activityMethods: Array<keyof ActivityService> = ['find', 'get', 'create', 'patch', 'remove', 'upsert', 'batch-update', 'batch-delete']

export const activityClient = (client: ClientApplication) => {
  const connection = client.get('connection')
  client.use(activityPath, connection.service(activityPath), { methods: activityMethods })
}

declare module '../../../client.js' {
  interface ServiceTypes {
    [activityPath]: ActivityClientService
  }
}
