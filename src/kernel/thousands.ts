/**
 * 1234567 → "1,234,567", without Intl. The first Intl formatter a process
 * makes (`toLocaleString('en-US')` included) maps megabytes of ICU's locale
 * data into its memory for the rest of its life, and serve formats such
 * counts while it upgrades a ledger at start (docs/internals.md, thousands.ts).
 */
export function thousands (n: number): string {
  const [whole = '', fraction] = String(n).split('.')
  return whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',') + (fraction != null ? `.${fraction}` : '')
}
