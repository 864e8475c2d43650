import type { ClientApplication } from '../../../client.js'
import type { Pipeline, PipelineData, PipelinePatch, PipelineQuery, PipelineService } from './pipelines.class.js'

export type { Pipeline, PipelineData, PipelinePatch, PipelineQuery }
export type PipelineClientService = Pick<PipelineService, (typeof pipelineMethods)[number]>

export const pipelinePath = 'pipelines'
export const pipelineMethods: Array<keyof PipelineService> = ['find', 'get', 'create', 'patch', 'remove']

export const pipelineClient = (client: ClientApplication) => {
  const connection = client.get('connection')
  client.use(pipelinePath, connection.service(pipelinePath), { methods: pipelineMethods })
}

declare module '../../../client.js' {
  interface ServiceTypes {
    [pipelinePath]: PipelineClientService
  }
}
