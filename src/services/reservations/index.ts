import type { Application } from '../../declarations.js'
import { reservationService } from './reservation-services/reservation-services.js'
import { reservationResource } from './reservation-resources/reservation-resources.js'
import { reservationServiceResource } from './reservation-service-resources/reservation-service-resources.js'
import { reservationAvailability } from './reservation-resource-availability/reservation-resource-availability.js'
import { reservationException } from './reservation-resource-exceptions/reservation-resource-exceptions.js'
import { availableSlots } from './reservation-available-slots/reservation-available-slots.js'
import { reservation } from './reservations/reservations.js'
import { bookingLink } from './reservation-booking-links/reservation-booking-links.js'
import { publicBooking } from './public-booking/public-booking.js'
import { aiAssistant } from './ai-assistants/ai-assistants.js'
import { aiAssistantTool } from './ai-assistant-tools/ai-assistant-tools.js'
import { aiAssistantToolCall } from './ai-assistant-tool-calls/ai-assistant-tool-calls.js'

/** The reservations domain, bookable services and resources, their availability, reservations, booking links and the public booking page, and the AI assistants that book through their tools. */
export const reservations = (app: Application) => {
  app.configure(reservationService)
  app.configure(reservationResource)
  app.configure(reservationServiceResource)
  app.configure(reservationAvailability)
  app.configure(reservationException)
  app.configure(availableSlots)
  app.configure(reservation)
  app.configure(bookingLink)
  app.configure(publicBooking)
  app.configure(aiAssistant)
  app.configure(aiAssistantTool)
  app.configure(aiAssistantToolCall)
}
