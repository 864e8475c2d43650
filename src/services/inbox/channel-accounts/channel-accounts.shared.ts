import type { ClientApplication } from '../../../client.js'
import type { ChannelAccount, ChannelAccountData, ChannelAccountPatch, ChannelAccountQuery, ChannelAccountService } from './channel-accounts.class.js'

export type { ChannelAccount, ChannelAccountData, ChannelAccountPatch, ChannelAccountQuery }
export type ChannelAccountClientService = Pick<ChannelAccountService, (typeof channelAccountMethods)[number]>

export const channelAccountPath = 'channel-accounts'
export const channelAccountMethods: Array<keyof ChannelAccountService> = ['find', 'get', 'create', 'patch', 'remove']

export const channelAccountClient = (client: ClientApplication) => {
  const connection = client.get('connection')
  client.use(channelAccountPath, connection.service(channelAccountPath), { methods: channelAccountMethods })
}

declare module '../../../client.js' {
  interface ServiceTypes {
    [channelAccountPath]: ChannelAccountClientService
  }
}
