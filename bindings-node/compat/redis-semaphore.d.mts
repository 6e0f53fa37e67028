// Types of fencelock/compat/redis-semaphore for `import`: the same as redis-semaphore.d.ts.
export * from './redis-semaphore.js'
