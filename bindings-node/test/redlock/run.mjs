// node-redlock's own tests (src/single.test.ts and src/multi.test.ts at tag v5.0.0-beta.2,
// vendored here under node-redlock's MIT licence with only the import line changed) run
// against fencelock/compat/redlock:
//
// 1. tsc compiles them (typing them against the drop-in's .d.ts) into .build/;
// 2. for each file, the servers its docker-compose host names stand for are started on free
//    loopback ports (single: one redis-server and a 3+3 node Cluster; multi: three
//    redis-servers and three 3-node Clusters), once per file, and stopped by PID after it;
// 3. AVA runs the file with hosts.cjs mapping those names to the servers;
// 4. the results are checked against expected.mjs: every test passes except the expected
//    failures, each of which must fail (an expected failure that passes is an error too, so
//    the list stays true).
//
// Usage: node test/redlock/run.mjs [single|multi ...]
import { spawn, spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

import { RedisServer, freePort, startCluster } from '../redis.mjs'
import { EXPECTED_FAILURES, TESTS } from './expected.mjs'

const here = path.dirname(fileURLToPath(import.meta.url))
const pkgDir = path.resolve(here, '..', '..')
const require = createRequire(import.meta.url)
const { LockManager } = require('../../index.js')

// node-redlock's tests were typed against ioredis 4 (@types/ioredis), whose `cluster()` took
// any subcommand; ioredis 5's types spell out each one in upper case, so
// `redis.cluster("info")` in waitForCluster() is a type error there (and works at run time).
// That one diagnostic is tolerated; any other fails the run.
const TOLERATED = [/^test\/redlock\/(single|multi)\.test\.ts\(37,29\): error TS2769: /]

function compile() {
  const tsc = require.resolve('typescript/bin/tsc')
  const r = spawnSync(process.execPath, [tsc, '-p', path.join(here, 'tsconfig.json')], { cwd: pkgDir, encoding: 'utf8' })
  const errors = `${r.stdout}${r.stderr}`.split('\n').filter((l) => / error TS\d+: /.test(l))
  const unexpected = errors.filter((l) => !TOLERATED.some((re) => re.test(l)))
  if (unexpected.length > 0 || (r.status !== 0 && errors.length === 0)) {
    process.stdout.write(r.stdout + r.stderr)
    throw new Error(`tsc failed on node-redlock's tests:\n${unexpected.join('\n')}`)
  }
}

/** The servers each file's host names stand for: `{ hosts: { name: port }, stop() }`. */
const SETUPS = {
  async single() {
    const [instance, cluster] = await Promise.all([RedisServer.start(), startCluster({ replicas: 1 })])
    return {
      hosts: { 'redis-single-instance': instance.port, 'redis-single-cluster-1': cluster.nodes[0].port },
      url: instance.url,
      stop: () => Promise.all([instance.stop(), cluster.stop()]),
    }
  },
  async multi() {
    const [instances, clusters] = await Promise.all([
      Promise.all([0, 1, 2].map(() => RedisServer.start())),
      Promise.all([0, 1, 2].map(() => startCluster({ replicas: 0 }))),
    ])
    const hosts = {}
    ;['a', 'b', 'c'].forEach((x, i) => {
      hosts[`redis-multi-instance-${x}`] = instances[i].port
      hosts[`redis-multi-cluster-${x}-1`] = clusters[i].nodes[0].port
    })
    return {
      hosts,
      url: instances[0].url,
      stop: () => Promise.all([...instances, ...clusters].map((s) => s.stop())),
    }
  },
}

/** Runs AVA on one compiled file; resolves to `{ results: Map(title -> passed), extras: [title], tap }`. */
function ava(file, env) {
  const cli = path.join(path.dirname(require.resolve('ava')), 'cli.mjs')
  const args = [cli, '--config', path.join(here, 'ava.config.mjs'), '--tap', `test/redlock/.build/${file}.test.js`]
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: pkgDir, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    let tap = ''
    child.stdout.on('data', (d) => (tap += d))
    child.stderr.on('data', (d) => (tap += d))
    child.on('error', reject)
    child.on('close', () => {
      const results = new Map()
      const extras = []
      for (const line of tap.split('\n')) {
        const m = /^(not )?ok \d+ - (.*?)(?: # (?:SKIP|TODO).*)?$/.exec(line)
        if (!m) continue
        const title = m[2].replace(/^.*? › /, '')
        if (/^(instance|cluster) - /.test(title)) results.set(title, !m[1])
        else extras.push(title)
      }
      resolve({ results, extras, tap })
    })
  })
}

async function main() {
  const files = process.argv.slice(2).length ? process.argv.slice(2) : Object.keys(TESTS)
  const started = Date.now()
  compile()
  const problems = []
  const counts = { passed: 0, expected: 0 }
  for (const file of files) {
    const setup = await SETUPS[file]()
    let run
    try {
      run = await ava(file, {
        FENCELOCK_REDLOCK_HOSTS: JSON.stringify(setup.hosts),
        FENCELOCK_REDLOCK_CLOSED_PORT: String(await freePort()),
      })
    } finally {
      await setup.stop()
    }
    const expected = new Map(EXPECTED_FAILURES.filter((e) => e.file === file).map((e) => [e.test, e]))
    if (run.results.size !== TESTS[file]) {
      problems.push(`${file}: ${run.results.size} results, expected ${TESTS[file]} tests`)
    }
    for (const [title, passed] of run.results) {
      const exp = expected.get(title)
      if (passed && !exp) {
        counts.passed++
        console.log(`ok       ${file} › ${title}`)
      } else if (!passed && exp) {
        counts.expected++
        console.log(`xfail    ${file} › ${title}  (deliberate difference)`)
      } else if (passed) {
        problems.push(`${file} › ${title}: expected to fail (${exp.reason}), but passed: remove it from expected.mjs and docs/migrating.md`)
      } else {
        problems.push(`${file} › ${title}: failed`)
      }
    }
    for (const extra of run.extras) problems.push(`${file}: AVA reported ${extra}`)
    if (problems.length > 0 || process.env.FENCELOCK_REDLOCK_TAP) console.log(`--- AVA's output for ${file}:\n${run.tap}`)
  }
  const total = counts.passed + counts.expected + problems.length
  console.log(`node-redlock tests: ${counts.passed} passed, ${counts.expected} expected failures, ${problems.length} unexpected (${total} run in ${((Date.now() - started) / 1000).toFixed(1)} s)`)
  if (problems.length > 0) {
    for (const p of problems) console.log(`UNEXPECTED: ${p}`)
    process.exitCode = 1
  }
}

await main()
