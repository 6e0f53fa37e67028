// Shared by the chaos workers (worker.mjs) and the Node benchmark runner.
//
// The wall clock in microseconds, comparable with the other languages' workers (the checker
// orders holds across processes by it). Date.now() has millisecond resolution, and
// performance.timeOrigin is sampled apart from the monotonic clock at start-up: on a loaded
// machine it was seen off by ~10 ms, which made one worker's holds look like overlaps. So the
// offset of the wall clock over the monotonic one is measured here, at the moment Date.now()
// ticks to a new millisecond (median of 7 ticks; a few ms of spinning at start).
const wallOffsetNs = (() => {
  const offsets = []
  for (let i = 0; i < 7; i++) {
    const before = Date.now()
    let hr
    let ms
    do {
      hr = process.hrtime.bigint()
      ms = Date.now()
    } while (ms === before)
    offsets.push(BigInt(ms) * 1000000n - hr)
  }
  offsets.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
  return offsets[3]
})()
export const nowUs = () => Number((process.hrtime.bigint() + wallOffsetNs) / 1000n)
