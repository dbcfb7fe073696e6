import { describe, expect, it } from 'vitest'
import { Lease, SendBudget } from '../../../src/http/send-budget.js'

describe('the send budget', () => {
  it('waiters are served in line, only when their bytes fit; a piece larger than the budget fits an empty one', async () => {
    const b = new SendBudget(100)
    expect(b.tryTake(60)).toBe(true)
    const order: string[] = []
    const first = b.take(50).then(() => { order.push('first') })
    const second = b.take(10).then(() => { order.push('second') }) // would fit, but waits behind the first
    expect(b.tryTake(1)).toBe(false) // nobody jumps the line
    await Promise.resolve()
    expect(order).toEqual([])
    b.give(60)
    await Promise.all([first, second])
    expect(order).toEqual(['first', 'second'])
    expect(b.inUse).toBe(60)
    expect(b.waits).toBe(2)
    b.give(60)
    expect(b.tryTake(500)).toBe(true)
    b.give(500)
    expect(b.inUse).toBe(0)
  })

  it('a wait ended by its signal takes nothing and lets the next in line through', async () => {
    const b = new SendBudget(100)
    b.tryTake(100)
    const c = new AbortController()
    const gone = b.take(80, c.signal)
    const next = b.take(20)
    c.abort()
    await expect(gone).rejects.toBeDefined()
    b.give(100)
    await next
    expect(b.inUse).toBe(20)
  })

  it('a lease gives back all it holds once, on close, and nothing after', async () => {
    const b = new SendBudget(1000)
    const l = new Lease(b)
    expect(l.tryTake(300)).toBe(true)
    await l.take(200)
    l.give(100)
    expect(b.inUse).toBe(400)
    l.close()
    expect(b.inUse).toBe(0)
    l.give(300) // a write's callback after the close
    l.close()
    expect(b.inUse).toBe(0)
    await l.take(50) // a wait granted after the close gives its bytes back at once
    expect(b.inUse).toBe(0)
  })
})
