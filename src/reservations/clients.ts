import type { ClientApplication } from '../client.js'
import { reservationServiceClient } from '../services/reservation-services/reservation-services.shared.js'
import { reservationResourceClient } from '../services/reservation-resources/reservation-resources.shared.js'
import { reservationServiceResourceClient } from '../services/reservation-service-resources/reservation-service-resources.shared.js'
import { reservationAvailabilityClient } from '../services/reservation-resource-availability/reservation-resource-availability.shared.js'
import { reservationExceptionClient } from '../services/reservation-resource-exceptions/reservation-resource-exceptions.shared.js'
import { availableSlotsClient } from '../services/reservation-available-slots/reservation-available-slots.shared.js'
import { reservationClient } from '../services/reservations/reservations.shared.js'
import { bookingLinkClient } from '../services/reservation-booking-links/reservation-booking-links.shared.js'
import { aiAssistantClient } from '../services/ai-assistants/ai-assistants.shared.js'
import { aiAssistantToolClient } from '../services/ai-assistant-tools/ai-assistant-tools.shared.js'
import { aiAssistantToolCallClient } from '../services/ai-assistant-tool-calls/ai-assistant-tool-calls.shared.js'

/** Typed client registrations of the reservations feature, used by src/client.ts. */
export const reservationClients = (client: ClientApplication) => {
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
