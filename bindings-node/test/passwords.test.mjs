// Issue 20, item 1: passwords of every printable character, in each URL form, through each
// failure (parse, connect, authentication, TLS), never reach an error's message or stack, an
// inspected object, or an event.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { createRequire } from 'node:module'
import { inspect } from 'node:util'

import { RedisServer, freePort } from './redis.mjs'

const require = createRequire(import.meta.url)
const { LockManager, onEvent } = require('../index.js')

// Printable ASCII but space, and a few characters beyond.
const ALPHABET = [...Array.from({ length: 0x7e - 0x21 + 1 }, (_, i) => String.fromCharCode(0x21 + i)), 'é', '中', '🔒']

/** `n` passwords from a seeded generator (a failure is reproducible). */
function passwords(n, seed) {
  let s = seed >>> 0
  const next = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0
    return s / 2 ** 32
  }
  return Array.from({ length: n }, () => {
    const len = 8 + Math.floor(next() * 17)
    return Array.from({ length: len }, () => ALPHABET[Math.floor(next() * ALPHABET.length)]).join('')
  })
}

describe('generated passwords', () => {
  it('never appear, whatever the URL form and the failure', async () => {
    const server = await RedisServer.start()
    const closed = await freePort()
    const shown = []
    const off = onEvent((e) => shown.push(JSON.stringify(e)), { level: 'trace' })
    const record = (e) => shown.push(String(e?.message), String(e?.stack), inspect(e))
    const pws = passwords(25, 20)
    try {
      for (const pw of pws) {
        const w = pw.replaceAll('%', '%25') // the escape rule the docs state
        const forms = [
          `redis://user:${w}@127.0.0.1:${server.port}`, // authentication fails
          `redis://:${w}@127.0.0.1:${closed}`, // connection refused
          `rediss://user:${w}@127.0.0.1:${server.port}`, // TLS to a plain port
          `redis+unix:///nonexistent/redis.sock?db=0&pass=${w}`, // no socket
          `redis+sentinel://:${w}@127.0.0.1:${closed}/mymaster?sentinel_password=${w}`,
        ]
        // The forms at once: each waits out its failure (up to 300 ms), none needs another.
        await Promise.all(forms.map(async (url) => {
          const m = new LockManager(url, { serverTimeout: 200, connectTimeout: 300, tlsInsecure: url.startsWith('rediss') })
          shown.push(inspect(m))
          await assert.rejects(m.acquire('k', { ttl: 5000, wait: 300 }), (e) => (record(e), true))
          await m.close()
        }))
        assert.throws(() => new LockManager(`redis://user:${w}@127.0.0.1:notaport`), (e) => (record(e), true))
        assert.throws(() => new LockManager([forms[0], forms[0]]), (e) => (record(e), true))
      }
      // Events arrive on the event loop a little after they happen.
      await new Promise((r) => setImmediate(r))
    } finally {
      off()
      await server.stop()
    }
    for (const pw of pws) {
      for (const text of shown) assert.ok(!text.includes(pw), `password ${JSON.stringify(pw)} shown in ${text}`)
    }
  })
})
