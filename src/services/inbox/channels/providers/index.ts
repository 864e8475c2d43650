import type { AccountChannel } from '../../channel-accounts/channel-accounts.schema.js'
import { instagram, messenger } from './messenger.js'
import { twilioSms } from './twilio.js'
import type { ChannelAdapter } from './types.js'
import { whatsapp } from './whatsapp.js'

export type * from './types.js'

/** The adapter of each provider channel; web chat needs none (its visitors use this API). */
export const ADAPTERS: Partial<Record<AccountChannel, ChannelAdapter>> = { whatsapp, messenger, instagram, sms: twilioSms }
