// ES module entry point: the same objects as the CommonJS one, as named exports.
import fencelock from './index.js'

export const {
  LockManager,
  Lock,
  Semaphore,
  RwLock,
  Election,
  Term,
  onEvent,
  LockError,
  NotAcquiredError,
  LockLostError,
  UnavailableError,
  InvalidArgumentError,
  LockReleasedError,
  ServerError,
  WrongKindError,
  AbortError,
} = fencelock
export default fencelock
