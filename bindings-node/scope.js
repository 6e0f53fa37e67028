'use strict'
// What every acquisition of the JavaScript face shares, whatever it acquires (a lock, a
// semaphore's permits, a read share or the write hold): the caller's AbortSignal forwarded to
// the native call, the caller's OpenTelemetry context while a tracer is attached, and the
// scoped form (`using`, `sem.using`, `rw.reading`, `rw.writing`).

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

// The tracer attached by metrics.js' instrumentOpenTelemetry (null: none): `traced(start)`
// runs an acquisition's native call under the caller's active context.
let tracer = null

function setTracer(t) {
  tracer = t
}

/**
 * `method(name, options, ...rest)` with `options.signal` replaced by a signal of its own, and,
 * while a tracer is attached, under the caller's OpenTelemetry context.
 */
function withOwnSignal(method) {
  function acquireWithSignal(name, options, ...rest) {
    const signal = options !== null && typeof options === 'object' ? options.signal : undefined
    if (!(signal instanceof AbortSignal)) return method.call(this, name, options, ...rest)
    const [own, done] = ownSignal(signal)
    const settled = method.call(this, name, { ...options, signal: own }, ...rest)
    settled.finally(done).catch(() => {})
    return settled
  }
  return function acquisition(...args) {
    if (tracer === null) return acquireWithSignal.apply(this, args)
    return tracer.traced(() => acquireWithSignal.apply(this, args))
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

// An acquisition's options without the one its kind adds (a semaphore's `count`, a term's
// `value`): `[that option or its default, the rest]`. Options that are not an object pass
// through whole, for the native call to reject with its own message.
function splitOption(options, key, otherwise) {
  if (options === null || typeof options !== 'object') return [otherwise, options]
  const { [key]: value = otherwise, ...rest } = options
  return [value, rest]
}

module.exports = { withOwnSignal, runScoped, setTracer, splitOption }
