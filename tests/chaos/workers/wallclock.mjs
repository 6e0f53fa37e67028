// Shared by the chaos workers (worker.mjs) and the Node benchmark runner.
//
// The wall clock in microseconds, comparable with the other languages' workers (the checker
// orders holds across processes by it). Date.now() has millisecond resolution, and
// performance.timeOrigin is sampled apart from the monotonic clock at start-up: on a loaded
// machine it was seen off by ~10 ms, which made one worker's holds look like overlaps. So the
// offset of the wall clock over the monotonic one is measured here, at the moment Date.now()
// ticks to a new millisecond: the median of 7 ticks, counting only ticks seen without a gap
// in the spinning (monotonic readings on both sides of the Date.now() call that saw the tick,
// and the previous call, all within 20 us). A plain median of 7 was not always enough: with
// eight workers starting at once on two CPUs, preemptions in the middle of several samples
// once put one worker's offset ~1.2 ms off, and its handoffs from another looked like overlaps
// in the benchmark. (Taking the midpoint of the narrowest bracket instead was measured worse:
// 25-52 us apart between 8 processes, against 7-29 us for this.)
// The offset given by the process that started this one (tests/chaos/src/worker.rs, which
// reads both clocks precisely) wins; the estimate below is for processes started otherwise
// (the benchmark's runners).
const fromParent = process.env.FENCELOCK_WALL_OFFSET_NS
const wallOffsetNs = fromParent ? BigInt(fromParent) : (() => {
  const offsets = []
  const unchecked = [] // used only if no tick at all was seen without a gap
  for (let tries = 0; offsets.length < 7 && tries < 200; tries++) {
    let before = Date.now()
    let prevEnd = process.hrtime.bigint()
    for (;;) {
      const hr = process.hrtime.bigint()
      const ms = Date.now()
      const end = process.hrtime.bigint()
      if (ms !== before) {
        const offset = BigInt(ms) * 1000000n - hr
        if (end - prevEnd < 20000n) offsets.push(offset)
        else unchecked.push(offset)
        break
      }
      before = ms
      prevEnd = end
    }
  }
  const use = offsets.length > 0 ? offsets : unchecked
  use.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
  return use[use.length >> 1]
})()
export const nowUs = () => Number((process.hrtime.bigint() + wallOffsetNs) / 1000n)
