// ES module entry point of fencelock/compat/redis-semaphore: the same objects as the CommonJS
// one (redis-semaphore.js).
import redisSemaphore from './redis-semaphore.js'

export const {
  Mutex,
  Semaphore,
  MultiSemaphore,
  RedlockMutex,
  RedlockSemaphore,
  RedlockMultiSemaphore,
  LostLockError,
  TimeoutError,
  defaultTimeoutOptions,
} = redisSemaphore
