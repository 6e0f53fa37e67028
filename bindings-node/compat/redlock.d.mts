// Types of fencelock/compat/redlock for `import`: redlock.d.ts's, with node-redlock's default
// export (redlock.mjs).
import redlock from './redlock.js'
export * from './redlock.js'
export default redlock.default
