/** The errors PinLedger's writes throw: the contract's own (../errors.ts). */
export { PaymentReusedError, PinGoneError } from '../errors.js'
