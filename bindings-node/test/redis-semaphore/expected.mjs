// The tests of redis-semaphore's own suite that fail against the drop-in, each with why.
export const EXPECTED_FAILURES = new Map([])
