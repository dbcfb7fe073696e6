/** Sets an own property even for keys such as "__proto__" (plain assignment would change the prototype instead). */
export function setOwn (obj: Record<string, string>, key: string, value: string): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true })
}
