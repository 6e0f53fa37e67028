// ES module entry point of fencelock/metrics: the CommonJS module's exports, named.
import metrics from './metrics.js'

export const { MEASURES, registerPromClient, instrumentOpenTelemetry } = metrics
export default metrics
