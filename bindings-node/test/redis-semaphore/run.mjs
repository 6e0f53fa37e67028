// redis-semaphore's own tests (its repository's test/ at tag 5.7.0, commit 63c2d01, the newest
// stored here; vendored under its MIT licence, not a line of a test changed) run against
// fencelock/compat/redis-semaphore and, as the control, against redis-semaphore 5.8.0 itself:
//
// 1. tsc transpiles them (and src/, which stands for the library's source modules the tests
//    import, each giving the object of that name from the module under test) into .build/;
// 2. for each module under test, three redis-servers are started on free loopback ports (the
//    tests' REDIS_URI1..3), and the two modules' runs go on at once;
// 3. mocha runs the tests against each module (against the drop-in, each test in a mocha run
//    of its own), forked with an IPC channel over which test/shell.ts asks this script to
//    stop a server (by PID) or start it again;
// 4. the results are checked against expected.mjs: the control must pass every test but four
//    whose own 50 ms window a busy machine can miss (either outcome accepted), and the
//    drop-in every test but the expected failures, each of which must fail (an expected
//    failure that passes is an error too, so the list stays true); a few tests race with the
//    drop-in's background work, and either outcome of those is accepted (expected.mjs).
//
// ci/stages/30-node.sh runs it; README.md has the results.
//
// Usage: node test/redis-semaphore/run.mjs   (in bindings-node/, after a build)
// Environment: ONLY=redis-semaphore|fencelock runs one of the two; GREP=PATTERN passes
// --grep to mocha; MOCHA_LOG=1 shows mocha's own output as it comes.
import { fork, spawnSync } from 'node:child_process'
import { readFileSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

import { RedisServer, waitUntil } from '../redis.mjs'
import { CONTROL_EITHER, EITHER, EXPECTED_FAILURES } from './expected.mjs'

const here = path.dirname(fileURLToPath(import.meta.url))
const pkgDir = path.resolve(here, '..', '..')
const require = createRequire(import.meta.url)

const UNDER_TEST = {
  'redis-semaphore 5.8.0 (control)': 'redis-semaphore',
  'fencelock/compat/redis-semaphore': 'fencelock/compat/redis-semaphore',
}

function compile() {
  rmSync(path.join(here, '.build'), { recursive: true, force: true })
  const tsc = require.resolve('typescript/bin/tsc')
  const r = spawnSync(process.execPath, [tsc, '-p', path.join(here, 'tsconfig.json')], { cwd: pkgDir, encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`tsc failed on redis-semaphore's tests:\n${r.stdout}${r.stderr}`)
}

/** Answers test/shell.ts: `down` kills server `num` (1-based) by PID, `up` starts it again. */
async function serve(servers, message) {
  const server = servers[message.num - 1]
  if (server === undefined) throw new Error(`no server ${message.num}`)
  if (message.action === 'down') return server.kill()
  await server.restart()
  // Up once the tests' client of this server is connected again (redis-semaphore's shell.ts
  // waits for the server with a tool of its own, long enough for ioredis, which retries every
  // 100 ms, to be back; its tests then use the client at once).
  const name = `name=client${message.num} `
  const admin = server.client()
  await waitUntil(async () => (await admin.client('LIST')).includes(name), `client${message.num} to reconnect`, 10_000)
}

// How many mocha reports this run has asked for: each its own file.
let reports = 0

/**
 * Runs mocha against `module`: every test, or with `only` (`{ file, fullTitle }`) that one
 * test alone; `dryRun` lists the tests. Resolves with mocha's JSON report.
 */
function mocha(module, servers, { only = null, dryRun = false } = {}) {
  const build = path.join(here, '.build', 'test')
  const report = path.join(os.tmpdir(), `redis-semaphore-suite-${process.pid}-${++reports}.json`)
  const env = { ...process.env, UNDER_TEST: module }
  servers.forEach((s, i) => (env[`REDIS_URI${i + 1}`] = s.url))
  const args = [
    '--require', path.join(build, 'setup.js'),
    '--timeout', '5000',
    // As a CI run of the library: exit when the tests are done, whatever a test left open.
    '--exit',
    '--reporter', 'json', '--reporter-option', `output=${report}`,
    ...(dryRun ? ['--dry-run'] : []),
    ...(only ? ['--grep', `^${escapeRegExp(only.fullTitle)}$`] : process.env.GREP ? ['--grep', process.env.GREP] : []),
    path.join(build, 'init.test.js'),
    only ? only.file : path.join(build, 'src', '*.test.js'),
  ]
  const child = fork(require.resolve('mocha/bin/mocha.js'), args, { cwd: pkgDir, env, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] })
  let log = ''
  // MOCHA_LOG=1: mocha's own output as it comes (for a look at one run).
  const echo = (d) => (process.env.MOCHA_LOG ? process.stdout.write(d) : (log += d))
  child.stdout.on('data', echo)
  child.stderr.on('data', echo)
  // A reply to a run that has ended (mocha exits as a test fails) is dropped.
  const reply = (message) => child.connected && child.send(message)
  child.on('message', (m) => {
    serve(servers, m).then(
      () => reply({ id: m.id }),
      (e) => reply({ id: m.id, error: String(e) }),
    )
  })
  return new Promise((resolve, reject) => {
    child.on('exit', () => {
      try {
        resolve(JSON.parse(readFileSync(report, 'utf8')))
        rmSync(report, { force: true })
      } catch (e) {
        reject(new Error(`mocha left no report (${e.message}):\n${log}`))
      }
    })
  })
}

function escapeRegExp(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

/**
 * The drop-in's outcomes, each test in a mocha run of its own: a test of the library's that
 * leaves a hold behind (its `_refresh` replaced by a stub that never extends) would otherwise
 * see the drop-in report that hold lost during a later test, which the suite counts against
 * whichever test runs then. A run's hooks belong to its one test: a hook that fails there (a
 * hold the test left behind, reported lost while its `afterEach` restarts the servers) fails
 * that test.
 */
async function isolated(module, servers) {
  const all = await mocha(module, servers, { dryRun: true })
  const out = new Map()
  for (const test of all.passes) {
    // Every run starts with the three servers up, whatever the last one's hooks left down.
    await Promise.all(servers.map((s) => s.restart()))
    const one = outcomes(await mocha(module, servers, { only: test }))
    const failed = [...one.values()].find((o) => o.startsWith('failed'))
    out.set(test.fullTitle, failed ?? one.get(test.fullTitle) ?? 'failed: did not run')
  }
  return out
}

/** Every test's outcome by its full title: 'passed', 'failed' or 'pending'. */
function outcomes(report) {
  const out = new Map()
  for (const t of report.passes) out.set(t.fullTitle, 'passed')
  for (const t of report.pending) out.set(t.fullTitle, 'pending')
  for (const t of report.failures) out.set(t.fullTitle, `failed: ${String(t.err?.message ?? '').split('\n')[0]}`)
  return out
}

compile()
// The control and the drop-in run at once, each on three servers of its own: both mostly wait
// (on the suite's timeouts and, for the drop-in, on a mocha process per test), and one after
// the other they took nearly three minutes.
const runs = await Promise.all(
  Object.entries(UNDER_TEST)
    .filter(([, module]) => !process.env.ONLY || module.includes(process.env.ONLY))
    .map(async ([what, module]) => {
      const servers = await Promise.all([1, 2, 3].map(() => RedisServer.start()))
      try {
        const control = module === 'redis-semaphore'
        return { what, control, results: control ? outcomes(await mocha(module, servers)) : await isolated(module, servers) }
      } finally {
        await Promise.all(servers.map((s) => s.stop()))
      }
    }),
)
let problems = []
for (const { what, control, results } of runs) {
  const expected = control ? new Map() : EXPECTED_FAILURES
  const either = control ? CONTROL_EITHER : EITHER
  let passed = 0
  let failedAsExpected = 0
  let raced = 0
  for (const [title, outcome] of results) {
    if (either.has(title) && (outcome === 'passed' || either.get(title)[1].test(outcome))) {
      raced++
    } else if (outcome === 'passed') {
      passed++
      if (expected.has(title)) problems.push(`${what}: "${title}" passed, but expected.mjs lists it as failing`)
    } else if (outcome.startsWith('failed') && expected.has(title)) {
      failedAsExpected++
    } else {
      problems.push(`${what}: "${title}" ${outcome}`)
    }
  }
  for (const title of expected.keys()) {
    if (!results.has(title)) problems.push(`${what}: "${title}" is in expected.mjs but did not run`)
  }
  const others = results.size - passed - failedAsExpected - raced
  console.log(`redis-semaphore's own tests against ${what}: ${results.size} run, ${passed} passed, ${failedAsExpected} failed as expected, ${raced} either way (expected.mjs says why), ${others} otherwise`)
}
if (problems.length > 0) {
  console.error(problems.join('\n'))
  process.exit(1)
}
