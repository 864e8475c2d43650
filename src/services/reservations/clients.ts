import type { ClientApplication } from '../../client.js'
import { reservationServiceClient } from './reservation-services/reservation-services.shared.js'
import { reservationResourceClient } from './reservation-resources/reservation-resources.shared.js'
import { reservationServiceResourceClient } from './reservation-service-resources/reservation-service-resources.shared.js'
import { reservationAvailabilityClient } from './reservation-resource-availability/reservation-resource-availability.shared.js'
import { reservationExceptionClient } from './reservation-resource-exceptions/reservation-resource-exceptions.shared.js'
import { availableSlotsClient } from './reservation-available-slots/reservation-available-slots.shared.js'
import { reservationClient } from './reservations/reservations.shared.js'
import { bookingLinkClient } from './reservation-booking-links/reservation-booking-links.shared.js'
import { aiAssistantClient } from './ai-assistants/ai-assistants.shared.js'
import { aiAssistantToolClient } from './ai-assistant-tools/ai-assistant-tools.shared.js'
import { aiAssistantToolCallClient } from './ai-assistant-tool-calls/ai-assistant-tool-calls.shared.js'

/** Typed client registrations of the reservations domain, used by src/client.ts. */
export const reservationsClients = (client: ClientApplication) => {
  client.configure(reservationServiceClient)
  client.configure(reservationResourceClient)
  client.configure(reservationServiceResourceClient)
  client.configure(reservationAvailabilityClient)
  client.configure(reservationExceptionClient)
  client.configure(availableSlotsClient)
  client.configure(reservationClient)
  client.configure(bookingLinkClient)
  client.configure(aiAssistantClient)
  client.configure(aiAssistantToolClient)
  client.configure(aiAssistantToolCallClient)
}
