/**
 * Permissions an operator-issued token can carry (JWT claim `perm`).
 * Wallet tokens from paid writes and SIWE carry none.
 */
/** create and replace pins without x402 payment (operator's own use, Kubo `pin remote`) */
export const PIN_WITHOUT_PAYMENT = 'pins:create-unpaid'

export const KNOWN_PERMISSIONS = [PIN_WITHOUT_PAYMENT] as const
