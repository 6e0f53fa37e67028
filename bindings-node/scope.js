'use strict'
// What every acquisition of the JavaScript face shares, whatever it acquires (a lock, a
// semaphore's permits, a read share or the write hold): the caller's AbortSignal forwarded to
// the native call, and the scoped form (`using`, `sem.using`, `rw.reading`, `rw.writing`).

// One `abort` listener on a caller's AbortSignal however many acquisitions share it (Node
// warns past 10 listeners on one signal): each acquisition gets a signal of its own, aborted
// with the caller's reason by that one listener, and leaves the set when it settles.
const forwarded = new WeakMap()

function ownSignal(signal) {
  const own = new AbortController()
  if (signal.aborted) {
    own.abort(signal.reason)
    return [own.signal, () => {}]
  }
  let set = forwarded.get(signal)
  if (set === undefined) {
    set = new Set()
    forwarded.set(signal, set)
    signal.addEventListener('abort', () => {
      for (const c of set) c.abort(signal.reason)
      set.clear()
    }, { once: true })
  }
  set.add(own)
  return [own.signal, () => set.delete(own)]
}

/** `method(name, options, ...rest)` with `options.signal` replaced by a signal of its own. */
function withOwnSignal(method) {
  return function acquireWithSignal(name, options, ...rest) {
    const signal = options !== null && typeof options === 'object' ? options.signal : undefined
    if (!(signal instanceof AbortSignal)) return method.call(this, name, options, ...rest)
    const [own, done] = ownSignal(signal)
    const settled = method.call(this, name, { ...options, signal: own }, ...rest)
    settled.finally(done).catch(() => {})
    return settled
  }
}

/**
 * The scoped form: `acquire()` (auto-extended), then `fn(lock, lock.signal)`, then the
 * release, resolving to `fn`'s result; a loss while `fn` ran rejects with `LockLostError`
 * instead. `invalid(message)` makes the error of a missing callback (`what` names the call).
 */
async function runScoped(what, acquire, fn, invalid) {
  if (typeof fn !== 'function') {
    throw invalid(`${what} needs a callback function, got ${typeof fn}`)
  }
  const lock = await acquire()
  let result
  try {
    result = await fn(lock, lock.signal)
  } catch (err) {
    // The callback's own error wins; the lock is still released.
    await lock.__finishScope().catch(() => {})
    throw err
  }
  await lock.__finishScope()
  return result
}

module.exports = { withOwnSignal, runScoped }
