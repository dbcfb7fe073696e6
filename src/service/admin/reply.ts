/**
 * The reply of an operation with several kinds (`pind keys list|rotate|…`)
 * as one type: every field any kind answers, each optional (a kind answers
 * its own). The admin route and the CLI share it (src/admin/api.ts).
 */
type KeysOfUnion<U> = U extends unknown ? keyof U : never
export type Reply<U> = { [K in KeysOfUnion<U>]?: U extends unknown ? (K extends keyof U ? U[K] : never) : never }
