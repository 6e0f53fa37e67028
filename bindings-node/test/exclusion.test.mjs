// Mutual exclusion: among concurrent async tasks, among Node processes, and against the
// classic lock of other clients (node-redlock, a plain SET NX PX from ioredis) on the same key.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { describe, it } from 'node:test'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import Redlock from 'redlock'

import { serverWithManager } from './redis.mjs'

const require = createRequire(import.meta.url)
const { LockManager, NotAcquiredError } = require('../index.js')
const tick = () => new Promise((r) => setImmediate(r))

let server
let mgr
serverWithManager(LockManager, (s, m) => {
  server = s
  mgr = m
})

describe('mutual exclusion', () => {
  it('many concurrent async tasks on one name never overlap', async () => {
    const managers = [mgr, new LockManager(server.url), new LockManager(server.url)]
    let inside = 0
    let sections = 0
    let maxInside = 0
    const task = async (i) => {
      for (let round = 0; round < 5; round++) {
        const lock = await managers[i % managers.length].acquire('counter', { ttl: 10_000, wait: 60_000 })
        inside++
        maxInside = Math.max(maxInside, inside)
        await tick()
        await tick()
        sections++
        inside--
        await lock.release()
      }
    }
    await Promise.all(Array.from({ length: 20 }, (_, i) => task(i)))
    assert.equal(maxInside, 1, 'two holders at once')
    assert.equal(sections, 100)
    await managers[1].close()
    await managers[2].close()
  })

  it('several Node processes on one name never overlap', async () => {
    const worker = fileURLToPath(new URL('./worker.cjs', import.meta.url))
    const procs = 4
    const rounds = 10
    const runs = Array.from({ length: procs }, () => {
      const child = spawn(process.execPath, [worker, server.url, 'procs', String(rounds)], {
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      let out = ''
      child.stdout.on('data', (d) => (out += d))
      child.stderr.on('data', (d) => (out += d))
      return new Promise((resolve) => child.on('exit', (code) => resolve({ code, out })))
    })
    const results = await Promise.all(runs)
    for (const r of results) assert.equal(r.code, 0, r.out)
    const c = server.client()
    assert.equal(await c.get('procs:sections'), String(procs * rounds))
    assert.equal(await c.get('procs:overlaps'), null, 'no section ever saw another holder')
  })
})

describe('interoperability on the same key', () => {
  it('a node-redlock lock excludes fencelock, and fencelock excludes node-redlock', async () => {
    const client = server.client()
    const redlock = new Redlock([client], { retryCount: 0 })
    redlock.on('error', () => {})

    const theirs = await redlock.acquire(['shared-redlock'], 10_000)
    assert.equal(await mgr.tryAcquire('shared-redlock'), null)
    await assert.rejects(mgr.acquire('shared-redlock', { wait: 100 }), NotAcquiredError)
    await theirs.release()

    const ours = await mgr.acquire('shared-redlock', { ttl: 10_000, wait: 0 })
    await assert.rejects(redlock.acquire(['shared-redlock'], 10_000))
    await ours.release()
    const again = await redlock.acquire(['shared-redlock'], 1000)
    await again.release()
  })

  it('a plain SET NX PX from ioredis excludes fencelock, and fencelock excludes it', async () => {
    const client = server.client()
    assert.equal(await client.set('shared-setnx', 'other-client', 'PX', 10_000, 'NX'), 'OK')
    assert.equal(await mgr.tryAcquire('shared-setnx'), null)
    assert.equal(await client.del('shared-setnx'), 1)

    const ours = await mgr.acquire('shared-setnx', { ttl: 10_000, wait: 0 })
    assert.equal(await client.set('shared-setnx', 'other-client', 'PX', 10_000, 'NX'), null)
    assert.equal(await client.get('shared-setnx'), ours.token, 'the value is the token, as in the classic pattern')
    await ours.release()
    assert.equal(await client.set('shared-setnx', 'other-client', 'PX', 10_000, 'NX'), 'OK')
  })

  it('a waiter gets the lock when the other client lets its key expire', async () => {
    const client = server.client()
    assert.equal(await client.set('shared-expiry', 'other', 'PX', 300, 'NX'), 'OK')
    const t0 = Date.now()
    const lock = await mgr.acquire('shared-expiry', { wait: 10_000 })
    assert.ok(Date.now() - t0 < 5000)
    await lock.release()
  })
})
