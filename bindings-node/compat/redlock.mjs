// ES module entry point of fencelock/compat/redlock: the same objects as the CommonJS one
// (redlock.js), with node-redlock's default export.
import redlock from './redlock.js'

export const { Lock, ExecutionError, ResourceLockedError } = redlock
export default redlock.default
