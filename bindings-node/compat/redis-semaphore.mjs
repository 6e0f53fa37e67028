// ES module entry point of fencelock/compat/redis-semaphore: the same objects as the CommonJS
// one (redis-semaphore.js), whose named exports Node finds in its `module.exports`.
export * from './redis-semaphore.js'
