// The types of prom-client's modules that src/metrics/registry.ts imports one by one: those the
// package's index declares for the same values (its index re-exports these modules' exports).
declare module 'prom-client/lib/defaultMetrics.js' {
  import { collectDefaultMetrics } from 'prom-client'
  export default collectDefaultMetrics
}
declare module 'prom-client/lib/counter.js' {
  import { Counter } from 'prom-client'
  export default Counter
}
declare module 'prom-client/lib/gauge.js' {
  import { Gauge } from 'prom-client'
  export default Gauge
}
declare module 'prom-client/lib/histogram.js' {
  import { Histogram } from 'prom-client'
  export default Histogram
}
declare module 'prom-client/lib/registry.js' {
  import { Registry } from 'prom-client'
  export default Registry
}
