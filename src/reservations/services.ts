import type { Application } from '../declarations.js'
import { reservationService } from '../services/reservation-services/reservation-services.js'
import { reservationResource } from '../services/reservation-resources/reservation-resources.js'
import { reservationServiceResource } from '../services/reservation-service-resources/reservation-service-resources.js'
import { reservationAvailability } from '../services/reservation-resource-availability/reservation-resource-availability.js'
import { reservationException } from '../services/reservation-resource-exceptions/reservation-resource-exceptions.js'
import { availableSlots } from '../services/reservation-available-slots/reservation-available-slots.js'
import { reservation } from '../services/reservations/reservations.js'
import { bookingLink } from '../services/reservation-booking-links/reservation-booking-links.js'
import { publicBooking } from '../services/public-booking/public-booking.js'
import { aiAssistant } from '../services/ai-assistants/ai-assistants.js'
import { aiAssistantTool } from '../services/ai-assistant-tools/ai-assistant-tools.js'
import { aiAssistantToolCall } from '../services/ai-assistant-tool-calls/ai-assistant-tool-calls.js'

/** Every service of the reservations feature and its AI assistant tools, registered from src/services/index.ts. */
export const reservationServices = (app: Application) => {
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
