/** Closing an account: what the owner types to confirm it (the API requires it, the dashboard asks for it). */
export const CLOSE_CONFIRMATION = 'close my account';
