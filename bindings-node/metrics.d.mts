// Types of fencelock/metrics for `import`: metrics.d.ts's, and the module as the default export
// (metrics.mjs).
import metrics from './metrics.js'
export * from './metrics.js'
export default metrics
