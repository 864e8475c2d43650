import type { ClientApplication } from '../../../client.js'
import type {
  PipelineStage, PipelineStageData, PipelineStagePatch, PipelineStageQuery, PipelineStageService
} from './pipeline-stages.class.js'

export type { PipelineStage, PipelineStageData, PipelineStagePatch, PipelineStageQuery }
export type PipelineStageClientService = Pick<PipelineStageService, (typeof pipelineStageMethods)[number]>

export const pipelineStagePath = 'pipeline-stages'
export const pipelineStageMethods: Array<keyof PipelineStageService> = ['find', 'get', 'create', 'patch', 'remove']

export const pipelineStageClient = (client: ClientApplication) => {
  const connection = client.get('connection')
  client.use(pipelineStagePath, connection.service(pipelineStagePath), { methods: pipelineStageMethods })
}

declare module '../../../client.js' {
  interface ServiceTypes {
    [pipelineStagePath]: PipelineStageClientService
  }
}
