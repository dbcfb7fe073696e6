/** A count of things in flight (writes): `take` waits for room, first come, first served. */
export class Window {
  private free: number
  private readonly waiting: Array<() => void> = []
  constructor (size: number) { this.free = size }
  async take (): Promise<void> {
    if (this.free > 0) { this.free--; return }
    await new Promise<void>(resolve => { this.waiting.push(resolve) })
  }

  give (): void {
    const next = this.waiting.shift()
    if (next != null) next()
    else this.free++
  }
}
