/** The outbox roles' logger (OutboxLogger with its pino instance), provided by the composition root. */
export const OUTBOX_LOGGER = Symbol('OUTBOX_LOGGER');
